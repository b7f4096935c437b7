// An Embedding fed floating-point values instead of i32 tokens.
#include <tenet/tenet.hpp>
// expect: embedding_input_failure<
// expect-cxx: tenet: Embedding<10, 4> takes integer tokens (i32): cast the input, or put the Embedding first
using net = tenet::nn::Sequential<tenet::nn::Embedding<10, 4>>;
const auto& run(tenet::nn::model<net, tenet::fp32, tenet::Shape<2, 5>, tenet::Host>& m,
                const tenet::Tensor<float, tenet::Shape<2, 5>, tenet::Host>& tokens)
{
    return m.forward(tokens);
}
