// Cached decoding on the device: infer::decoder's logits, step by step, equal
// the host decoder's over the same parameters (within the two backends'
// accumulation-order differences), with the step replayed as a CUDA Graph
// and run eagerly giving the same bits; a sequence reset on the device goes
// on as on the host; generate draws the same text from the same seed twice.
#include "model_compare.hpp"

#include <tenet/infer/infer.hpp>

#include <cstring>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;
namespace infer = tenet::infer;
using testing::random_tokens;

namespace {

constexpr std::size_t vocab = 40, context = 12, width = 32, batch = 4;
using block = nn::TransformerEncoderLayer<width, 4, 2 * width, /*Causal=*/true>;
using gpt = nn::Sequential<nn::Embedding<vocab, width>, nn::PositionalEmbedding<context, width>, block, block,
                           nn::LayerNorm<width>, nn::Linear<width, vocab>>;

template <class View>
std::vector<float> to_host_f32(const View& logits)
{
    std::vector<float> out(View::shape::numel);
    TENET_CUDA_CHECK(cudaMemcpy(out.data(), logits.data(), out.size() * sizeof(float), cudaMemcpyDeviceToHost));
    return out;
}

}  // namespace

TEST_CASE("gpu decoder: graph-replayed steps equal eager ones bit for bit and the host decoder's logits")
{
    nn::model<gpt, fp32, Shape<batch, context>, Host> trained(21);
    infer::decoder<gpt, fp32, batch, context, Host> host(trained);
    infer::decoder<gpt, fp32, batch, context, Device> graphed(trained), eager(trained);
    eager.use_graphs(false);
    CHECK(graphed.uses_graphs());
    const auto tokens = random_tokens<Shape<context, batch>>(22, vocab);
    for (std::size_t t = 0; t < context; ++t) {
        if (t == 5) {  // sequence 2 starts over everywhere
            host.reset(2);
            graphed.reset(2);
            eager.reset(2);
        }
        const std::vector<i32> step(tokens.data() + t * batch, tokens.data() + (t + 1) * batch);
        const auto want = host.step(step);
        const std::vector<float> g = to_host_f32(graphed.step(step));
        const std::vector<float> e = to_host_f32(eager.step(step));
        INFO("position " << t);
        CHECK(std::memcmp(g.data(), e.data(), g.size() * sizeof(float)) == 0);
        CHECK_RELATIVE_ERROR("decoded logits", g.data(), want.data(), g.size(), 1e-4);
    }
    CHECK(graphed.position(2) == context - 5);
}

TEST_CASE("gpu generate: the same seed draws the same text; greedy agrees with the host's")
{
    nn::model<gpt, fp32, Shape<batch, context>, Host> trained(23);
    infer::decoder<gpt, fp32, batch, context, Device> d(trained);
    infer::decoder<gpt, fp32, batch, context, Host> h(trained);
    const std::vector<std::vector<i32>> prompts{{3, 1, 4}, {15}, {9, 2}};
    infer::generation_options o{.max_new_tokens = 6, .sample = {.temperature = 0.9f, .top_k = 8, .seed = 5}};
    const auto a = infer::generate(d, prompts, o);
    const auto b = infer::generate(d, prompts, o);
    for (std::size_t i = 0; i < prompts.size(); ++i) CHECK(a[i].tokens == b[i].tokens);
    o.sample = {.temperature = 0.0f};
    const auto greedy_device = infer::generate(d, prompts, o);
    const auto greedy_host = infer::generate(h, prompts, o);
    for (std::size_t i = 0; i < prompts.size(); ++i) CHECK(greedy_device[i].tokens == greedy_host[i].tokens);
}
