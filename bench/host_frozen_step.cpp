// nn::Frozen on the host: the training step of an MLP and a CNN trained
// whole, with a frozen prefix (its backward never runs), and with a frozen
// block after a trainable layer -- once as tenet runs it (the input
// gradient alone: its layers skip the weight-gradient GEMMs) and once with
// the weight gradients computed into a scratch and thrown away (what a
// Frozen layer that does not declare skips_null_gradients costs: tenet's
// path before issue 42's second part). Median milliseconds per step
// (forward, backward, AdamW) of fp32 models from the same seed and batch,
// and each against the whole model's, measured side by side in one run.
//
//   bench_host_frozen_step [--steps N]      (default 20)
#include "support/host_machine.hpp"

#include <tenet/tenet.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace tenet;
namespace nn = tenet::nn;
namespace train = tenet::train;

// L, but its backward is handed (and fills) gradient views inside Frozen.
template <class L>
struct GradientsComputed : L {
    template <precision_policy P, class In, class Place>
    struct layer : L::template layer<P, In, Place> {
        using L::template layer<P, In, Place>::layer;
        static constexpr bool skips_null_gradients = false;
    };
};

// The MLP: a trainable input layer, a wide block, a trainable head.
using mlp_block = nn::Sequential<nn::Linear<512, 1024>, nn::ReLU, nn::Linear<1024, 1024>, nn::ReLU, nn::Linear<1024, 512>>;
template <class Block>
using mlp_after = nn::Sequential<nn::Linear<784, 512>, nn::ReLU, Block, nn::ReLU, nn::Linear<512, 10>>;
using mlp_in = Shape<256, 784>;

// The CNN: a trainable stem, a convolutional block, a trainable head.
using cnn_block = nn::Sequential<nn::Conv2d<16, 32, 3, 1, 1>, nn::ReLU, nn::BatchNorm2d<32>, nn::Conv2d<32, 32, 3, 1, 1>,
                                 nn::ReLU, nn::BatchNorm2d<32>>;
template <class Block>
using cnn_after = nn::Sequential<nn::Conv2d<1, 16, 3, 1, 1>, nn::ReLU, Block, nn::MaxPool2d<2>, nn::Flatten,
                                 nn::Linear<32 * 14 * 14, 10>>;
using cnn_in = Shape<32, 28, 28, 1>;

// A frozen prefix: the block first (the stem's input widened to the block's).
using mlp_frozen_prefix = nn::Sequential<nn::Frozen<nn::Sequential<nn::Linear<784, 512>, nn::ReLU, mlp_block>>, nn::ReLU,
                                         nn::Linear<512, 10>>;

template <class Spec, class In>
double step_ms(int steps)
{
    using M = nn::model<Spec, fp32, In, Host>;
    M m(1);
    train::optimizer opt(m, train::adamw{}, train::constant_lr{1e-4f});
    Tensor<f32, In, Host> x;
    Tensor<f32, typename M::output_shape, Host> dy;
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (std::size_t i = 0; i < x.numel; ++i) x.data()[i] = normal(rng);
    for (std::size_t i = 0; i < dy.numel; ++i) dy.data()[i] = 1e-3f * normal(rng);
    std::vector<double> ms;
    for (int s = 0; s < steps + 2; ++s) {  // (the first two warm up the plans and the thread tuner)
        const auto start = std::chrono::steady_clock::now();
        m.forward(x);
        m.backward(dy);
        opt.step();
        const auto end = std::chrono::steady_clock::now();
        if (s >= 2) ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

void row(const char* model, const char* what, double ms, double whole)
{
    std::printf("  %-4s %-44s %8.2f ms  %5.2fx\n", model, what, ms, whole / ms);
}

}  // namespace

int main(int argc, char** argv)
{
    int steps = 20;
    for (int i = 1; i + 1 < argc; ++i)
        if (std::string(argv[i]) == "--steps") steps = std::max(1, std::stoi(argv[i + 1]));
    std::printf("bench_host_frozen_step: %s, %s; fp32, median of %d steps (forward, backward, AdamW)\n",
                bench::cpu_model().c_str(), bench::vector_isa(), steps);
    std::printf("  model what                                         step      speed-up over whole\n");
    const double mlp_whole = step_ms<mlp_after<mlp_block>, mlp_in>(steps);
    row("mlp", "whole", mlp_whole, mlp_whole);
    row("mlp", "frozen block after a trainable layer", step_ms<mlp_after<nn::Frozen<mlp_block>>, mlp_in>(steps), mlp_whole);
    row("mlp", "  the same, weight gradients computed", step_ms<mlp_after<nn::Frozen<GradientsComputed<mlp_block>>>, mlp_in>(steps),
        mlp_whole);
    row("mlp", "frozen prefix (input layer and block)", step_ms<mlp_frozen_prefix, mlp_in>(steps), mlp_whole);
    const double cnn_whole = step_ms<cnn_after<cnn_block>, cnn_in>(steps);
    row("cnn", "whole", cnn_whole, cnn_whole);
    row("cnn", "frozen block after a trainable layer", step_ms<cnn_after<nn::Frozen<cnn_block>>, cnn_in>(steps), cnn_whole);
    row("cnn", "  the same, weight gradients computed",
        step_ms<cnn_after<nn::Frozen<GradientsComputed<cnn_block>>>, cnn_in>(steps), cnn_whole);
}
