// Device elementwise throughput: the 30-op chain of chain30.hpp over three
// inputs into one output, for f32 and bf16 at 2^16 ... 2^28 elements, as
//   fused     tenet: one assignment, one kernel
//   unfused   tenet: one assignment (one kernel) per op, into temporaries
//   cub       cub::DeviceTransform over the three inputs with the same chain
//             as its per-element functor (CCCL's tuned elementwise kernel)
//   copy      cudaMemcpy device to device of one array: the roofline
// timed with CUDA events on tenet's current stream: a warm-up, then the
// median of 20 timed batches (small sizes launch many times per batch, so
// launch overhead counts as it does in a real program). GB/s counts the
// chain's 3 inputs read and 1 output written, and the copy's 2 arrays. Each
// row again as a JSON line; --quick measures 2^20 (checked against cub) and
// 2^26 alone. Without a GPU it prints "skipped: no CUDA device" and exits 0.
#include "chain30.hpp"
#include "support/device_timing.hpp"
#include "support/json_line.hpp"
#include "support/quick_run.hpp"

#include <cub/device/device_transform.cuh>
#include <cuda/std/tuple>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

namespace {

// A timed batch covers at least this many elements (many launches when small).
constexpr std::size_t batch_elements = std::size_t{1} << 24;
// Where fused is checked against cub (each element type).
constexpr int verified_log2 = 20;
// What --quick measures: the checked size, and one far beyond the caches.
constexpr bool quick_size(int log2) { return log2 == verified_log2 || log2 == 26; }

template <class T>
struct chain30_functor {
    __device__ T operator()(T a, T b, T c) const
    {
        const auto f32 = [](T x) { return tenet::convert<float>(x); };
        return tenet::convert<T>(bench::chain30_reference(f32(a), f32(b), f32(c)));
    }
};

// Largest |x - y| over two device tensors; NaN if either has a NaN (outputs
// are poisoned with NaN first, so an element left unwritten shows).
template <class T, class S>
double max_difference(const tenet::Tensor<T, S, tenet::Device>& x, const tenet::Tensor<T, S, tenet::Device>& y)
{
    tenet::Tensor<T, S, tenet::Host> hx, hy;
    tenet::copy(hx, x);
    tenet::copy(hy, y);
    tenet::current_stream().synchronize();
    double worst = 0;
    for (std::size_t i = 0; i < S::numel; ++i) {
        const double d = std::fabs(double{tenet::convert<float>(hx(i))} - tenet::convert<float>(hy(i)));
        if (!(d <= worst)) worst = d;
    }
    return worst;
}

struct row {
    const char* type;
    int log2;
    double fused, unfused, cub, copy;  // GB/s; 0 when it did not fit in memory
};

template <class T, int Log2>
row measure()
{
    constexpr std::size_t n = std::size_t{1} << Log2;
    using shape = tenet::Shape<n>;
    using tensor = tenet::Tensor<T, shape, tenet::Device>;
    const cudaStream_t stream = tenet::current_stream().get();
    const std::size_t batch = std::max<std::size_t>(1, batch_elements / n);

    tensor a, b, c, out, cub_out;
    a = tenet::random_uniform<shape>(1);
    b = tenet::random_uniform<shape>(2);
    c = tenet::random_uniform<shape>(3);
    bench::tenet_fused fused_ops;
    bench::tenet_unfused<T, shape, tenet::Device> unfused;
    const auto fused = [&] { out = bench::chain30(a, b, c, fused_ops); };
    const auto cub = [&] {
        TENET_CUDA_CHECK(cub::DeviceTransform::Transform(cuda::std::make_tuple(a.data(), b.data(), c.data()),
                                                         cub_out.data(), n, chain30_functor<T>{}, stream));
    };
    const auto copy = [&] {
        TENET_CUDA_CHECK(cudaMemcpyAsync(out.data(), a.data(), tensor::bytes, cudaMemcpyDeviceToDevice, stream));
    };

    if constexpr (Log2 == verified_log2) {
        TENET_CUDA_CHECK(cudaMemsetAsync(out.data(), 0xFF, tensor::bytes, stream));  // NaN in f32 and bf16
        TENET_CUDA_CHECK(cudaMemsetAsync(cub_out.data(), 0xFF, tensor::bytes, stream));
        fused();
        cub();
        std::printf("verify %s 2^%d: max |tenet fused - cub::DeviceTransform| = %.3g (outputs poisoned with NaN first)\n",
                    tenet::numeric_traits<T>::name, Log2, max_difference(out, cub_out));
    }

    const double chain_bytes = 4.0 * tensor::bytes, copy_bytes = 2.0 * tensor::bytes;
    row r{tenet::numeric_traits<T>::name, Log2, 0, 0, 0, 0};
    r.fused = chain_bytes / bench::median_seconds(fused, batch) / 1e9;
    r.unfused = chain_bytes / bench::median_seconds([&] { unfused.run(a, b, c); }, batch) / 1e9;
    r.cub = chain_bytes / bench::median_seconds(cub, batch) / 1e9;
    r.copy = copy_bytes / bench::median_seconds(copy, batch) / 1e9;
    std::printf("  %-4s 2^%d: fused %8.1f  unfused %8.1f  cub %8.1f  copy %8.1f GB/s\n", r.type, Log2, r.fused,
                r.unfused, r.cub, r.copy);
    bench::json_line("device_elementwise")
        .field("type", r.type)
        .field("log2", Log2)
        .field("fused_gbs", r.fused)
        .field("unfused_gbs", r.unfused)
        .field("cub_gbs", r.cub)
        .field("copy_gbs", r.copy)
        .print();
    return r;
}

// A size that does not fit (the unfused baseline keeps 30 temporaries) is
// reported as such; the others still run.
template <class T, int Log2>
row measure_if_it_fits()
{
    try {
        return measure<T, Log2>();
    } catch (const tenet::out_of_memory_error& e) {
        std::printf("  %-4s 2^%d: skipped (%s)\n", tenet::numeric_traits<T>::name, Log2, e.what());
        return {tenet::numeric_traits<T>::name, Log2, 0, 0, 0, 0};
    }
}

template <class T, int... Log2>
void measure_sizes(std::vector<row>& rows, bool quick, std::integer_sequence<int, Log2...>)
{
    ((!quick || quick_size(Log2) ? rows.push_back(measure_if_it_fits<T, Log2>()) : void()), ...);
}

void print_table(const std::vector<row>& rows)
{
    std::printf("\n%-5s %8s %9s %9s %9s %9s %14s %10s %10s\n", "type", "elements", "fused", "unfused", "cub", "D2D copy",
                "fused/unfused", "fused/cub", "% of copy");
    std::printf("%-5s %8s %9s %9s %9s %9s\n", "", "", "GB/s", "GB/s", "GB/s", "GB/s");
    for (const row& r : rows) {
        if (r.fused == 0) {
            std::printf("%-5s %6s%-2d %9s\n", r.type, "2^", r.log2, "out of memory");
            continue;
        }
        std::printf("%-5s %6s%-2d %9.1f %9.1f %9.1f %9.1f %13.2fx %9.2fx %9.0f%%\n", r.type, "2^", r.log2, r.fused,
                    r.unfused, r.cub, r.copy, r.fused / r.unfused, r.fused / r.cub, 100 * r.fused / r.copy);
    }
}

}  // namespace

int main(int argc, char** argv)
{
    if (!tenet::has_device()) {
        std::puts("skipped: no CUDA device");
        return 0;
    }
    std::printf("== device elementwise: 30-op chain (bench/chain30.hpp), 3 inputs + 1 output; %s\n", bench::device_description().c_str());

    using sizes = std::integer_sequence<int, 16, 18, 20, 22, 24, 26, 28>;
    std::vector<row> rows;
    const bool quick = bench::quick_run(argc, argv);
    measure_sizes<float>(rows, quick, sizes{});
    measure_sizes<tenet::bf16>(rows, quick, sizes{});
    print_table(rows);
}
