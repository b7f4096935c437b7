// Multi-head self-attention on the device, forward + backward: tenet's
// nn::MultiHeadAttention (in-projection, q k^T and p v as strided-batched
// cuBLASLt GEMMs, one fused masked row softmax, out-projection) at GPT-2
// small's width (768, 12 heads of 64), batch 8, sequences of 256 and 1024,
// plain and causal, bf16_mixed and fp32. bench/peers/attention_torch_gpu.py
// runs the same layer in PyTorch with F.scaled_dot_product_attention (flash
// or memory-efficient kernels) between the same projections and prints the
// same lines.
//
// One timed call is a forward and a backward (weight gradients; the input
// needs none, as a first layer's). Timed with CUDA events: a warm-up, then
// the median of 20 timed batches of 5 calls. TFLOP/s counts the dense work:
// projections 8 B T D^2 and attention 4 B T^2 D forward, twice that
// backward -- the same count for causal rows, so a kernel that skips masked
// blocks shows as faster. Before timing, a small layer on the device is
// checked against the same layer on the host. Each row again as a JSON line;
// --quick measures bf16_mixed at T 1024 alone. Without a GPU it prints
// "skipped: no CUDA device".
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
namespace nn = tenet::nn;

constexpr std::size_t calls_per_batch = 5;

template <class P, std::size_t B, std::size_t T, std::size_t D, std::size_t H, bool Causal>
void measure(const char* policy)
{
    using S = Shape<B, T, D>;
    using storage = typename P::storage;
    nn::model<nn::MultiHeadAttention<D, H, Causal>, P, S, Device> layer(1);
    Tensor<storage, S, Device> x, dy;
    x = random_normal<S>(2);
    dy = random_normal<S>(3);
    const double seconds = bench::median_seconds(
        [&] {
            layer.forward(x);
            layer.backward(dy);
        },
        calls_per_batch);
    const double flops = 3.0 * (8.0 * B * T * D * D + 4.0 * B * T * T * D);
    std::printf("attention %-10s B %zu T %-5zu D %zu H %-3zu %-7s tenet %9.3f ms %8.1f TFLOP/s\n", policy, B, T, D, H,
                Causal ? "causal" : "full", seconds * 1e3, flops / seconds / 1e12);
    bench::json_line("device_attention")
        .field("policy", policy)
        .field("B", B)
        .field("T", T)
        .field("D", D)
        .field("H", H)
        .field("mask", Causal ? "causal" : "full")
        .field("ms", seconds * 1e3)
        .field("tflops", flops / seconds / 1e12)
        .print();
}

// The device layer against the host layer (same seed, same parameters; the
// host's is tested against float64 in tests/host/sequence_layers.cpp).
template <class P, bool Causal>
void verify(const char* policy)
{
    using S = Shape<2, 64, 128>;
    using storage = typename P::storage;
    using spec = nn::MultiHeadAttention<128, 4, Causal>;
    nn::model<spec, P, S, Device> device(4);
    nn::model<spec, P, S, Host> host(4);
    Tensor<storage, S, Device> x, dy;
    Tensor<storage, S, Host> xh, dyh, y;
    x = random_normal<S>(5);
    dy = random_normal<S>(6);
    xh = random_normal<S>(5);  // the same values: random numbers depend on (seed, index) only
    dyh = random_normal<S>(6);
    copy(y, device.forward(x));
    device.backward(dy);
    const auto& yh = host.forward(xh);
    host.backward(dyh);
    constexpr std::size_t n = decltype(host)::flat_numel;
    std::vector<typename decltype(host)::gradient_type> g(n);
    TENET_CUDA_CHECK(cudaMemcpy(g.data(), device.gradients(), n * sizeof(g[0]), cudaMemcpyDeviceToHost));
    current_stream().synchronize();
    const auto relative = [](auto got, auto want, std::size_t count) {
        double err = 0, norm = 0;
        for (std::size_t i = 0; i < count; ++i) {
            const double w = convert<f64>(want[i]);
            err += std::pow(convert<f64>(got[i]) - w, 2);
            norm += w * w;
        }
        return std::sqrt(err / norm);
    };
    const double output = relative(y.data(), yh.data(), S::numel), gradients = relative(g.data(), host.gradients(), n);
    std::printf("verify %-10s %-6s 2 x 64 x 128, 4 heads: |device - host| / |host|: output %.3g, gradients %.3g\n", policy,
                Causal ? "causal" : "full", output, gradients);
    bench::json_line("device_attention_verify")
        .field("policy", policy)
        .field("mask", Causal ? "causal" : "full")
        .field("output_relative_error", output)
        .field("gradients_relative_error", gradients)
        .print();
}

}  // namespace

int main(int argc, char** argv)
{
    if (!has_device()) {
        std::puts("skipped: no CUDA device");
        return 0;
    }
    std::printf("== device attention: nn::MultiHeadAttention forward + backward; %s\n", bench::device_description().c_str());
    verify<fp32, true>("fp32");
    verify<bf16_mixed, false>("bf16_mixed");
    const bool quick = bench::quick_run(argc, argv);
    if (!quick) measure<bf16_mixed, 8, 256, 768, 12, false>("bf16_mixed");
    if (!quick) measure<bf16_mixed, 8, 256, 768, 12, true>("bf16_mixed");
    measure<bf16_mixed, 8, 1024, 768, 12, false>("bf16_mixed");
    measure<bf16_mixed, 8, 1024, 768, 12, true>("bf16_mixed");
    if (!quick) measure<fp32, 8, 256, 768, 12, false>("fp32");
    if (!quick) measure<fp32, 8, 256, 768, 12, true>("fp32");
}
