// nn::layer_cost: each layer's FLOPs and bytes against hand counts (Linear,
// Conv2d, attention), the elementwise default, sums over containers, a
// Checkpointed segment's recomputed forward, and Frozen's input gradient.
#include <doctest/doctest.h>
#include <tenet/nn/nn.hpp>

using namespace tenet;
namespace nn = tenet::nn;

namespace {

template <class Spec, class In, class P = fp32>
constexpr nn::layer_cost cost = nn::cost_of<typename Spec::template layer<P, In, Host>, typename P::storage>();

}  // namespace

TEST_CASE("layer_cost: Linear, Conv2d and attention against hand counts")
{
    // Linear 784 -> 256 over 64 rows, fp32: one GEMM of 2 * 64 * 784 * 256 forward, two backward.
    constexpr auto linear = cost<nn::Linear<784, 256>, Shape<64, 784>>;
    static_assert(linear.forward_flops == 2ull * 64 * 784 * 256);
    static_assert(linear.backward_flops == 4ull * 64 * 784 * 256);
    static_assert(linear.weight_gradient_flops == 2ull * 64 * 784 * 256);
    static_assert(linear.forward_bytes == 4ull * (64 * 784 + 256 * 784 + 256 + 64 * 256));  // x, W, b read; y written
    // dx = dy W reads dy and W, writes dx; dW = dy^T x reads dy and x, writes dW and db
    static_assert(linear.backward_bytes == 4ull * (64 * 256 + 256 * 784 + 64 * 784) + 4ull * (64 * 256 + 64 * 784 + 256 * 784 + 256));
    // bf16_mixed: activations and weights in 2 bytes, weight gradients in 4
    constexpr auto mixed = cost<nn::Linear<784, 256>, Shape<64, 784>, bf16_mixed>;
    static_assert(mixed.forward_flops == linear.forward_flops);
    static_assert(mixed.weight_gradient_bytes == 2ull * (64 * 256 + 64 * 784) + 4ull * (256 * 784 + 256));

    // Conv2d 3 -> 8, 3x3, padding 1, on 2 images of 8x8: 128 output pixels, 27 inputs each.
    constexpr auto conv = cost<nn::Conv2d<3, 8, 3, 1, 1>, Shape<2, 8, 8, 3>>;
    static_assert(conv.forward_flops == 2ull * 128 * 27 * 8);
    static_assert(conv.backward_flops == 2 * conv.forward_flops);
    static_assert(conv.forward_bytes == 4ull * (2 * 8 * 8 * 3 + 8 * 27 + 8 + 128 * 8));
    constexpr auto grouped = cost<nn::Conv2d<4, 8, 3, 1, 1, 1, 2>, Shape<2, 8, 8, 4>>;  // two groups: 18 inputs per output
    static_assert(grouped.forward_flops == 2ull * 128 * 18 * 8);

    // MultiHeadAttention<16, 4> on [2, 5, 16]: projections 2 B T D (3D + D),
    // q k^T and p v 2 B T T D each; the backward doubles the projections and has four batched GEMMs.
    constexpr std::uint64_t B = 2, T = 5, D = 16;
    constexpr auto attention = cost<nn::MultiHeadAttention<16, 4>, Shape<2, 5, 16>>;
    static_assert(attention.forward_flops == 2 * B * T * D * 4 * D + 4 * B * T * T * D);
    static_assert(attention.backward_flops == 4 * B * T * D * 4 * D + 8 * B * T * T * D);
    static_assert(attention.weight_gradient_flops == 2 * B * T * D * 4 * D);
    CHECK(attention.forward_flops == 23680);  // 8 * 10 * 256 + 4 * 2 * 25 * 16
}

TEST_CASE("layer_cost: elementwise layers, containers, Checkpointed and Frozen")
{
    constexpr auto relu = cost<nn::ReLU, Shape<64, 256>>;
    static_assert(relu.forward_flops == 0 && relu.forward_bytes == 4ull * 2 * 64 * 256);
    static_assert(relu.backward_bytes == 4ull * 3 * 64 * 256);  // dy and x read, dx written

    using mlp = nn::Sequential<nn::Linear<784, 256>, nn::ReLU, nn::Linear<256, 10>>;
    constexpr auto net = cost<mlp, Shape<64, 784>>;
    // (Linear, ReLU, Linear fuse into units: their FLOPs are the GEMMs')
    static_assert(net.forward_flops == 2ull * 64 * (784 * 256 + 256 * 10));
    static_assert(net.backward_flops == 2 * net.forward_flops);

    using checkpointed = nn::Sequential<nn::Checkpointed<nn::Linear<784, 256>, nn::ReLU>, nn::Linear<256, 10>>;
    constexpr auto again = cost<checkpointed, Shape<64, 784>>;
    static_assert(again.backward_flops == 4ull * 64 * (784 * 256 + 256 * 10) + 2ull * 64 * 784 * 256);

    using frozen = nn::Sequential<nn::Linear<784, 256>, nn::ReLU, nn::Frozen<nn::Linear<256, 256>>, nn::ReLU, nn::Linear<256, 10>>;
    constexpr auto f = cost<frozen, Shape<64, 784>>;
    static_assert(f.forward_flops == 2ull * 64 * (784 * 256 + 256 * 256 + 256 * 10));
    static_assert(f.weight_gradient_flops == 2ull * 64 * (784 * 256 + 256 * 10));  // none for the frozen layer
    static_assert(f.backward_flops == f.weight_gradient_flops + 2ull * 64 * (784 * 256 + 256 * 256 + 256 * 10));
}

TEST_CASE("layer_cost: embeddings count their gathers and table gradients; the first layer's backward is dW alone")
{
    // Embedding<100, 8> on tokens [4, 6]: 24 tokens read, 24 rows of 8 gathered and written.
    constexpr auto embedding = cost<nn::Embedding<100, 8>, Shape<4, 6>>;
    static_assert(embedding.forward_flops == 0);
    static_assert(embedding.forward_bytes == 4ull * 24 + 2 * 4ull * 24 * 8);
    // backward: dy read, the table cleared and added into (no input gradient for tokens)
    static_assert(embedding.backward_bytes == 4ull * 24 * 8 + 4ull * (2 * 100 * 8 + 24 * 8));
    static_assert(embedding.weight_gradient_bytes == embedding.backward_bytes);
    constexpr auto positions = cost<nn::PositionalEmbedding<6, 8>, Shape<4, 6, 8>>;
    static_assert(positions.forward_bytes == 4ull * (2 * 192 + 48));
    static_assert(positions.weight_gradient_bytes == 4ull * (192 + 48));

    constexpr auto linear = cost<nn::Linear<784, 256>, Shape<64, 784>>;
    constexpr auto first = linear.weight_gradient_only();
    static_assert(first.backward_flops == 2ull * 64 * 784 * 256);
    static_assert(first.backward_bytes == linear.weight_gradient_bytes);
    static_assert(first.forward_flops == linear.forward_flops);
}
