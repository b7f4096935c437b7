// A model that starts with an Embedding fed floating-point values instead of
// i32 tokens: one error at the model's forward, naming both types.
#include <tenet/tenet.hpp>
// expect: model_takes_i32_tokens_not<
// expect-cxx: tenet: the model takes i32 inputs (its input_type), not f32: cast the input (i32 tokens are for a model whose first layer is an Embedding)
// expect-cuda: model_takes_i32_tokens_not<tenet::Tensor<float, tenet::Shape<2UL, 5UL>
using net = tenet::nn::Sequential<tenet::nn::Embedding<10, 4>>;
const auto& run(tenet::nn::model<net, tenet::fp32, tenet::Shape<2, 5>, tenet::Host>& m,
                const tenet::Tensor<float, tenet::Shape<2, 5>, tenet::Host>& tokens)
{
    return m.forward(tokens);
}
