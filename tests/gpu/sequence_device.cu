// Sequence-model pieces on the device against the host: take (the gather)
// and scatter_add_rows give the host's bits (the scatter-add is
// deterministic by construction: the same additions in the same order), an
// out-of-range token is rejected on the device too with nothing written, and
// token models agree with their host twins.
#include "model_compare.hpp"

#include <cstring>
#include <random>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;
using testing::random_tokens;

namespace {

template <class T, class S, class P>
Tensor<T, S, Host> to_host(const Tensor<T, S, P>& d)
{
    Tensor<T, S, Host> h;
    copy(h, d);
    current_stream().synchronize();
    return h;
}

template <class A, class B>
bool same_bits(const A& a, const B& b)
{
    return std::memcmp(a.data(), b.data(), A::bytes) == 0;
}

}  // namespace

TEST_CASE("device take: the host's values, vector rows and odd rows; a bad token writes nothing")
{
    const auto table = testing::random_host<f32, Shape<50, 64>>(1);
    const auto tokens = random_tokens<Shape<8, 33>>(2, 50);
    const auto table_d = testing::to_device(table);
    const auto tokens_d = testing::to_device(tokens);
    Tensor<f32, Shape<8, 33, 64>, Host> yh;
    yh = take<0>(table, tokens) * 2.0f;
    Tensor<f32, Shape<8, 33, 64>, Device> yd;
    yd = take<0>(table_d, tokens_d) * 2.0f;
    CHECK(same_bits(to_host(yd), yh));

    const auto odd = testing::random_host<bf16, Shape<3, 50, 5>>(3);
    const auto odd_d = testing::to_device(odd);
    Tensor<f32, Shape<3, 8, 33, 5>, Host> zh;
    zh = take<1>(odd, tokens);
    Tensor<f32, Shape<3, 8, 33, 5>, Device> zd;
    zd = take<1>(odd_d, tokens_d);
    CHECK(same_bits(to_host(zd), zh));

    auto bad = random_tokens<Shape<8, 33>>(4, 50);
    bad.data()[100] = 50;
    const auto bad_d = testing::to_device(bad);
    const auto before = to_host(yd);
    CHECK_THROWS_AS(yd = take<0>(table_d, bad_d), index_error);
    CHECK(same_bits(to_host(yd), before));
}

TEST_CASE("device scatter_add_rows: the host's bits, f32 and bf16 sources, repeated indices")
{
    auto indices = random_tokens<Shape<16, 40>>(5, 30);
    for (std::size_t i = 0; i < 100; ++i) indices.data()[i] = 7;
    const auto start = testing::random_host<f32, Shape<30, 96>>(6);
    const auto src = testing::random_host<f32, Shape<16, 40, 96>>(7);
    const auto src16 = testing::random_host<bf16, Shape<16, 40, 96>>(8);
    Tensor<f32, Shape<30, 96>, Host> h, h16;
    h = start;
    h16 = start;
    scatter_add_rows(h.view(), indices, src);
    scatter_add_rows(h16.view(), indices, src16);
    auto d = testing::to_device(start);
    auto d16 = testing::to_device(start);
    const auto indices_d = testing::to_device(indices);
    scatter_add_rows(d.view(), indices_d, testing::to_device(src));
    scatter_add_rows(d16.view(), indices_d, testing::to_device(src16));
    CHECK(same_bits(to_host(d), h));
    CHECK(same_bits(to_host(d16), h16));
}

TEST_CASE("device Embedding: forward and weight gradient equal the host's bits")
{
    using net = nn::Sequential<nn::Embedding<40, 48>, nn::PositionalEmbedding<24, 48>>;
    using S = Shape<16, 24>;
    nn::model<net, fp32, S, Host> host(9);
    nn::model<net, fp32, S, Device> device(9);
    const auto tokens = random_tokens<S>(10, 40);
    const auto dy = testing::random_host<f32, Shape<16, 24, 48>>(11);
    const auto& yh = host.forward(tokens);
    CHECK(same_bits(to_host(device.forward(testing::to_device(tokens))), yh));
    host.backward(dy);
    device.backward(testing::to_device(dy));
    constexpr std::size_t n = decltype(host)::flat_numel;
    std::vector<f32> gd(n);
    TENET_CUDA_CHECK(cudaMemcpy(gd.data(), device.gradients(), n * sizeof(f32), cudaMemcpyDeviceToHost));
    // the embedding's part is a scatter-add: bitwise; the positional part a column sum
    CHECK_BITWISE_EQUAL("Embedding weight gradient (scatter_add_rows)", gd.data(), host.gradients(), 40 * 48);
    CHECK_RELATIVE_ERROR("Embedding + PositionalEmbedding gradients", gd.data(), host.gradients(), n, 1e-6);
}

TEST_CASE("device token model with a Residual block and MeanPool equals the host's")
{
    using net = nn::Sequential<nn::Embedding<64, 32>, nn::PositionalEmbedding<16, 32>,
                               nn::Residual<nn::LayerNorm<32>, nn::Linear<32, 64>, nn::GELU, nn::Linear<64, 32>>,
                               nn::MeanPool<1>, nn::Linear<32, 10>>;
    using S = Shape<8, 16>;
    for (const double tolerance : {1e-4}) {
        nn::model<net, fp32, S, Host> host(12);
        nn::model<net, fp32, S, Device> device(12);
        const auto tokens = random_tokens<S>(13, 64);
        const auto dy = testing::random_host<f32, Shape<8, 10>>(14);
        const auto& yh = host.forward(tokens);
        const auto yd = to_host(device.forward(testing::to_device(tokens)));
        CHECK_RELATIVE_ERROR("token model forward", yd.data(), yh.data(), 80, tolerance);
        host.backward(dy);
        device.backward(testing::to_device(dy));
        constexpr std::size_t n = decltype(host)::flat_numel;
        std::vector<f32> gd(n);
        TENET_CUDA_CHECK(cudaMemcpy(gd.data(), device.gradients(), n * sizeof(f32), cudaMemcpyDeviceToHost));
        CHECK_RELATIVE_ERROR("token model gradients", gd.data(), host.gradients(), n, tolerance);
    }
}

TEST_CASE("device attention with causal and key-padding masks equals the host's")
{
    using net = nn::Sequential<nn::Linear<24, 64>, nn::MultiHeadAttention<64, 4, true>, nn::Linear<64, 8>>;
    using S = Shape<6, 20, 24>;
    nn::model<net, fp32, S, Host> host(15);
    nn::model<net, fp32, S, Device> device(15);
    const auto x = testing::random_host<f32, S>(16);
    const auto dy = testing::random_host<f32, Shape<6, 20, 8>>(17);
    Tensor<i32, Shape<6>, Host> lengths;
    const int cut[] = {20, 1, 0, 13, 20, 7};
    for (std::size_t b = 0; b < 6; ++b) lengths.data()[b] = cut[b];
    const auto lengths_d = testing::to_device(lengths);
    const auto& yh = host.forward(x, lengths);
    const auto yd = to_host(device.forward(testing::to_device(x), lengths_d));
    CHECK_RELATIVE_ERROR("masked attention forward", yd.data(), yh.data(), yh.numel, 1e-4);
    host.backward(dy);
    device.backward(testing::to_device(dy));
    constexpr std::size_t n = decltype(host)::flat_numel;
    std::vector<f32> gd(n);
    TENET_CUDA_CHECK(cudaMemcpy(gd.data(), device.gradients(), n * sizeof(f32), cudaMemcpyDeviceToHost));
    CHECK_RELATIVE_ERROR("masked attention gradients", gd.data(), host.gradients(), n, 1e-4);
}

TEST_CASE("device Vision Transformer (patches, encoder layers, mean pooling) equals the host's")
{
    using encoder = nn::TransformerEncoderLayer<32, 4, 64>;
    using net = nn::Sequential<nn::PatchEmbed<7, 1, 32>, nn::PositionalEmbedding<16, 32>, encoder, encoder, nn::MeanPool<1>,
                               nn::LayerNorm<32>, nn::Linear<32, 10>>;
    testing::check_device_matches_host<net, fp32, Shape<16, 28, 28, 1>, Shape<16, 10>>(1e-4);
    testing::check_device_matches_host<net, bf16_mixed, Shape<16, 28, 28, 1>, Shape<16, 10>>(3e-2);
}
