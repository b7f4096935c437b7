// Sequence models on the host: take (the gather) and scatter_add_rows against
// loops (repeated indices, determinism, out-of-range indices rejected with
// nothing changed); Embedding, PositionalEmbedding, MeanPool, LastToken,
// PatchEmbed and Residual forwards against float64 loops and compositions;
// MultiHeadAttention against float64 softmax(q k^T / sqrt(d) + mask) v with
// causal and key-padding masks and a sequence with no key; the encoder layer
// against its parts; every backward against central finite differences;
// Checkpointed against plain; bf16_mixed and fp16_mixed against float64 with
// tolerances from the storage type; token models trained by the trainer.
#include "model_testing.hpp"

#include <cstring>
#include <random>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;
using testing::check_parameter_gradients, testing::check_parameter_gradients_of, testing::f64_policy,
    testing::parameter_table, testing::random_tensor, testing::random_tokens;

namespace {

template <class T>
void poison(T& t)
{
    for (std::size_t i = 0; i < T::numel; ++i) t.data()[i] = convert<typename T::element_type>(-777.0);
}

template <class T>
std::vector<unsigned char> bytes_of(const T& t)
{
    std::vector<unsigned char> b(T::bytes);
    std::memcpy(b.data(), t.data(), T::bytes);
    return b;
}

}  // namespace

TEST_CASE("take<0>: rows of a table by token, against a loop, alone and inside a chain")
{
    constexpr int V = 11;
    const auto table = random_tensor<f32, Shape<V, 32>>(1);
    auto tokens = random_tokens<Shape<3, 7>>(2, V);
    tokens.data()[4] = tokens.data()[5] = tokens.data()[6];  // repeats
    tokens.data()[0] = 0;
    tokens.data()[1] = V - 1;  // both ends
    Tensor<f32, Shape<3, 7, 32>, Host> y;
    poison(y);
    y = take<0>(table, tokens);
    for (std::size_t p = 0; p < 21; ++p)
        for (std::size_t d = 0; d < 32; ++d) REQUIRE(y.data()[p * 32 + d] == table.data()[tokens.data()[p] * 32 + d]);
    poison(y);
    y = take<0>(table * 2.0f, tokens) + 1.0f;  // a gather of an expression, in a chain
    for (std::size_t p = 0; p < 21; ++p)
        for (std::size_t d = 0; d < 32; ++d)
            REQUIRE(y.data()[p * 32 + d] == table.data()[tokens.data()[p] * 32 + d] * 2.0f + 1.0f);
}

TEST_CASE("take<Axis> on a middle and a last axis, odd row lengths, bf16")
{
    const auto table = random_tensor<bf16, Shape<2, 5, 3>>(3);
    const auto idx = random_tokens<Shape<4>>(4, 5);
    Tensor<f32, Shape<2, 4, 3>, Host> y;
    poison(y);
    y = take<1>(table, idx);
    for (std::size_t a = 0; a < 2; ++a)
        for (std::size_t j = 0; j < 4; ++j)
            for (std::size_t b = 0; b < 3; ++b)
                REQUIRE(y.data()[(a * 4 + j) * 3 + b] == convert<f32>(table.data()[(a * 5 + idx.data()[j]) * 3 + b]));
    const auto last = random_tokens<Shape<2, 2>>(5, 3);
    Tensor<f32, Shape<2, 5, 2, 2>, Host> z;
    poison(z);
    z = take<2>(table, last);
    for (std::size_t a = 0; a < 2; ++a)
        for (std::size_t k = 0; k < 5; ++k)
            for (std::size_t j = 0; j < 4; ++j)
                REQUIRE(z.data()[(a * 5 + k) * 4 + j] == convert<f32>(table.data()[(a * 5 + k) * 3 + last.data()[j]]));
}

TEST_CASE("take: an index out of range is an index_error and the destination is unchanged")
{
    const auto table = random_tensor<f32, Shape<6, 16>>(6);
    for (const int bad : {6, -1, 1000}) {
        auto tokens = random_tokens<Shape<2, 5>>(7, 6);
        tokens.data()[7] = bad;
        Tensor<f32, Shape<2, 5, 16>, Host> y;
        poison(y);
        const auto before = bytes_of(y);
        CHECK_THROWS_AS(y = take<0>(table, tokens), index_error);
        CHECK(bytes_of(y) == before);
    }
    SUBCASE("the message names the index and the range")
    {
        auto tokens = random_tokens<Shape<4>>(8, 6);
        tokens.data()[2] = 9;
        Tensor<f32, Shape<4, 16>, Host> y;
        try {
            y = take<0>(table, tokens);
            FAIL("no error");
        } catch (const index_error& e) {
            CHECK(std::string(e.what()).find("index 9 is out of range [0, 6)") != std::string::npos);
        }
    }
}

TEST_CASE("take: a destination that is also the table is rejected (it would read what it wrote)")
{
    auto table = random_tensor<f32, Shape<4, 8>>(9);
    const auto order = random_tokens<Shape<4>>(10, 4);
    CHECK_THROWS_AS(table = take<0>(table, order), aliasing_error);
}

TEST_CASE("scatter_add_rows: against a float64 loop, repeated indices, the same bits every run")
{
    constexpr int V = 7;
    auto indices = random_tokens<Shape<5, 9>>(11, V);
    for (std::size_t i = 0; i < 12; ++i) indices.data()[i] = 3;  // one row gathers many
    const auto src = random_tensor<f32, Shape<5, 9, 70>>(12);     // 70: partial column blocks
    const auto start = random_tensor<f32, Shape<V, 70>>(13);
    std::vector<double> expected(V * 70);
    for (std::size_t i = 0; i < expected.size(); ++i) expected[i] = start.data()[i];
    for (std::size_t j = 0; j < 45; ++j)
        for (std::size_t c = 0; c < 70; ++c) expected[indices.data()[j] * 70 + c] += src.data()[j * 70 + c];
    Tensor<f32, Shape<V, 70>, Host> a, b;
    a = start;
    b = start;
    scatter_add_rows(a.view(), indices, src);
    scatter_add_rows(b.view(), indices, src);
    for (std::size_t i = 0; i < expected.size(); ++i) REQUIRE(a.data()[i] == doctest::Approx(expected[i]).epsilon(1e-5));
    CHECK(bytes_of(a) == bytes_of(b));
    // the order is that of j: the same as adding one index at a time
    Tensor<f32, Shape<V, 70>, Host> serial;
    serial = start;
    for (std::size_t j = 0; j < 45; ++j)
        for (std::size_t c = 0; c < 70; ++c) serial.data()[indices.data()[j] * 70 + c] += src.data()[j * 70 + c];
    CHECK(bytes_of(a) == bytes_of(serial));
}

TEST_CASE("scatter_add_rows: an index out of range is rejected with the destination unchanged")
{
    auto indices = random_tokens<Shape<6>>(14, 4);
    indices.data()[5] = 4;
    const auto src = random_tensor<f32, Shape<6, 3>>(15);
    auto dst = random_tensor<f32, Shape<4, 3>>(16);
    const auto before = bytes_of(dst);
    CHECK_THROWS_AS(scatter_add_rows(dst.view(), indices, src), index_error);
    CHECK(bytes_of(dst) == before);
}

TEST_CASE("Embedding: the forward gathers weight rows; PositionalEmbedding adds its table")
{
    using net = nn::Sequential<nn::Embedding<10, 6>, nn::PositionalEmbedding<5, 6>>;
    using M = nn::model<net, fp32, Shape<3, 5>, Host>;
    static_assert(std::is_same_v<M::input_type, i32>);
    static_assert(std::is_same_v<M::output_shape, Shape<3, 5, 6>>);
    static_assert(M::parameter_count == 10 * 6 + 5 * 6);
    M m(17);
    const auto table = parameter_table(m);
    REQUIRE(table.count("0.weight") == 1);
    REQUIRE(table.count("1.weight") == 1);
    const f32* w = m.parameters() + table.at("0.weight").first;
    const f32* pos = m.parameters() + table.at("1.weight").first;
    const auto tokens = random_tokens<Shape<3, 5>>(18, 10);
    const auto& y = m.forward(tokens);
    for (std::size_t b = 0; b < 3; ++b)
        for (std::size_t s = 0; s < 5; ++s)
            for (std::size_t d = 0; d < 6; ++d) {
                const double expected = double(w[tokens.data()[b * 5 + s] * 6 + d]) + double(pos[s * 6 + d]);
                REQUIRE(y.data()[(b * 5 + s) * 6 + d] == doctest::Approx(expected).epsilon(1e-6));
            }
    // the initialisation: N(0, 1) and N(0, 0.02^2)
    double sw = 0, sp = 0;
    for (std::size_t i = 0; i < 60; ++i) sw += double(w[i]) * w[i];
    for (std::size_t i = 0; i < 30; ++i) sp += double(pos[i]) * pos[i];
    CHECK(std::sqrt(sw / 60) == doctest::Approx(1.0).epsilon(0.35));
    CHECK(std::sqrt(sp / 30) == doctest::Approx(0.02).epsilon(0.35));
}

TEST_CASE("Embedding: the backward is the scatter-add of dy, the same bits on every run; bad tokens change nothing")
{
    using net = nn::Sequential<nn::Embedding<9, 40>>;
    using M = nn::model<net, fp32, Shape<4, 16>, Host>;
    M m(19);
    auto tokens = random_tokens<Shape<4, 16>>(20, 9);
    for (std::size_t i = 0; i < 10; ++i) tokens.data()[i] = 2;
    const auto dy = random_tensor<f32, Shape<4, 16, 40>>(21);
    m.forward(tokens);
    m.backward(dy);
    std::vector<double> expected(9 * 40, 0.0), magnitude(9 * 40, 0.0);
    for (std::size_t p = 0; p < 64; ++p)
        for (std::size_t d = 0; d < 40; ++d) {
            expected[tokens.data()[p] * 40 + d] += dy.data()[p * 40 + d];
            magnitude[tokens.data()[p] * 40 + d] += std::fabs(dy.data()[p * 40 + d]);
        }
    for (std::size_t i = 0; i < expected.size(); ++i) {
        INFO("element " << i);  // f32 sums: error within a few ulps of the summed magnitudes
        REQUIRE(std::fabs(m.gradients()[i] - expected[i]) <= 1e-6 * magnitude[i]);
    }
    const std::vector<f32> first(m.gradients(), m.gradients() + 9 * 40);
    m.forward(tokens);
    m.backward(dy);
    CHECK(std::memcmp(first.data(), m.gradients(), first.size() * sizeof(f32)) == 0);

    Tensor<i32, Shape<4, 16>, Host> bad;
    bad = tokens;
    bad.data()[63] = 9;
    const auto output_before = bytes_of(m.output());
    CHECK_THROWS_AS(m.forward(bad), index_error);
    CHECK(bytes_of(m.output()) == output_before);
}

TEST_CASE("MeanPool and Residual against float64 loops and compositions")
{
    SUBCASE("MeanPool<1> over tokens")
    {
        using M = nn::model<nn::Sequential<nn::MeanPool<1>>, fp32, Shape<2, 5, 3>, Host>;
        static_assert(std::is_same_v<M::output_shape, Shape<2, 3>>);
        M m(22);
        const auto x = random_tensor<f32, Shape<2, 5, 3>>(23);
        const auto& y = m.forward(x);
        for (std::size_t b = 0; b < 2; ++b)
            for (std::size_t d = 0; d < 3; ++d) {
                double s = 0;
                for (std::size_t t = 0; t < 5; ++t) s += x.data()[(b * 5 + t) * 3 + d];
                REQUIRE(y.data()[b * 3 + d] == doctest::Approx(s / 5).epsilon(1e-6));
            }
    }
    SUBCASE("Residual: x + f(x), f's parameters under the Residual's name")
    {
        using branch = nn::Sequential<nn::LayerNorm<6>, nn::Linear<6, 12>, nn::GELU, nn::Linear<12, 6>>;
        using M = nn::model<nn::Sequential<nn::Residual<nn::LayerNorm<6>, nn::Linear<6, 12>, nn::GELU, nn::Linear<12, 6>>>,
                            f64_policy, Shape<2, 4, 6>, Host>;
        using F = nn::model<branch, f64_policy, Shape<2, 4, 6>, Host>;
        static_assert(M::flat_numel == F::flat_numel);
        M m(24);
        F f(25);
        std::memcpy(f.parameters(), m.parameters(), M::flat_numel * sizeof(f64));
        const auto table = parameter_table(m);
        CHECK(table.count("0.1.weight") == 1);
        CHECK(table.count("0.3.bias") == 1);
        const auto x = random_tensor<f64, Shape<2, 4, 6>>(26);
        const auto& y = m.forward(x);
        const auto& fx = f.forward(x);
        for (std::size_t i = 0; i < 48; ++i) REQUIRE(y.data()[i] == doctest::Approx(x.data()[i] + fx.data()[i]).epsilon(1e-12));
    }
}

TEST_CASE("sequence layers: every backward against central finite differences (float64)")
{
    SUBCASE("Embedding, PositionalEmbedding, a Residual block, MeanPool, a head")
    {
        using net = nn::Sequential<nn::Embedding<7, 6>, nn::PositionalEmbedding<4, 6>,
                                   nn::Residual<nn::LayerNorm<6>, nn::Linear<6, 8>, nn::GELU, nn::Linear<8, 6>>,
                                   nn::MeanPool<1>, nn::Linear<6, 3>>;
        using M = nn::model<net, f64_policy, Shape<3, 4>, Host>;
        M m(27);
        auto tokens = random_tokens<Shape<3, 4>>(28, 7);
        tokens.data()[0] = tokens.data()[5] = 1;  // a repeated token: its gradient sums
        const auto r = random_tensor<f64, M::output_shape>(29);
        check_parameter_gradients(m, tokens, r, 1e-6);
    }
    SUBCASE("Residuals first and stacked (their input gradient), MeanPool<0>")
    {
        using net = nn::Sequential<nn::Residual<nn::Linear<5, 5>, nn::Tanh>, nn::Residual<nn::LayerNorm<5>, nn::Linear<5, 5>>,
                                   nn::Linear<5, 4>, nn::MeanPool<0>>;
        using M = nn::model<net, f64_policy, Shape<3, 2, 5>, Host>;
        M m(30);
        check_parameter_gradients(m, random_tensor<f64, Shape<3, 2, 5>>(31), random_tensor<f64, M::output_shape>(32), 1e-6);
    }
}

TEST_CASE("Residual over a Checkpointed segment: the same outputs and gradients as the plain block")
{
    using plain = nn::Sequential<nn::Linear<8, 8>, nn::Residual<nn::LayerNorm<8>, nn::Linear<8, 16>, nn::ReLU, nn::Linear<16, 8>>,
                                 nn::Linear<8, 3>>;
    using checkpointed =
        nn::Sequential<nn::Linear<8, 8>, nn::Residual<nn::Checkpointed<nn::LayerNorm<8>, nn::Linear<8, 16>, nn::ReLU, nn::Linear<16, 8>>>,
                       nn::Linear<8, 3>>;
    nn::model<plain, fp32, Shape<6, 8>, Host> a(33);
    nn::model<checkpointed, fp32, Shape<6, 8>, Host> b(33);
    static_assert(decltype(b)::recompute_bytes > 0);
    const auto x = random_tensor<f32, Shape<6, 8>>(34);
    const auto dy = random_tensor<f32, Shape<6, 3>>(35);
    a.forward(x);
    b.forward(x);
    CHECK(bytes_of(a.output()) == bytes_of(b.output()));
    a.backward(dy);
    b.backward(dy);
    CHECK(std::memcmp(a.gradients(), b.gradients(), decltype(a)::flat_numel * sizeof(f32)) == 0);
}

TEST_CASE("trainer: a token model learns the next token, padding rows masked")
{
    // tokens -> the next token (t + 1) mod V, from the token itself and its position
    constexpr int V = 8;
    using net = nn::Sequential<nn::Embedding<V, 16>, nn::PositionalEmbedding<6, 16>,
                               nn::Residual<nn::LayerNorm<16>, nn::Linear<16, 32>, nn::GELU, nn::Linear<32, 16>>,
                               nn::LayerNorm<16>, nn::Linear<16, V>>;
    using M = nn::model<net, fp32, Shape<4, 6>, Host>;
    M m(36);
    train::trainer t(m, train::adamw{}, train::constant_lr{3e-3});
    static_assert(std::is_same_v<decltype(t)::input_type, i32>);
    Tensor<i32, Shape<4, 6>, Host> labels;
    Tensor<f32, Shape<4, 6>, Host> valid;
    double first = 0, last = 0;
    for (int step = 0; step < 200; ++step) {
        auto tokens = random_tokens<Shape<4, 6>>(100 + step, V);
        for (std::size_t i = 0; i < 24; ++i) {
            labels.data()[i] = (tokens.data()[i] + 1) % V;
            valid.data()[i] = i < 18 ? 1.0f : 0.0f;  // the last sequence is padding
        }
        tokens.data()[20] = 12345;  // in a padding row: staged as token 0, never read
        t.step(tokens, labels, valid);
        const double loss = t.end_epoch().mean_loss;
        if (step == 0) first = loss;
        last = loss;
    }
    INFO("loss " << first << " -> " << last);
    CHECK(first > 1.5);
    CHECK(last < 0.1);
}

namespace {

// softmax(q k^T / sqrt(d) + mask) v per head, then the out projection, in
// float64 from the parameters; a query with no key left gives the bias alone.
template <std::size_t B, std::size_t T, std::size_t D, std::size_t H>
std::vector<double> attention_f64(const double* x, const double* w_in, const double* b_in, const double* w_out,
                                  const double* b_out, const std::vector<int>& lengths, bool causal)
{
    constexpr std::size_t d = D / H;
    std::vector<double> qkv(B * T * 3 * D), merged(B * T * D, 0.0), y(B * T * D);
    for (std::size_t r = 0; r < B * T; ++r)
        for (std::size_t o = 0; o < 3 * D; ++o) {
            double s = b_in[o];
            for (std::size_t i = 0; i < D; ++i) s += x[r * D + i] * w_in[o * D + i];
            qkv[r * 3 * D + o] = s;
        }
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < T; ++i) {
                std::vector<double> score(T);
                std::vector<bool> seen(T);
                double top = -1e300;
                for (std::size_t j = 0; j < T; ++j) {
                    seen[j] = static_cast<int>(j) < lengths[b] && (!causal || j <= i);
                    double s = 0;
                    for (std::size_t k = 0; k < d; ++k)
                        s += qkv[(b * T + i) * 3 * D + h * d + k] * qkv[(b * T + j) * 3 * D + D + h * d + k];
                    score[j] = s / std::sqrt(double(d));
                    if (seen[j]) top = std::max(top, score[j]);
                }
                double total = 0;
                for (std::size_t j = 0; j < T; ++j) total += seen[j] ? std::exp(score[j] - top) : 0.0;
                for (std::size_t k = 0; k < d; ++k) {
                    double s = 0;
                    for (std::size_t j = 0; j < T; ++j)
                        if (seen[j]) s += std::exp(score[j] - top) / total * qkv[(b * T + j) * 3 * D + 2 * D + h * d + k];
                    merged[(b * T + i) * D + h * d + k] = s;
                }
            }
    for (std::size_t r = 0; r < B * T; ++r)
        for (std::size_t o = 0; o < D; ++o) {
            double s = b_out[o];
            for (std::size_t i = 0; i < D; ++i) s += merged[r * D + i] * w_out[o * D + i];
            y[r * D + o] = s;
        }
    return y;
}

}  // namespace

TEST_CASE("MultiHeadAttention against float64 loops: plain, causal, key padding, a sequence with no key")
{
    constexpr std::size_t B = 3, T = 5, D = 8, H = 2;
    using S = Shape<B, T, D>;
    const auto x = random_tensor<f64, S>(40);
    Tensor<i32, Shape<B>, Host> lengths;
    const std::vector<int> cut = {5, 2, 0};
    for (std::size_t b = 0; b < B; ++b) lengths.data()[b] = cut[b];
    const auto run = [&]<bool Causal>(std::bool_constant<Causal>, bool padded) {
        using M = nn::model<nn::Sequential<nn::MultiHeadAttention<D, H, Causal>>, f64_policy, S, Host>;
        M m(41);
        const auto table = parameter_table(m);
        REQUIRE(table.count("0.in_proj_weight") == 1);
        REQUIRE(table.count("0.in_proj_bias") == 1);
        REQUIRE(table.count("0.out_proj.weight") == 1);
        REQUIRE(table.count("0.out_proj.bias") == 1);
        const double* p = m.parameters();
        const auto& y = padded ? m.forward(x, lengths) : m.forward(x);
        const std::vector<int> used = padded ? cut : std::vector<int>(B, int(T));
        const auto expected = attention_f64<B, T, D, H>(x.data(), p + table.at("0.in_proj_weight").first,
                                                        p + table.at("0.in_proj_bias").first,
                                                        p + table.at("0.out_proj.weight").first,
                                                        p + table.at("0.out_proj.bias").first, used, Causal);
        for (std::size_t i = 0; i < S::numel; ++i) {
            INFO("causal " << Causal << " padded " << padded << " element " << i);
            REQUIRE(std::isfinite(y.data()[i]));
            REQUIRE(y.data()[i] == doctest::Approx(expected[i]).epsilon(1e-10).scale(1.0));
        }
    };
    run(std::false_type{}, false);
    run(std::true_type{}, false);
    run(std::false_type{}, true);
    run(std::true_type{}, true);
}

TEST_CASE("MultiHeadAttention: every backward against central finite differences, masks included")
{
    constexpr std::size_t B = 3, T = 4, D = 6, H = 3;
    Tensor<i32, Shape<B>, Host> lengths;
    lengths.data()[0] = 4;
    lengths.data()[1] = 1;
    lengths.data()[2] = 0;
    SUBCASE("key padding, a Linear before it (its input gradient)")
    {
        using net = nn::Sequential<nn::Linear<5, D>, nn::MultiHeadAttention<D, H>, nn::Tanh>;
        nn::model<net, f64_policy, Shape<B, T, 5>, Host> m(42);
        const auto x = random_tensor<f64, Shape<B, T, 5>>(43);
        check_parameter_gradients_of(m, [&]() -> const auto& { return m.forward(x, lengths); },
                                     random_tensor<f64, Shape<B, T, D>>(44), 1e-6);
    }
    SUBCASE("causal, inside a Residual")
    {
        using net = nn::Sequential<nn::Linear<5, D>, nn::Residual<nn::LayerNorm<D>, nn::MultiHeadAttention<D, H, true>>>;
        nn::model<net, f64_policy, Shape<B, T, 5>, Host> m(45);
        const auto x = random_tensor<f64, Shape<B, T, 5>>(46);
        check_parameter_gradients_of(m, [&]() -> const auto& { return m.forward(x, lengths); },
                                     random_tensor<f64, Shape<B, T, D>>(47), 1e-6);
    }
}

namespace {

// Copies the parameters named `from_prefix...` of `from` into those named
// `to_prefix...` of `to` (float64 models).
template <class To, class From>
void copy_named(To& to, const std::string& to_prefix, From& from, const std::string& from_prefix)
{
    const auto source = parameter_table(from);
    std::size_t copied = 0;
    for (const auto& [name, where] : parameter_table(to)) {
        const auto found = source.find(from_prefix + name.substr(to_prefix.size()));
        if (name.rfind(to_prefix, 0) != 0 || found == source.end()) continue;
        REQUIRE(found->second.second == where.second);
        std::memcpy(to.parameters() + where.first, from.parameters() + found->second.first, where.second * sizeof(f64));
        ++copied;
    }
    REQUIRE(copied > 0);
}

}  // namespace

TEST_CASE("TransformerEncoderLayer against a float64 composition of its parts")
{
    constexpr std::size_t B = 2, T = 5, D = 8;
    using S = Shape<B, T, D>;
    using layer = nn::TransformerEncoderLayer<D, 2, 16, true>;
    nn::model<nn::Sequential<layer>, f64_policy, S, Host> m(50);
    const auto table = parameter_table(m);
    CHECK(table.count("0.0.0.weight") == 1);       // the first LayerNorm
    CHECK(table.count("0.0.1.in_proj_weight") == 1);
    CHECK(table.count("0.1.3.bias") == 1);         // the MLP's second Linear
    nn::model<nn::Sequential<nn::LayerNorm<D>>, f64_policy, S, Host> norm1(1), norm2(2);
    nn::model<nn::Sequential<nn::MultiHeadAttention<D, 2, true>>, f64_policy, S, Host> attention(3);
    nn::model<nn::Sequential<nn::Linear<D, 16>, nn::GELU, nn::Linear<16, D>>, f64_policy, S, Host> mlp(4);
    copy_named(norm1, "0.", m, "0.0.0.");
    copy_named(attention, "0.", m, "0.0.1.");
    copy_named(norm2, "0.", m, "0.1.0.");
    copy_named(mlp, "0.", m, "0.1.1.");
    copy_named(mlp, "2.", m, "0.1.3.");
    const auto x = random_tensor<f64, S>(51);
    Tensor<f64, S, Host> h, y;
    h = x + attention.forward(norm1.forward(x));
    y = h + mlp.forward(norm2.forward(h));
    const auto& got = m.forward(x);
    for (std::size_t i = 0; i < S::numel; ++i) REQUIRE(got.data()[i] == doctest::Approx(y.data()[i]).epsilon(1e-12));
}

TEST_CASE("encoder layers, PatchEmbed, LastToken: backwards against central finite differences")
{
    SUBCASE("two causal encoder layers over tokens, the last token to a head")
    {
        using net = nn::Sequential<nn::Embedding<6, 8>, nn::PositionalEmbedding<4, 8>, nn::TransformerEncoderLayer<8, 2, 12, true>,
                                   nn::TransformerEncoderLayer<8, 4, 12, true>, nn::LayerNorm<8>, nn::LastToken, nn::Linear<8, 3>>;
        nn::model<net, f64_policy, Shape<2, 4>, Host> m(52);
        check_parameter_gradients(m, random_tokens<Shape<2, 4>>(53, 6), random_tensor<f64, Shape<2, 3>>(54), 1e-6);
    }
    SUBCASE("a convolution, then patches (PatchEmbed's input gradient), an encoder layer, MeanPool")
    {
        using net = nn::Sequential<nn::Conv2d<1, 2, 3, 1, 1>, nn::PatchEmbed<2, 2, 6>, nn::TransformerEncoderLayer<6, 2, 8>,
                                   nn::MeanPool<1>, nn::Linear<6, 3>>;
        using M = nn::model<net, f64_policy, Shape<2, 4, 6, 1>, Host>;
        static_assert(std::is_same_v<nn::PatchEmbed<2, 2, 6>::output_shape<Shape<2, 4, 6, 2>>, Shape<2, 6, 6>>);
        M m(55);
        check_parameter_gradients(m, random_tensor<f64, Shape<2, 4, 6, 1>>(56), random_tensor<f64, Shape<2, 3>>(57), 1e-6);
    }
}

TEST_CASE("PatchEmbed: each token is its square's values, in (row, column, channel) order, projected")
{
    using M = nn::model<nn::Sequential<nn::PatchEmbed<2, 3, 4>>, f64_policy, Shape<2, 4, 6, 3>, Host>;
    M m(58);
    const auto table = parameter_table(m);
    const double* w = m.parameters() + table.at("0.proj.weight").first;
    const double* b = m.parameters() + table.at("0.proj.bias").first;
    const auto x = random_tensor<f64, Shape<2, 4, 6, 3>>(59);
    const auto& y = m.forward(x);
    for (std::size_t n = 0; n < 2; ++n)
        for (std::size_t pr = 0; pr < 2; ++pr)
            for (std::size_t pc = 0; pc < 3; ++pc)
                for (std::size_t o = 0; o < 4; ++o) {
                    double s = b[o];
                    for (std::size_t r = 0; r < 2; ++r)
                        for (std::size_t c = 0; c < 2; ++c)
                            for (std::size_t ch = 0; ch < 3; ++ch)
                                s += w[o * 12 + (r * 2 + c) * 3 + ch] * x.data()[((n * 4 + pr * 2 + r) * 6 + pc * 2 + c) * 3 + ch];
                    REQUIRE(y.data()[((n * 6) + pr * 3 + pc) * 4 + o] == doctest::Approx(s).epsilon(1e-12));
                }
}

TEST_CASE("Checkpointed encoder layers: the same outputs and gradients as plain ones")
{
    using layer = nn::TransformerEncoderLayer<16, 4, 32, true>;
    using plain = nn::Sequential<nn::Embedding<10, 16>, layer, layer, nn::Linear<16, 10>>;
    using checkpointed = nn::Sequential<nn::Embedding<10, 16>, nn::Checkpointed<layer>, nn::Checkpointed<layer>, nn::Linear<16, 10>>;
    nn::model<plain, fp32, Shape<3, 8>, Host> a(60);
    nn::model<checkpointed, fp32, Shape<3, 8>, Host> b(60);
    // Inside a segment every tensor an encoder layer keeps (its Residuals'
    // branches, attention's q/k/v, probabilities and context, LayerNorm's
    // statistics, the fused GELU's pre-activation) is in the shared arena:
    // the model keeps one layer's worth instead of two.
    using L = layer::layer<fp32, Shape<3, 8, 16>, Host>;
    static_assert(nn::resident_activation_bytes_of<L>() == 0 && L::kept_bytes >= L::activation_bytes);
    static_assert(decltype(b)::recompute_bytes == L::kept_bytes);
    static_assert(decltype(b)::activation_bytes == decltype(a)::activation_bytes - 2 * L::activation_bytes + L::kept_bytes);
    const auto tokens = random_tokens<Shape<3, 8>>(61, 10);
    const auto dy = random_tensor<f32, Shape<3, 8, 10>>(62);
    a.forward(tokens);
    b.forward(tokens);
    CHECK(bytes_of(a.output()) == bytes_of(b.output()));
    a.backward(dy);
    b.backward(dy);
    CHECK(std::memcmp(a.gradients(), b.gradients(), decltype(a)::flat_numel * sizeof(f32)) == 0);
}

namespace {

// Norm-wise relative error of got against want.
template <class G>
double relative_error(const G* got, const double* want, std::size_t n)
{
    double err = 0, norm = 0;
    for (std::size_t i = 0; i < n; ++i) {
        err += std::pow(convert<f64>(got[i]) - want[i], 2);
        norm += want[i] * want[i];
    }
    return std::sqrt(err / norm);
}

template <class P>
void check_against_f64(double unit)
{
    using net = nn::Sequential<nn::Embedding<12, 32>, nn::PositionalEmbedding<10, 32>, nn::TransformerEncoderLayer<32, 4, 64, true>,
                               nn::TransformerEncoderLayer<32, 4, 64, true>, nn::LayerNorm<32>, nn::Linear<32, 12>>;
    using S = Shape<4, 10>;
    nn::model<net, f64_policy, S, Host> exact(70);
    nn::model<net, P, S, Host> low(70);
    const auto t_exact = parameter_table(exact), t_low = parameter_table(low);
    for (const auto& [name, where] : t_low)
        for (std::size_t j = 0; j < where.second; ++j)
            exact.parameters()[t_exact.at(name).first + j] = convert<f64>(low.parameters()[where.first + j]);
    const auto tokens = random_tokens<S>(71, 12);
    Tensor<typename P::storage, Shape<4, 10, 12>, Host> r;
    Tensor<f64, Shape<4, 10, 12>, Host> r64;
    const auto drawn = random_tensor<f64, Shape<4, 10, 12>>(72);
    for (std::size_t i = 0; i < r.numel; ++i) {
        r.data()[i] = convert<typename P::storage>(drawn.data()[i]);
        r64.data()[i] = convert<f64>(r.data()[i]);
    }
    const auto& y = low.forward(tokens);
    const auto& y64 = exact.forward(tokens);
    const double output_error = relative_error(y.data(), y64.data(), y.numel);
    INFO("output error " << output_error << " (unit roundoff " << unit << ")");
    CHECK(output_error <= 16 * unit);
    low.backward(r);
    exact.backward(r64);
    for (const auto& [name, where] : t_low) {
        const double e = relative_error(low.gradients() + where.first, exact.gradients() + t_exact.at(name).first, where.second);
        INFO(name << ": gradient error " << e << " (unit roundoff " << unit << ")");
        CHECK(e <= 64 * unit);
    }
}

}  // namespace

TEST_CASE("a causal transformer under bf16_mixed and fp16_mixed against float64, tolerances from the storage type")
{
    check_against_f64<bf16_mixed>(std::ldexp(1.0, -8));
    check_against_f64<fp16_mixed>(std::ldexp(1.0, -11));
}

TEST_CASE("trainer: a token transformer learns under every policy, with gradient accumulation")
{
    constexpr int V = 8;
    using net = nn::Sequential<nn::Embedding<V, 16>, nn::PositionalEmbedding<6, 16>, nn::TransformerEncoderLayer<16, 2, 32, true>,
                               nn::LayerNorm<16>, nn::Linear<16, V>>;
    const auto learn = [&]<class P>(P, const std::string& policy) {
        nn::model<net, P, Shape<4, 6>, Host> m(80);
        train::trainer_options options;
        options.accumulation_steps = 2;
        train::trainer t(m, train::adamw{}, train::constant_lr{1e-2}, options);
        Tensor<i32, Shape<4, 6>, Host> labels;
        Tensor<f32, Shape<4, 6>, Host> valid;
        assign(valid.view(), 1.0f);
        double first = 0, last = 0;
        for (int step = 0; step < 800; ++step) {
            auto tokens = random_tokens<Shape<4, 6>>(200 + step, V);
            for (std::size_t i = 0; i < 24; ++i) labels.data()[i] = i % 6 == 0 ? tokens.data()[i] : tokens.data()[i - 1];
            t.step(tokens, labels, valid);  // the previous token (the first: itself): needs attention
            if (step % 20 == 19) {
                const double loss = t.end_epoch().mean_loss;
                if (step == 19) first = loss;
                last = loss;
            }
        }
        INFO(policy << ": loss " << first << " -> " << last);
        CHECK(first > 1.0);
        CHECK(last < 0.2);  // (measured: fp32 0.002, bf16_mixed 0.008, fp16_mixed 0.08)
    };
    learn(fp32{}, "fp32");
    learn(bf16_mixed{}, "bf16_mixed");
    learn(fp16_mixed{}, "fp16_mixed");
}
