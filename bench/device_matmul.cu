// Device matmul epilogues: a Linear layer's y = act(x W^T + b) in bf16, as
//   fused      one cublasLtMatmul with the bias+activation epilogue
//   two        the GEMM into y, then one tenet kernel for act(y + b)
//   three      the GEMM, a bias kernel, an activation kernel
// for relu and gelu_tanh, per shape [M, In] x [Out, In]^T. Timed with CUDA
// events on tenet's current stream: a warm-up, then the median of 20 timed
// batches of 10 calls. Prints time per call, TFLOP/s of the fused call
// (2 M In Out), and how much faster fused is, and each row again as a JSON
// line; --quick measures 4096^3 alone. Without a GPU it prints "skipped: no
// CUDA device" and exits 0.
#include <tenet/tenet.hpp>

#include "support/device_timing.hpp"
#include "support/json_line.hpp"
#include "support/quick_run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace {

constexpr std::size_t calls_per_batch = 10;

// Largest |x - y| of two device tensors, relative to max |y|.
template <class T, class S>
double relative_difference(const tenet::Tensor<T, S, tenet::Device>& x, const tenet::Tensor<T, S, tenet::Device>& y)
{
    tenet::Tensor<T, S, tenet::Host> hx, hy;
    tenet::copy(hx, x);
    tenet::copy(hy, y);
    tenet::current_stream().synchronize();
    double worst = 0, scale = 0;
    for (std::size_t i = 0; i < S::numel; ++i) {
        const double a = tenet::convert<double>(hx.data()[i]), b = tenet::convert<double>(hy.data()[i]);
        worst = std::fmax(worst, std::fabs(a - b));
        scale = std::fmax(scale, std::fabs(b));
    }
    return scale > 0 ? worst / scale : worst;
}

template <tenet::linalg::activation Act, class E>
auto apply_activation(E&& e)
{
    if constexpr (Act == tenet::linalg::activation::relu) return tenet::relu(std::forward<E>(e));
    else return tenet::gelu_tanh(std::forward<E>(e));
}

template <tenet::linalg::activation Act, std::size_t M, std::size_t In, std::size_t Out>
void measure(const char* name)
{
    using tenet::bf16;
    using tenet::Shape;
    tenet::Tensor<bf16, Shape<M, In>> x = tenet::random_uniform<Shape<M, In>>(1) - 0.5f;
    tenet::Tensor<bf16, Shape<Out, In>> w = (tenet::random_uniform<Shape<Out, In>>(2) - 0.5f) * 0.1f;
    tenet::Tensor<bf16, Shape<Out>> b = tenet::random_uniform<Shape<Out>>(3) - 0.5f;
    tenet::Tensor<bf16, Shape<M, Out>> fused_y, two_y, three_y, t;

    const auto fused = [&] { fused_y = apply_activation<Act>(tenet::matmul(x, tenet::transpose(w)) + b); };
    const auto two = [&] {
        two_y = tenet::matmul(x, tenet::transpose(w));
        two_y = apply_activation<Act>(two_y + b);
    };
    const auto three = [&] {
        three_y = tenet::matmul(x, tenet::transpose(w));
        t = three_y + b;
        three_y = apply_activation<Act>(t);
    };
    const double s_fused = bench::median_seconds(fused, calls_per_batch),
                 s_two = bench::median_seconds(two, calls_per_batch),
                 s_three = bench::median_seconds(three, calls_per_batch);
    const double flops = 2.0 * M * In * Out;
    std::printf("%-10s %6zu %6zu %6zu %10.1f %10.1f %10.1f %9.1f %8.2fx %8.2fx %10.2g\n", name, M, In, Out, s_fused * 1e6,
                s_two * 1e6, s_three * 1e6, flops / s_fused / 1e12, s_two / s_fused, s_three / s_fused,
                relative_difference(fused_y, two_y));
    bench::json_line("device_matmul")
        .field("act", name)
        .field("M", M)
        .field("In", In)
        .field("Out", Out)
        .field("fused_us", s_fused * 1e6)
        .field("two_step_us", s_two * 1e6)
        .field("three_step_us", s_three * 1e6)
        .field("fused_tflops", flops / s_fused / 1e12)
        .print();
}

template <tenet::linalg::activation Act>
void measure_shapes(const char* name, bool quick)
{
    if (!quick) measure<Act, 256, 784, 256>(name);
    if (!quick) measure<Act, 1024, 1024, 1024>(name);
    measure<Act, 4096, 4096, 4096>(name);
    if (!quick) measure<Act, 8192, 1024, 4096>(name);
}

}  // namespace

int main(int argc, char** argv)
{
    if (!tenet::has_device()) {
        std::puts("skipped: no CUDA device");
        return 0;
    }
    std::printf("== device matmul epilogues, bf16, y = act(x W^T + b); %s\n", bench::device_description().c_str());
    std::printf("%-10s %6s %6s %6s %10s %10s %10s %9s %9s %9s %10s\n", "act", "M", "In", "Out", "fused us", "2-step us",
                "3-step us", "TFLOP/s", "vs 2-step", "vs 3-step", "rel diff");
    const bool quick = bench::quick_run(argc, argv);
    measure_shapes<tenet::linalg::activation::relu>("relu", quick);
    measure_shapes<tenet::linalg::activation::gelu_tanh>("gelu_tanh", quick);
    // non-zero: some "fused" rows were a plain GEMM plus tenet's pass
    std::printf("GEMM types cuBLASLt declined: %d\n", tenet::linalg::detail::lt_declined_plans().load());
}
