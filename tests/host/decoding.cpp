// Cached decoding on the host: infer::decoder's logits against the full
// causal forward at every position (fp32 and bf16_mixed), sequences reset
// on their own while the others go on, the context's end and bad tokens
// refused with nothing changed; generate's greedy text against recomputing
// the context for every token (the old way), prompts of different lengths,
// stop tokens, the maximum, the same seed giving the same text; the token
// sampler's greedy, top-k and top-p against their definitions (the support
// exactly, the frequencies within 5 standard deviations over many draws);
// PositionalEmbedding on sequences shorter than its table.
#include "model_testing.hpp"

#include <tenet/infer/infer.hpp>

#include <cmath>
#include <map>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;
namespace infer = tenet::infer;
using testing::random_tensor, testing::random_tokens;

namespace {

constexpr std::size_t vocab = 13, context = 9, width = 16, batch = 3;
using block = nn::TransformerEncoderLayer<width, 2, 2 * width, /*Causal=*/true>;
using gpt = nn::Sequential<nn::Embedding<vocab, width>, nn::PositionalEmbedding<context, width>, block, block,
                           nn::LayerNorm<width>, nn::Linear<width, vocab>>;
template <class P>
using full_model = nn::model<gpt, P, Shape<batch, context>, Host>;
template <class P>
using gpt_decoder = infer::decoder<gpt, P, batch, context, Host>;

// A trained-looking model: random parameters, the LayerNorms' too.
template <class P>
void scramble(full_model<P>& m, std::uint64_t seed)
{
    std::uint64_t k = seed;
    m.for_each_parameter([&](const std::string&, auto value, auto) {
        using V = decltype(value);
        const auto r = random_tensor<f32, typename V::shape>(++k, 0.5);
        assign(value, r + 0.0f);
    });
}

std::vector<float> as_f32(const auto& view)
{
    using V = std::remove_cvref_t<decltype(view)>;
    std::vector<float> out(V::shape::numel);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = convert<f32>(view.data()[i]);
    return out;
}

// Every position's logits, decoded token by token, against the full forward.
template <class P>
void check_cached_against_full(double tolerance)
{
    full_model<P> m(3);
    scramble(m, 40);
    m.eval();
    const auto tokens = random_tokens<Shape<batch, context>>(5, vocab);
    const std::vector<float> full = as_f32(m.forward(tokens));
    gpt_decoder<P> d(m);
    double worst = 0, scale = 0;
    for (std::size_t t = 0; t < context; ++t) {
        std::vector<i32> step(batch);
        for (std::size_t b = 0; b < batch; ++b) step[b] = tokens.data()[b * context + t];
        const std::vector<float> got = as_f32(d.step(step));
        for (std::size_t b = 0; b < batch; ++b) {
            REQUIRE(d.position(b) == t + 1);
            for (std::size_t v = 0; v < vocab; ++v) {
                const double want = full[(b * context + t) * vocab + v];
                worst = std::max(worst, std::abs(got[b * vocab + v] - want));
                scale = std::max(scale, std::abs(want));
            }
        }
    }
    INFO("largest difference " << worst << " of logits up to " << scale);
    CHECK(scale > 0.5);  // (logits that say something)
    CHECK(worst <= tolerance * scale);
}

}  // namespace

TEST_CASE("decoder: cached logits equal the full causal forward at every position (fp32, bf16_mixed)")
{
    check_cached_against_full<fp32>(1e-5);
    check_cached_against_full<bf16_mixed>(std::ldexp(1.0, -5));  // a few roundings to 8 bits apart
}

TEST_CASE("decoder: a sequence reset while the others go on is decoded as if alone; the context's end is refused")
{
    full_model<fp32> m(3);
    scramble(m, 41);
    m.eval();
    const auto first = random_tokens<Shape<batch, context>>(6, vocab);
    const auto second = random_tokens<Shape<batch, context>>(7, vocab);
    const std::vector<float> full_first = as_f32(m.forward(first));
    const std::vector<float> full_second = as_f32(m.forward(second));
    gpt_decoder<fp32> d(m);
    // Rows 0 and 2 decode `first`; row 1 decodes first's row 1 for 4
    // positions, then starts over with second's row 1.
    constexpr std::size_t restart = 4;
    std::size_t at1 = 0;
    for (std::size_t t = 0; t < context; ++t) {
        if (t == restart) {
            d.reset(1);
            at1 = 0;
            REQUIRE(d.position(1) == 0);
            REQUIRE(d.position(0) == restart);
        }
        std::vector<i32> step{first.data()[t], (t < restart ? first : second).data()[context + at1], first.data()[2 * context + t]};
        const std::vector<float> got = as_f32(d.step(step));
        for (std::size_t v = 0; v < vocab; ++v) {
            CHECK(std::abs(got[v] - full_first[t * vocab + v]) <= 1e-4);
            CHECK(std::abs(got[2 * vocab + v] - full_first[(2 * context + t) * vocab + v]) <= 1e-4);
            const auto& want = t < restart ? full_first : full_second;
            CHECK(std::abs(got[vocab + v] - want[(context + at1) * vocab + v]) <= 1e-4);
        }
        ++at1;
    }
    // Rows 0 and 2 are full: the next step is refused and moves nothing.
    const std::vector<i32> more{1, 2, 3};
    CHECK_THROWS_AS(d.step(more), tenet::error);
    CHECK(d.position(0) == context);
    CHECK(d.position(1) == context - restart);
    d.reset();
    CHECK(d.position(2) == 0);
    const std::vector<float> again = as_f32(d.step(std::vector<i32>{first.data()[0], first.data()[context], first.data()[2 * context]}));
    for (std::size_t v = 0; v < vocab; ++v) CHECK(std::abs(again[v] - full_first[v]) <= 1e-5);
    CHECK_THROWS_AS(d.reset(batch), tenet::error);
}

TEST_CASE("decoder: a bad token, or the wrong number of tokens, is refused with every position unchanged")
{
    gpt_decoder<fp32> d;
    d.step(std::vector<i32>{1, 2, 3});
    CHECK_THROWS_AS(d.step(std::vector<i32>{1, static_cast<i32>(vocab), 3}), tenet::index_error);
    CHECK_THROWS_AS(d.step(std::vector<i32>{1, -1, 3}), tenet::index_error);
    CHECK_THROWS_AS(d.step(std::vector<i32>{1, 2}), tenet::error);
    Tensor<i32, Shape<batch>, Host> tokens;
    tokens.data()[0] = 0;
    tokens.data()[1] = 99;
    tokens.data()[2] = 4;
    CHECK_THROWS_AS(d.step(tokens), tenet::index_error);
    for (std::size_t b = 0; b < batch; ++b) CHECK(d.position(b) == 1);
    tokens.data()[1] = 5;
    d.step(tokens);
    for (std::size_t b = 0; b < batch; ++b) CHECK(d.position(b) == 2);
}

namespace {

// The old way: the whole context recomputed for every new token (a model of
// one sequence; what follows the context cannot change it, attention being
// causal), greedy.
std::vector<i32> greedy_by_recomputing(full_model<fp32>& trained, std::vector<i32> text, std::size_t count)
{
    nn::model<gpt, fp32, Shape<1, context>, Host> one(0);
    nn::copy_parameters(one, trained);
    one.eval();
    std::vector<i32> out;
    Tensor<i32, Shape<1, context>, Host> window;
    while (out.size() < count && text.size() < context + 1) {
        assign(window.view(), 0);
        for (std::size_t i = 0; i < text.size() && i < context; ++i) window.data()[i] = text[i];
        const auto& logits = one.forward(window);
        const std::size_t n = std::min(text.size(), context);
        const auto next = static_cast<i32>(infer::greedy_token(logits.data() + (n - 1) * vocab, vocab));
        out.push_back(next);
        text.push_back(next);
    }
    return out;
}

}  // namespace

TEST_CASE("generate: greedy text equals recomputing the context per token, for prompts of different lengths")
{
    full_model<fp32> m(3);
    scramble(m, 42);
    gpt_decoder<fp32> d(m);
    const std::vector<std::vector<i32>> prompts{{4}, {1, 7, 2, 9}, {11, 3}};
    infer::generation_options o{.max_new_tokens = 5, .sample = {.temperature = 0.0f}};
    const auto out = infer::generate(d, prompts, o);
    REQUIRE(out.size() == 3);
    for (std::size_t i = 0; i < prompts.size(); ++i) {
        INFO("prompt " << i);
        CHECK(out[i].tokens == greedy_by_recomputing(m, prompts[i], 5));
        CHECK(out[i].end == infer::generation_end::max_new_tokens);
    }
    // Two prompts in a batch of three: the same text for each.
    const auto fewer = infer::generate(d, {prompts[1], prompts[2]}, o);
    CHECK(fewer[0].tokens == out[1].tokens);
    CHECK(fewer[1].tokens == out[2].tokens);
    // Until the context is full: the prompt's 4 and 6 new tokens (the last
    // chosen from the last position's logits).
    o.max_new_tokens = 100;
    const auto full = infer::generate(d, {prompts[1]}, o);
    CHECK(full[0].end == infer::generation_end::context);
    CHECK(full[0].tokens.size() == context + 1 - prompts[1].size());
    CHECK(full[0].tokens == greedy_by_recomputing(m, prompts[1], 100));
}

TEST_CASE("generate: stop tokens end a sequence (not kept); the same seed gives the same text; bad input refused")
{
    full_model<fp32> m(3);
    scramble(m, 43);
    gpt_decoder<fp32> d(m);
    const std::vector<std::vector<i32>> prompts{{4, 5}, {1}, {12, 0, 6}};
    infer::generation_options o{.max_new_tokens = 6, .sample = {.temperature = 1.5f, .seed = 9}};
    const auto a = infer::generate(d, prompts, o);
    const auto b = infer::generate(d, prompts, o);
    for (std::size_t i = 0; i < 3; ++i) CHECK(a[i].tokens == b[i].tokens);
    o.sample.seed = 10;
    const auto c = infer::generate(d, prompts, o);
    CHECK((a[0].tokens != c[0].tokens || a[1].tokens != c[1].tokens || a[2].tokens != c[2].tokens));
    // Stopping at the second token sequence 0 drew: its first alone is kept.
    o.sample.seed = 9;
    o.stop_tokens = {a[0].tokens[1]};
    const auto stopped = infer::generate(d, prompts, o);
    REQUIRE(stopped[0].end == infer::generation_end::stop_token);
    const auto first_stop = std::find(a[0].tokens.begin(), a[0].tokens.end(), a[0].tokens[1]) - a[0].tokens.begin();
    CHECK(stopped[0].tokens == std::vector<i32>(a[0].tokens.begin(), a[0].tokens.begin() + first_stop));
    o.stop_tokens.clear();
    o.max_new_tokens = 0;
    CHECK(infer::generate(d, prompts, o)[2].tokens.empty());
    o.max_new_tokens = 4;
    CHECK_THROWS_AS(infer::generate(d, {}, o), tenet::error);
    CHECK_THROWS_AS(infer::generate(d, {{1}, {2}, {3}, {4}}, o), tenet::error);
    CHECK_THROWS_AS(infer::generate(d, {{1}, {}}, o), tenet::error);
    CHECK_THROWS_AS(infer::generate(d, {std::vector<i32>(context + 1, 1)}, o), tenet::error);
    CHECK_THROWS_AS(infer::generate(d, {{1, static_cast<i32>(vocab)}}, o), tenet::index_error);
    o.sample.top_p = 0.0f;
    CHECK_THROWS_AS(infer::generate(d, {{1}}, o), tenet::error);
    o.sample.top_p = 1.0f;
    o.sample.temperature = -1.0f;
    CHECK_THROWS_AS(infer::generate(d, {{1}}, o), tenet::error);
}

namespace {

// Draws from a sampler over fixed logits, counted per token.
std::map<std::size_t, int> draws(const infer::sampling& s, const std::vector<float>& logits, int n)
{
    infer::token_sampler pick(s, 0);
    std::map<std::size_t, int> count;
    for (int i = 0; i < n; ++i) ++count[pick(logits.data(), logits.size())];
    return count;
}

// Each token's count within 5 standard deviations of n p, and no other token.
void check_frequencies(const std::map<std::size_t, int>& count, const std::map<std::size_t, double>& p, int n)
{
    for (const auto& [token, c] : count) CHECK(p.count(token) == 1);
    for (const auto& [token, q] : p) {
        const double expected = n * q, deviation = std::sqrt(n * q * (1 - q));
        const double got = count.count(token) ? count.at(token) : 0;
        INFO("token " << token << ": " << got << " draws, " << expected << " expected");
        CHECK(std::abs(got - expected) <= 5 * deviation + 1);
    }
}

}  // namespace

TEST_CASE("token_sampler: greedy, temperature, top-k and top-p against their definitions")
{
    // Probabilities 0.4, 0.1, 0.3, 0.15, 0.05 at temperature 1.
    const std::vector<float> logits{std::log(0.4f), std::log(0.1f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
    CHECK(infer::greedy_token(logits.data(), 5) == 0);
    const std::vector<float> tie{1.0f, 3.0f, 3.0f};
    CHECK(infer::greedy_token(tie.data(), 3) == 1);
    CHECK(draws({.temperature = 0.0f}, logits, 10) == std::map<std::size_t, int>{{0, 10}});
    CHECK(draws({.temperature = 2.0f, .top_k = 1}, logits, 10) == std::map<std::size_t, int>{{0, 10}});
    constexpr int n = 40000;
    check_frequencies(draws({.temperature = 1.0f, .seed = 1}, logits, n), {{0, 0.4}, {1, 0.1}, {2, 0.3}, {3, 0.15}, {4, 0.05}}, n);
    // top-k 2: tokens 0 and 2, renormalised
    check_frequencies(draws({.temperature = 1.0f, .top_k = 2, .seed = 2}, logits, n), {{0, 0.4 / 0.7}, {2, 0.3 / 0.7}}, n);
    // top-p 0.8: 0.4 + 0.3 + 0.15 = 0.85 is the first to reach it
    check_frequencies(draws({.temperature = 1.0f, .top_p = 0.8f, .seed = 3}, logits, n),
                      {{0, 0.4 / 0.85}, {2, 0.3 / 0.85}, {3, 0.15 / 0.85}}, n);
    // top-p below the largest probability: the largest alone
    CHECK(draws({.temperature = 1.0f, .top_p = 0.2f, .seed = 4}, logits, 50) == std::map<std::size_t, int>{{0, 50}});
    // temperature 2: probabilities proportional to sqrt(p)
    double z = 0;
    for (const double p : {0.4, 0.1, 0.3, 0.15, 0.05}) z += std::sqrt(p);
    check_frequencies(draws({.temperature = 2.0f, .seed = 5}, logits, n),
                      {{0, std::sqrt(0.4) / z}, {1, std::sqrt(0.1) / z}, {2, std::sqrt(0.3) / z}, {3, std::sqrt(0.15) / z},
                       {4, std::sqrt(0.05) / z}},
                      n);
    // The same seed and stream draw the same tokens; another stream others.
    infer::token_sampler a({.seed = 7}, 0), b({.seed = 7}, 0), c({.seed = 7}, 1);
    std::vector<std::size_t> ta, tb, tc;
    for (int i = 0; i < 64; ++i) {
        ta.push_back(a(logits.data(), 5));
        tb.push_back(b(logits.data(), 5));
        tc.push_back(c(logits.data(), 5));
    }
    CHECK(ta == tb);
    CHECK(ta != tc);
    std::vector<float> bad = logits;
    bad[3] = std::nanf("");
    CHECK_THROWS_AS(a(bad.data(), 5), tenet::error);
    bad[3] = INFINITY;
    CHECK_THROWS_AS(infer::token_sampler({.temperature = 0.0f}, 0)(bad.data(), 5), tenet::error);
}

TEST_CASE("PositionalEmbedding: sequences shorter than its table take its first rows; the rest of its gradient is zero")
{
    using net = nn::Sequential<nn::PositionalEmbedding<7, 5>>;
    nn::model<net, fp32, Shape<2, 3, 5>, Host> m(11);
    const auto x = random_tensor<f32, Shape<2, 3, 5>>(12);
    const auto dy = random_tensor<f32, Shape<2, 3, 5>>(13);
    const auto& y = m.forward(x);
    std::vector<float> table;
    m.for_each_parameter([&](const std::string&, auto value, auto) { table = as_f32(value); });
    for (std::size_t i = 0; i < 30; ++i) CHECK(y.data()[i] == x.data()[i] + table[i % 15]);
    for (std::size_t i = 0; i < 35; ++i) m.gradients()[i] = -777.0f;  // (poisoned)
    m.backward(dy);
    for (std::size_t i = 0; i < 35; ++i) {
        const float want = i < 15 ? dy.data()[i] + dy.data()[15 + i] : 0.0f;
        CHECK(m.gradients()[i] == want);
    }
}
