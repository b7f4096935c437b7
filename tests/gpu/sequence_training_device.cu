// Training token models on the device: a causal transformer (the char LM's
// kind) with key padding, captured as a CUDA Graph, steps exactly as it does
// eagerly and as its host twin does within rounding; inside a capture, where
// indices cannot be read back, a bad token reads NaN (take) and its row is left
// out of the scatter-add, so the step counts as non-finite and is skipped on
// request, and check_batches still throws before anything changes.
#include "model_compare.hpp"

#include <tenet/train/train.hpp>

#include <cmath>
#include <cstring>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;
namespace train = tenet::train;
using testing::random_tokens;

namespace {

constexpr int V = 24;
constexpr std::size_t B = 6, T = 16;
using char_lm = nn::Sequential<nn::Embedding<V, 32>, nn::PositionalEmbedding<T, 32>,
                               nn::TransformerEncoderLayer<32, 4, 64, true>, nn::TransformerEncoderLayer<32, 4, 64, true>,
                               nn::LayerNorm<32>, nn::Linear<32, V>>;
template <class P, class Place>
using lm_model = nn::model<char_lm, P, Shape<B, T>, Place>;

// One batch of next-token prediction with its buffers in Place: the last
// sequence is padding, two others end early (key padding).
template <class Place>
struct token_batch {
    Tensor<i32, Shape<B, T>, Place> tokens, labels;
    Tensor<f32, Shape<B, T>, Place> valid;
    Tensor<i32, Shape<B>, Place> lengths;

    void fill(std::uint64_t seed, stream_ref stream)
    {
        auto t = random_tokens<Shape<B, T>>(seed, V);
        Tensor<i32, Shape<B, T>, Host> next;
        Tensor<f32, Shape<B, T>, Host> real;
        Tensor<i32, Shape<B>, Host> length;
        const int cut[B] = {16, 9, 16, 1, 12, 0};
        for (std::size_t b = 0; b < B; ++b) {
            length.data()[b] = cut[b];
            for (std::size_t s = 0; s < T; ++s) {
                next.data()[b * T + s] = s + 1 < T ? t.data()[b * T + s + 1] : 0;
                real.data()[b * T + s] = int(s) < cut[b] ? 1.0f : 0.0f;
            }
        }
        copy(tokens, t, stream);
        copy(labels, next, stream);
        copy(valid, real, stream);
        copy(lengths, length, stream);
        stream.synchronize();
    }
};

// The parameters' bytes (any storage type), for bitwise comparisons.
template <class M>
std::vector<unsigned char> parameters_of(const M& m)
{
    std::vector<unsigned char> p(M::flat_numel * sizeof(typename M::storage_type));
    TENET_CUDA_CHECK(cudaMemcpy(p.data(), m.parameters(), p.size(), cudaMemcpyDefault));
    return p;
}

void set_token(Tensor<i32, Shape<B, T>, Device>& tokens, std::size_t at, i32 value)
{
    TENET_CUDA_CHECK(cudaMemcpy(tokens.data() + at, &value, sizeof value, cudaMemcpyDefault));
}

}  // namespace

TEST_CASE("gpu trainer: a captured causal token transformer with key padding steps as eagerly, and as the host")
{
    lm_model<fp32, Device> eager_net(31), graph_net(31);
    lm_model<fp32, Host> host_net(31);
    train::trainer eager(eager_net, train::adamw{}, train::constant_lr{1e-3f});
    train::trainer graphed(graph_net, train::adamw{}, train::constant_lr{1e-3f});
    train::trainer host(host_net, train::adamw{}, train::constant_lr{1e-3f});
    graphed.capture();
    token_batch<Device> batch;  // one set of buffers: the graph reads whatever they hold
    token_batch<Host> host_batch;
    for (int step = 0; step < 6; ++step) {
        batch.fill(40 + step, graphed.stream());
        host_batch.fill(40 + step, current_stream());
        eager.step(batch.tokens, batch.labels, batch.valid, batch.lengths);
        graphed.step(batch.tokens, batch.labels, batch.valid, batch.lengths);
        host.step(host_batch.tokens, host_batch.labels, host_batch.valid, host_batch.lengths);
        eager.stream().synchronize();
        graphed.stream().synchronize();
        CHECK(parameters_of(eager_net) == parameters_of(graph_net));
    }
    CHECK(eager.mean_loss() == graphed.mean_loss());
    // (AdamW's first steps move each weight by about the learning rate
    // whatever its gradient's size, so rounding shows more than in one gradient.)
    std::vector<f32> device_parameters(decltype(graph_net)::flat_numel);
    std::memcpy(device_parameters.data(), parameters_of(graph_net).data(), device_parameters.size() * sizeof(f32));
    CHECK_RELATIVE_ERROR("transformer parameters after captured steps", device_parameters.data(), host_net.parameters(),
                         device_parameters.size(), 1e-3);
}

TEST_CASE("gpu trainer: in a captured step a bad token makes the step non-finite; check_batches throws first")
{
    train::trainer_options options;
    options.optimizer.skip_nonfinite = true;
    lm_model<bf16_mixed, Device> net(32);
    train::trainer t(net, train::adamw{}, train::constant_lr{1e-3f}, options);
    t.capture();
    token_batch<Device> batch;
    for (int step = 0; step < 2; ++step) {  // warm-up, then the capture
        batch.fill(50 + step, t.stream());
        t.step(batch.tokens, batch.labels, batch.valid, batch.lengths);
    }
    t.stream().synchronize();
    const auto before = parameters_of(net);
    batch.fill(52, t.stream());
    set_token(batch.tokens, T + 3, V);  // a real row of sequence 1
    t.step(batch.tokens, batch.labels, batch.valid, batch.lengths);  // replayed: nothing can throw
    t.stream().synchronize();
    CHECK(t.nonfinite_steps() == 1);
    CHECK(parameters_of(net) == before);
    set_token(batch.tokens, T + 3, -5);
    t.step(batch.tokens, batch.labels, batch.valid, batch.lengths);
    t.stream().synchronize();
    CHECK(t.nonfinite_steps() == 2);
    CHECK(parameters_of(net) == before);
    batch.fill(53, t.stream());
    set_token(batch.tokens, 5 * T + 2, 999);  // the padding sequence: staged as token 0, harmless
    t.step(batch.tokens, batch.labels, batch.valid, batch.lengths);
    t.stream().synchronize();
    CHECK(t.nonfinite_steps() == 2);
    CHECK(parameters_of(net) != before);

    train::trainer_options checked = options;
    checked.check_batches = true;
    lm_model<bf16_mixed, Device> checked_net(33);
    train::trainer c(checked_net, train::adamw{}, train::constant_lr{1e-3f}, checked);
    c.capture();
    for (int step = 0; step < 2; ++step) {
        batch.fill(60 + step, c.stream());
        c.step(batch.tokens, batch.labels, batch.valid, batch.lengths);
    }
    c.stream().synchronize();
    const auto checked_before = parameters_of(checked_net);
    const std::uint64_t steps = checked_net.step();
    set_token(batch.tokens, 2 * T + 7, V);
    CHECK_THROWS_AS(c.step(batch.tokens, batch.labels, batch.valid, batch.lengths), index_error);
    batch.fill(62, c.stream());
    const i32 too_long = T + 1;
    TENET_CUDA_CHECK(cudaMemcpy(batch.lengths.data() + 1, &too_long, sizeof too_long, cudaMemcpyDefault));
    CHECK_THROWS_AS(c.step(batch.tokens, batch.labels, batch.valid, batch.lengths), index_error);
    CHECK(parameters_of(checked_net) == checked_before);
    CHECK(checked_net.step() == steps);
    CHECK(c.nonfinite_steps() == 0);
}

TEST_CASE("device take and scatter_add_rows captured in a graph: a bad index reads NaN and adds nothing")
{
    const auto table = testing::random_host<f32, Shape<20, 64>>(70);
    auto tokens = random_tokens<Shape<4, 8>>(71, 20);
    const auto src = testing::random_host<f32, Shape<4, 8, 64>>(72);
    const auto table_d = testing::to_device(table);
    auto tokens_d = testing::to_device(tokens);
    const auto src_d = testing::to_device(src);
    Tensor<f32, Shape<4, 8, 64>, Device> gathered;
    Tensor<f32, Shape<20, 64>, Device> sums;
    tenet::stream s;
    train::cuda_graph graph;
    {
        stream_scope on(s);
        graph.capture(s, [&] {
            gathered = take<0>(table_d, tokens_d);
            sums = table_d;
            scatter_add_rows(sums.view(), tokens_d, src_d);
        });
    }
    tokens.data()[5] = 20;
    tokens.data()[17] = -3;
    TENET_CUDA_CHECK(cudaMemcpy(tokens_d.data(), tokens.data(), sizeof(i32) * 32, cudaMemcpyDefault));
    graph.launch(s);
    s.synchronize();
    const auto got = testing::to_host(gathered);
    const auto got_sums = testing::to_host(sums);
    Tensor<f32, Shape<20, 64>, Host> want_sums;
    want_sums = table;
    for (std::size_t j = 0; j < 32; ++j) {
        const int k = tokens.data()[j];
        for (std::size_t c = 0; c < 64; ++c) {
            if (k < 0 || k >= 20) {
                CHECK(std::isnan(got.data()[j * 64 + c]));
            } else {
                CHECK(got.data()[j * 64 + c] == table.data()[k * 64 + c]);
                want_sums.data()[k * 64 + c] += src.data()[j * 64 + c];  // in j order, as the scatter adds
            }
        }
    }
    CHECK_BITWISE_EQUAL("scatter_add_rows sums in a captured graph", got_sums.data(), want_sums.data(), 20 * 64);
}
