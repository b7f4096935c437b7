// Gradient checkpointing and activation offloading: a model whose segments
// are Checkpointed (or Offloaded) gives the same outputs and parameter
// gradients as the same layers kept whole (fused units, dropout and
// layernorm inside segments included), while the compile-time activation
// byte counts show the saving.
#include "tensor_testing.hpp"

#include <tenet/nn/nn.hpp>

#include <random>
#include <ratio>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;

namespace {

using f64_policy = training_precision<f64, f64, f64, f64>;
using In = Shape<5, 6>;

using plain = nn::Sequential<nn::Linear<6, 16>, nn::ReLU, nn::Linear<16, 16>, nn::GELU, nn::Linear<16, 16>,
                             nn::Dropout<std::ratio<1, 4>>, nn::LayerNorm<16>, nn::Tanh, nn::Linear<16, 3>>;
using checkpointed = nn::Sequential<nn::Checkpointed<nn::Linear<6, 16>, nn::ReLU, nn::Linear<16, 16>, nn::GELU>,
                                    nn::Checkpointed<nn::Linear<16, 16>, nn::Dropout<std::ratio<1, 4>>, nn::LayerNorm<16>,
                                                     nn::Tanh>,
                                    nn::Linear<16, 3>>;
// Two segments share the arena: the second's forward overwrites the first's
// activations, which its backward must take back from host memory.
using offloaded = nn::Sequential<nn::Offloaded<nn::Linear<6, 16>, nn::ReLU, nn::Linear<16, 16>, nn::GELU>,
                                 nn::Offloaded<nn::Linear<16, 16>, nn::Dropout<std::ratio<1, 4>>, nn::LayerNorm<16>,
                                               nn::Tanh>,
                                 nn::Linear<16, 3>>;

template <class Spec, class P = f64_policy>
using model_t = nn::model<Spec, P, In, Host>;

template <class T, class S>
Tensor<T, S, Host> random_tensor(std::uint64_t seed)
{
    Tensor<T, S, Host> t;
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (std::size_t i = 0; i < S::numel; ++i) t.data()[i] = convert<T>(normal(rng));
    return t;
}

}  // namespace

namespace {

template <class Segmented>
void check_same_as_whole()
{
    model_t<plain> whole(17);
    model_t<Segmented> segmented(17);
    static_assert(model_t<plain>::flat_numel == model_t<Segmented>::flat_numel);
    for (std::size_t i = 0; i < model_t<plain>::flat_numel; ++i)
        REQUIRE(whole.parameters()[i] == segmented.parameters()[i]);  // same layout, same seed

    const auto x = random_tensor<f64, In>(3);
    const auto dy = random_tensor<f64, Shape<5, 3>>(4);
    for (int step = 0; step < 3; ++step) {  // dropout masks change with the step
        segmented.for_each_parameter([](const std::string&, auto, auto gradient) {  // poison (padding stays 0)
            std::fill(gradient.data(), gradient.data() + decltype(gradient)::shape::numel, -777.0);
        });
        const auto& a = whole.forward(x);
        const auto& b = segmented.forward(x);
        for (std::size_t i = 0; i < 15; ++i) CHECK(b.data()[i] == doctest::Approx(a.data()[i]).epsilon(1e-12));
        whole.backward(dy);
        segmented.backward(dy);
        std::size_t bad = 0;
        for (std::size_t i = 0; i < model_t<plain>::flat_numel; ++i) {
            const double g = whole.gradients()[i], h = segmented.gradients()[i];
            if (!(std::abs(g - h) <= 1e-12 * (1 + std::abs(g))) && bad++ < 4) MESSAGE(i << ": " << g << " vs " << h);
        }
        CHECK(bad == 0);
    }
}

}  // namespace

TEST_CASE("checkpointing: the same outputs and gradients as the model kept whole")
{
    check_same_as_whole<checkpointed>();
}

TEST_CASE("activation offloading: the same outputs and gradients, the activations kept in host memory")
{
    check_same_as_whole<offloaded>();
}

TEST_CASE("checkpointing: activation bytes")
{
    // A batch of 256: every activation between layers is 256 x 16 f32 = 16 KiB.
    using W = nn::model<plain, fp32, Shape<256, 6>, Host>;
    using C = nn::model<checkpointed, fp32, Shape<256, 6>, Host>;
    constexpr std::size_t between = 256 * 16 * 4, statistic = 256 * 4;
    // Kept whole: 7 activations between layers, and what layers save: the
    // fused ReLU's mask (a row of 16 bits padded to 128, as cuBLASLt's AUX
    // wants) and LayerNorm's mean and rstd.
    static_assert(W::recompute_bytes == 0);
    static_assert(W::activation_bytes == 7 * between + 256 * 16 + 2 * statistic + W::output_tensor::bytes);
    // Checkpointed: only the two segment outputs are kept, plus one arena for
    // the largest segment's kept tensors: its 3 inner activations and
    // LayerNorm's statistics (the first segment's are 2 and the ReLU mask).
    static_assert(C::recompute_bytes == 3 * between + 2 * statistic);
    static_assert(C::activation_bytes == 2 * between + C::recompute_bytes + C::output_tensor::bytes);
    MESSAGE("activation bytes: whole " << W::activation_bytes << ", checkpointed " << C::activation_bytes);
    // Offloaded: the same device memory as Checkpointed, and each segment's
    // kept tensors in host memory (the first's 2 activations and the ReLU
    // mask, the second's 3 activations and the statistics).
    using O = nn::model<offloaded, fp32, Shape<256, 6>, Host>;
    static_assert(O::activation_bytes == C::activation_bytes && O::recompute_bytes == C::recompute_bytes);
    static_assert(O::offloaded_bytes == (2 * between + 256 * 16) + (3 * between + 2 * statistic));
    static_assert(C::offloaded_bytes == 0 && W::offloaded_bytes == 0);
}
