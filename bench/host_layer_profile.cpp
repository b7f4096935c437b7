// profile::layer_profile on the host: what observing a training step costs,
// and how much of the step its rows account for. Two trainers of the same
// model from the same seed take turns on the same batch, one observed by a
// layer_profile and one not; median milliseconds per step of each, their
// ratio, and the profile's "unattributed" share of the observed steps (the
// issue's bound: the per-layer rows add up to the step within 10%).
//
//   bench_host_layer_profile [--steps N]      (default 20)
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

using mlp = nn::Sequential<nn::Linear<784, 512>, nn::ReLU, nn::Linear<512, 512>, nn::ReLU, nn::Linear<512, 10>>;
using cnn = nn::Sequential<nn::Conv2d<1, 16, 3, 1, 1>, nn::ReLU, nn::BatchNorm2d<16>, nn::MaxPool2d<2>, nn::Conv2d<16, 32, 3, 1, 1>,
                           nn::ReLU, nn::MaxPool2d<2>, nn::Flatten, nn::Linear<32 * 7 * 7, 10>>;
// A small ViT on 8x8 patches: many short layers, the worst case for per-layer overhead.
using vit_block = nn::TransformerEncoderLayer<64, 4, 128>;
using vit = nn::Sequential<nn::PatchEmbed<7, 1, 64>, nn::PositionalEmbedding<16, 64>, vit_block, vit_block, nn::MeanPool<1>,
                           nn::LayerNorm<64>, nn::Linear<64, 10>>;

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

template <class Spec, class In>
void measure(const char* name, int steps)
{
    using M = nn::model<Spec, fp32, In, Host>;
    M observed_model(1), plain_model(1);
    train::trainer observed(observed_model, train::adamw{}, train::constant_lr{1e-4f});
    train::trainer plain(plain_model, train::adamw{}, train::constant_lr{1e-4f});
    constexpr std::size_t batch = In::extents[0];
    Tensor<f32, In, Host> x;
    Tensor<i32, Shape<batch>, Host> labels, valid;
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (std::size_t i = 0; i < x.numel; ++i) x.data()[i] = normal(rng);
    for (std::size_t i = 0; i < batch; ++i) labels.data()[i] = static_cast<i32>(rng() % 10), valid.data()[i] = 1;

    profile::layer_profile p({.warmup_steps = 2});
    observed.observe(&p);
    std::vector<double> with, without;
    const auto time = [&](auto& t) {
        const auto start = std::chrono::steady_clock::now();
        t.step(x, labels, valid);
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    };
    for (int s = 0; s < steps + 2; ++s) {  // (turns: a busy moment hits both alike)
        const double a = time(observed), b = time(plain);
        if (s >= 2) with.push_back(a), without.push_back(b);
    }
    observed.observe(nullptr);
    double inside = 0;
    std::size_t rows = 0;
    for (const auto& r : p.rows()) inside += r.seconds, ++rows;
    std::printf("  %-4s %3zu rows  %9.3f %9.3f  %6.3fx  %8.2f%%  %8.2f%%\n", name, rows, median(with), median(without),
                median(with) / median(without), 100 * p.unattributed_seconds() / p.step_seconds(),
                100 * inside / p.step_seconds());
}

}  // namespace

int main(int argc, char** argv)
{
    int steps = 20;
    for (int i = 1; i + 1 < argc; ++i)
        if (std::string(argv[i]) == "--steps") steps = std::max(1, std::stoi(argv[i + 1]));
    std::printf("bench_host_layer_profile: %s, %s; fp32 trainer steps (AdamW), median of %d, turn about\n",
                bench::cpu_model().c_str(), bench::vector_isa(), steps);
    std::printf("  model      observed ms  plain ms  observed/plain  unattributed  rows/step\n");
    measure<mlp, Shape<256, 784>>("mlp", steps);
    measure<cnn, Shape<64, 28, 28, 1>>("cnn", steps);
    measure<vit, Shape<64, 28, 28, 1>>("vit", steps);
}
