// Gradient checkpointing and activation offloading on the host: the char_lm
// example's model (4 causal encoder blocks of width 128, 4 heads, context
// 128, batch 32, vocabulary 128) trained for some steps plain, with each
// block Checkpointed and with each block Offloaded, from the same seed on
// the same random token batches. Prints the activation bytes each keeps
// (compile-time figures: device-side memory for a Device model, and the host
// memory offloading uses), seconds per step (median of the steps after the
// first), and whether each run's losses and final weights are bitwise those
// of the plain run (they must be: recomputing is the same arithmetic, and
// offloading restores the same bytes).
//
//   bench_host_checkpointing [--steps N]      (default 12)
#include <tenet/tenet.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace tenet;
namespace nn = tenet::nn;
namespace train = tenet::train;

constexpr std::size_t vocab = 128, context = 128, width = 128, batch = 32;
using block = nn::TransformerEncoderLayer<width, 4, 4 * width, true>;
using head = nn::Sequential<nn::LayerNorm<width>, nn::Linear<width, vocab>>;
using plain = nn::Sequential<nn::Embedding<vocab, width>, nn::PositionalEmbedding<context, width>, block, block, block,
                             block, head>;
using checkpointed =
    nn::Sequential<nn::Embedding<vocab, width>, nn::PositionalEmbedding<context, width>, nn::Checkpointed<block>,
                   nn::Checkpointed<block>, nn::Checkpointed<block>, nn::Checkpointed<block>, head>;
using offloaded =
    nn::Sequential<nn::Embedding<vocab, width>, nn::PositionalEmbedding<context, width>, nn::Offloaded<block>,
                   nn::Offloaded<block>, nn::Offloaded<block>, nn::Offloaded<block>, head>;
using tokens_shape = Shape<batch, context>;

struct run_result {
    std::vector<double> losses;
    double seconds_per_step;
    std::vector<f32> weights;
};

template <class Spec>
run_result run(std::size_t steps)
{
    using model_t = nn::model<Spec, fp32, tokens_shape, Host>;
    model_t model(7);
    train::trainer trainer(model, train::adamw{}, train::constant_lr{1e-3f});
    Tensor<i32, tokens_shape, Host> tokens, labels;
    Tensor<f32, tokens_shape, Host> valid;
    std::mt19937_64 rng(11);
    std::uniform_int_distribution<int> pick(0, vocab - 1);
    run_result out;
    std::vector<double> seconds;
    for (std::size_t step = 0; step < steps; ++step) {
        for (std::size_t i = 0; i < tokens_shape::numel; ++i) {
            tokens.data()[i] = pick(rng);
            valid.data()[i] = 1.0f;
        }
        for (std::size_t i = 0; i < tokens_shape::numel; ++i)
            labels.data()[i] = (i + 1) % context != 0 ? tokens.data()[i + 1] : 0;
        const auto start = std::chrono::steady_clock::now();
        trainer.step(tokens, labels, valid);
        out.losses.push_back(trainer.end_epoch().mean_loss);
        seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(seconds.begin() + 1, seconds.end());
    out.seconds_per_step = seconds[1 + (seconds.size() - 1) / 2];
    out.weights.assign(model.parameters(), model.parameters() + model_t::flat_numel);
    return out;
}

}  // namespace

int main(int argc, char** argv)
{
    std::size_t steps = 12;
    for (int i = 1; i + 1 < argc; ++i)
        if (std::string(argv[i]) == "--steps") steps = std::stoul(argv[i + 1]);
    steps = std::max<std::size_t>(steps, 2);
    constexpr double mib = 1 << 20;
    using plain_model = nn::model<plain, fp32, tokens_shape, Host>;
    using checkpointed_model = nn::model<checkpointed, fp32, tokens_shape, Host>;
    using offloaded_model = nn::model<offloaded, fp32, tokens_shape, Host>;
    std::printf("== host checkpointing: char_lm's model (4 blocks, width 128, context 128, batch 32), fp32, %zu steps\n",
                steps);
    const run_result a = run<plain>(steps);
    const run_result b = run<checkpointed>(steps);
    const run_result c = run<offloaded>(steps);
    std::printf("%-14s %16s %20s %18s %12s\n", "model", "activations MiB", "recompute arena MiB", "offloaded MiB",
                "s / step");
    const auto row = [&]<class M>(const char* name, M*, const run_result& r) {
        std::printf("%-14s %16.1f %20.1f %18.1f %12.3f\n", name, M::activation_bytes / mib, M::recompute_bytes / mib,
                    M::offloaded_bytes / mib, r.seconds_per_step);
    };
    row("plain", static_cast<plain_model*>(nullptr), a);
    row("checkpointed", static_cast<checkpointed_model*>(nullptr), b);
    row("offloaded", static_cast<offloaded_model*>(nullptr), c);
    const auto same = [&](const run_result& r) {
        return r.losses == a.losses && std::memcmp(a.weights.data(), r.weights.data(), a.weights.size() * sizeof(f32)) == 0;
    };
    std::printf("checkpointed / plain time %.2fx, offloaded / plain %.2fx; activations %.2fx; losses and final weights "
                "bitwise equal to plain: checkpointed %s, offloaded %s (last loss %.6f)\n",
                b.seconds_per_step / a.seconds_per_step, c.seconds_per_step / a.seconds_per_step,
                double(checkpointed_model::activation_bytes) / plain_model::activation_bytes, same(b) ? "yes" : "NO",
                same(c) ? "yes" : "NO", a.losses.back());
    return same(b) && same(c) ? 0 : 1;
}
