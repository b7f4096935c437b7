// Training sequence models on the host: the trainer's key padding (lengths)
// against the model's forward on the same weights, bad tokens and lengths
// rejected before anything changes, evaluation with tokens and lengths, and
// take's guard for indices that could not be checked (a CUDA Graph capture
// on the device): NaN, never a read outside the table.
#include "model_testing.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;
using testing::random_tensor, testing::random_tokens;

namespace {

constexpr int V = 8;
constexpr std::size_t B = 4, T = 6;
using encoder = nn::Sequential<nn::Embedding<V, 16>, nn::PositionalEmbedding<T, 16>,
                               nn::TransformerEncoderLayer<16, 2, 32, false>, nn::LayerNorm<16>, nn::Linear<16, V>>;
using encoder_model = nn::model<encoder, fp32, Shape<B, T>, Host>;

static_assert(encoder_model::input_limit == V);
static_assert(nn::model<nn::Sequential<nn::Checkpointed<nn::Embedding<5, 4>, nn::Linear<4, 4>>>, fp32, Shape<2, 3>,
                        Host>::input_limit == 5);
static_assert(nn::model<nn::Sequential<nn::Linear<4, 4>>, fp32, Shape<2, 4>, Host>::input_limit == 0);

// A batch: tokens, next-token labels, real rows (the last sequence is
// padding, with garbage tokens) and lengths (the padding one garbage too).
struct batch {
    Tensor<i32, Shape<B, T>, Host> tokens = random_tokens<Shape<B, T>>(5, V);
    Tensor<i32, Shape<B, T>, Host> labels = random_tokens<Shape<B, T>>(6, V);
    Tensor<f32, Shape<B, T>, Host> valid;
    Tensor<i32, Shape<B>, Host> lengths;

    batch()
    {
        const int length[B] = {6, 3, 1, -40};
        for (std::size_t b = 0; b < B; ++b) {
            lengths.data()[b] = length[b];
            for (std::size_t s = 0; s < T; ++s) valid.data()[b * T + s] = b + 1 < B && int(s) < length[b] ? 1.0f : 0.0f;
        }
        for (std::size_t s = 0; s < T; ++s) tokens.data()[(B - 1) * T + s] = 1000 + int(s);
    }
};

// The mean cross-entropy over the real rows, in float64, of the model's
// forward on the batch as the trainer stages it (rows with valid 0 read
// token 0; a sequence without a real row has length 0).
double reference_loss(encoder_model& m, const batch& in, bool with_lengths)
{
    Tensor<i32, Shape<B, T>, Host> tokens;
    Tensor<i32, Shape<B>, Host> lengths;
    for (std::size_t b = 0; b < B; ++b) {
        lengths.data()[b] = b + 1 < B ? in.lengths.data()[b] : 0;
        for (std::size_t s = 0; s < T; ++s)
            tokens.data()[b * T + s] = in.valid.data()[b * T + s] != 0 ? in.tokens.data()[b * T + s] : 0;
    }
    const auto& y = with_lengths ? m.forward(tokens, lengths) : m.forward(tokens);
    double total = 0, rows = 0;
    for (std::size_t r = 0; r < B * T; ++r) {
        if (in.valid.data()[r] == 0) continue;
        double top = -1e300, sum = 0;
        for (int v = 0; v < V; ++v) top = std::max(top, double(y.data()[r * V + v]));
        for (int v = 0; v < V; ++v) sum += std::exp(double(y.data()[r * V + v]) - top);
        total += top + std::log(sum) - double(y.data()[r * V + in.labels.data()[r]]);
        rows += 1;
    }
    return total / rows;
}

template <class M>
std::vector<unsigned char> parameter_bytes(const M& m)
{
    std::vector<unsigned char> b(M::flat_numel * sizeof(typename M::storage_type));
    std::memcpy(b.data(), m.parameters(), b.size());
    return b;
}

}  // namespace

TEST_CASE("trainer: lengths reach the attention layers, as model::forward(x, lengths) on the same weights")
{
    const batch in;
    encoder_model twin(21);
    const double want = reference_loss(twin, in, true);
    const double unpadded = reference_loss(twin, in, false);
    INFO("with lengths " << want << ", without " << unpadded);
    REQUIRE(std::fabs(want - unpadded) > 1e-3);  // the lengths matter to this batch

    encoder_model m(21);
    train::trainer t(m, train::adamw{}, train::constant_lr{1e-3});
    t.step(in.tokens, in.labels, in.valid, in.lengths);
    CHECK(t.mean_loss() == doctest::Approx(want).epsilon(1e-5));

    // evaluation stages tokens and lengths as the step does (the weights moved: a twin of them)
    encoder_model moved(21);
    std::memcpy(moved.parameters(), m.parameters(), encoder_model::flat_numel * sizeof(f32));
    t.evaluate(in.tokens, in.labels, in.valid, in.lengths);
    CHECK(t.evaluation_loss() == doctest::Approx(reference_loss(moved, in, true)).epsilon(1e-5));
    t.reset_metrics();
    t.evaluate(in.tokens, in.labels, in.valid);
    CHECK(t.evaluation_loss() == doctest::Approx(reference_loss(moved, in, false)).epsilon(1e-5));
}

TEST_CASE("trainer: a real row's bad token or length is an index_error before anything changes")
{
    encoder_model m(22);
    train::trainer t(m, train::adamw{}, train::constant_lr{1e-3});
    const batch good;
    t.step(good.tokens, good.labels, good.valid, good.lengths);
    const double first = t.mean_loss();
    const auto before = parameter_bytes(m);
    const std::uint64_t step = m.step();

    batch bad_token;
    bad_token.tokens.data()[T + 2] = V;  // sequence 1, a real row
    CHECK_THROWS_AS(t.step(bad_token.tokens, bad_token.labels, bad_token.valid, bad_token.lengths), index_error);
    CHECK_THROWS_WITH(t.step(bad_token.tokens, bad_token.labels, bad_token.valid),
                      doctest::Contains("trainer: a real row's token: index 8 is out of range [0, 8)"));
    batch negative_token;
    negative_token.tokens.data()[0] = -1;
    CHECK_THROWS_AS(t.evaluate(negative_token.tokens, negative_token.labels, negative_token.valid), index_error);
    for (const int length : {7, -1}) {
        batch bad_length;
        bad_length.lengths.data()[1] = length;
        CHECK_THROWS_AS(t.step(bad_length.tokens, bad_length.labels, bad_length.valid, bad_length.lengths),
                        index_error);
    }
    CHECK(parameter_bytes(m) == before);
    CHECK(m.step() == step);
    CHECK(t.mean_loss() == first);  // no loss was counted

    // and the trainer carries on: the same step again gives the loss it gave after the first
    encoder_model twin(22);
    train::trainer u(twin, train::adamw{}, train::constant_lr{1e-3});
    u.step(good.tokens, good.labels, good.valid, good.lengths);
    CHECK(u.mean_loss() == first);
    u.step(good.tokens, good.labels, good.valid, good.lengths);
    t.step(good.tokens, good.labels, good.valid, good.lengths);
    CHECK(t.mean_loss() == u.mean_loss());
    CHECK(t.steps_in_window() == 2);
    CHECK(parameter_bytes(m) == parameter_bytes(twin));
}

TEST_CASE("take's guard: an index that could not be checked reads NaN, element by element and by chunks")
{
    // (On the host every index is checked before take runs; the guard is what
    // a CUDA Graph capture on the device relies on, so it is tested directly.)
    auto table = random_tensor<f32, Shape<5, 16>>(7);
    Tensor<i32, Shape<4>, Host> indices;
    const int picked[4] = {3, -1, 5, 0};
    std::memcpy(indices.data(), picked, sizeof picked);
    exec_context<Host> context(current_stream());
    const auto table_eval = table.prepare(context);
    const auto index_eval = indices.prepare(context);
    const internal::take_eval<decltype(table_eval), decltype(index_eval), 5, 4, 16> gather{table_eval, index_eval};
    for (std::size_t i = 0; i < 4 * 16; ++i) {
        const int k = picked[i / 16];
        const f32 got = gather.at(i);
        if (k < 0 || k >= 5) CHECK(std::isnan(got));
        else CHECK(got == table.data()[k * 16 + i % 16]);
    }
    for (std::size_t i = 0; i < 4 * 16; i += 8) {
        const auto chunk = gather.chunk<8>(i);
        const int k = picked[i / 16];
        for (std::size_t j = 0; j < 8; ++j) {
            if (k < 0 || k >= 5) CHECK(std::isnan(chunk[j]));
            else CHECK(chunk[j] == table.data()[k * 16 + (i + j) % 16]);
        }
    }
}
