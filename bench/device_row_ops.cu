// Device row-wise ops: softmax, layernorm forward (saving mean and rstd) and
// cross-entropy forward (saving probabilities, 5% padding rows), f32 and
// bf16, rows 4096 .. 65536 x row lengths 128 .. 4096.
//
// GB/s counts the bytes each op must move -- its [rows, N] input read once
// and its [rows, N] output written once, plus the per-row values (mean and
// rstd; labels and mask) -- and is compared with a device-to-device
// cudaMemcpy of the [rows, N] tensor (read + write: the roofline). Timed with
// CUDA events on tenet's current stream: a warm-up, then the median of 20
// timed batches (small sizes launch many times per batch, so launch overhead
// counts as in a real program). bench/peers/row_ops_torch.py measures the
// same ops, sizes and bytes in PyTorch eager and prints the same lines.
// Before timing, each op at the smallest size is checked against tenet's
// host implementation. Each row again as a JSON line; --quick measures
// 65536 x 1024 alone. Without a GPU it prints "skipped: no CUDA device".
#include <tenet/tenet.hpp>

#include "support/device_timing.hpp"
#include "support/json_line.hpp"
#include "support/quick_run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace {

using namespace tenet;

// A timed batch moves at least this many bytes (many launches when small).
constexpr double batch_bytes = 1 << 28;

struct row {
    const char* op;
    const char* type;
    std::size_t rows, n;
    double gbs, copy;
};

void print(const row& r)
{
    std::printf("%-13s %-4s %6zu x %-5zu tenet %8.1f GB/s   copy %8.1f GB/s   %5.1f%% of copy\n", r.op, r.type, r.rows,
                r.n, r.gbs, r.copy, 100 * r.gbs / r.copy);
    bench::json_line("device_row_ops")
        .field("op", r.op)
        .field("type", r.type)
        .field("rows", r.rows)
        .field("n", r.n)
        .field("gbs", r.gbs)
        .field("copy_gbs", r.copy)
        .print();
}

// The inputs of one size: x ~ N(0, 1) (logits, layernorm input), gamma
// ~ N(1, 0.1), beta ~ N(0, 1), labels uniform in [0, N), 95% valid rows.
template <class T, std::size_t Rows, std::size_t N, class P>
struct inputs {
    using S = Shape<Rows, N>;
    using R = Shape<Rows>;
    using C = Shape<N>;
    Tensor<T, S, P> x;
    Tensor<T, C, P> gamma, beta;
    Tensor<i32, R, P> labels;
    Tensor<bool, R, P> valid;

    inputs()
    {
        x = random_normal<S>(1);
        gamma = random_normal<C>(2, 0, 1.0f, 0.1f);
        beta = random_normal<C>(3);
        labels = min(cast<i32>(random_uniform<R>(4) * static_cast<float>(N)), static_cast<int>(N) - 1);
        valid = random_uniform<R>(5) < 0.95f;
    }
};

template <class T, class S>
double max_difference(const Tensor<T, S, Device>& device, const Tensor<T, S, Host>& host)
{
    Tensor<T, S, Host> d;
    copy(d, device);
    current_stream().synchronize();
    double worst = 0;
    for (std::size_t i = 0; i < S::numel; ++i) {
        const double diff = std::fabs(convert<f64>(d.data()[i]) - convert<f64>(host.data()[i]));
        if (!(diff <= worst)) worst = diff;  // NaN shows
    }
    return worst;
}

// Each op on the device against the same op on the host (the host's are
// tested against float64 in tests/host/row_ops.cpp).
template <class T, std::size_t Rows, std::size_t N>
void verify()
{
    using S = Shape<Rows, N>;
    const inputs<T, Rows, N, Device> d;
    const inputs<T, Rows, N, Host> h;  // the same values: random numbers depend on (seed, index) only
    Tensor<T, S, Device> y;
    Tensor<T, S, Host> y_host;
    Tensor<f32, Shape<Rows>, Device> mean, rstd;
    Tensor<f32, Shape<Rows>, Host> mean_host, rstd_host;
    Tensor<f32, Shape<>, Device> loss;
    Tensor<f32, Shape<>, Host> loss_host, loss_device;
    y = softmax(d.x);
    y_host = softmax(h.x);
    std::printf("verify %-4s %zu x %zu: max |device - host|: softmax %.3g", numeric_traits<T>::name, Rows, N,
                max_difference(y, y_host));
    layernorm_forward(y, mean, rstd, d.x, d.gamma, d.beta);
    layernorm_forward(y_host, mean_host, rstd_host, h.x, h.gamma, h.beta);
    std::printf(", layernorm %.3g", max_difference(y, y_host));
    cross_entropy_forward(loss, y, d.x, d.labels, d.valid);
    cross_entropy_forward(loss_host, y_host, h.x, h.labels, h.valid);
    copy(loss_device, loss);
    current_stream().synchronize();
    std::printf(", cross-entropy probs %.3g, loss %.3g\n", max_difference(y, y_host),
                std::fabs(double{loss_device.data()[0]} - loss_host.data()[0]));
}

template <class T, std::size_t Rows, std::size_t N>
void measure(std::vector<row>& rows)
{
    using S = Shape<Rows, N>;
    const inputs<T, Rows, N, Device> in;
    Tensor<T, S, Device> y;
    Tensor<f32, Shape<Rows>, Device> mean, rstd;
    Tensor<f32, Shape<>, Device> loss;
    const double tensor_bytes = static_cast<double>(S::numel * sizeof(T));
    const auto batch = static_cast<std::size_t>(std::max(1.0, batch_bytes / (2 * tensor_bytes)));
    const auto gbs = [&](double bytes, auto&& launch) { return bytes / bench::median_seconds(launch, batch) / 1e9; };
    const double copy_gbs = gbs(2 * tensor_bytes, [&] {
        TENET_CUDA_CHECK(cudaMemcpyAsync(y.data(), in.x.data(), S::numel * sizeof(T), cudaMemcpyDeviceToDevice,
                                         current_stream().get()));
    });
    const char* type = numeric_traits<T>::name;
    rows.push_back({"softmax", type, Rows, N, gbs(2 * tensor_bytes, [&] { y = softmax(in.x); }), copy_gbs});
    print(rows.back());
    const double layernorm = gbs(2 * tensor_bytes + 8.0 * Rows, [&] {
        layernorm_forward(y, mean, rstd, in.x, in.gamma, in.beta);
    });
    rows.push_back({"layernorm", type, Rows, N, layernorm, copy_gbs});
    print(rows.back());
    const double cross_entropy = gbs(2 * tensor_bytes + 5.0 * Rows, [&] {
        cross_entropy_forward(loss, y, in.x, in.labels, in.valid);
    });
    rows.push_back({"cross_entropy", type, Rows, N, cross_entropy, copy_gbs});
    print(rows.back());
}

template <class T>
void measure_sizes(std::vector<row>& rows, bool quick)
{
    if (!quick) measure<T, 4096, 128>(rows);
    if (!quick) measure<T, 65536, 128>(rows);
    if (!quick) measure<T, 4096, 1024>(rows);
    measure<T, 65536, 1024>(rows);
    if (!quick) measure<T, 4096, 4096>(rows);
    if (!quick) measure<T, 16384, 4096>(rows);
}

}  // namespace

int main(int argc, char** argv)
{
    if (!has_device()) {
        std::puts("skipped: no CUDA device");
        return 0;
    }
    std::printf("== device row ops: softmax, layernorm forward, cross-entropy forward; %s\n", bench::device_description().c_str());
    verify<f32, 4096, 128>();
    verify<bf16, 4096, 128>();
    std::vector<row> rows;
    const bool quick = bench::quick_run(argc, argv);
    measure_sizes<f32>(rows, quick);
    measure_sizes<bf16>(rows, quick);
    std::printf("\n%-13s %-4s %14s %10s %10s %10s\n", "op", "type", "rows x N", "GB/s", "copy GB/s", "% of copy");
    for (const row& r : rows)
        std::printf("%-13s %-4s %6zu x %-5zu %10.1f %10.1f %9.1f%%\n", r.op, r.type, r.rows, r.n, r.gbs, r.copy,
                    100 * r.gbs / r.copy);
}
