// A decoder over attention that is not causal: a later token would change
// what the earlier positions attend to, so the cache would be wrong.
#include <tenet/tenet.hpp>
// expect: tenet: MultiHeadAttention: only causal attention decodes token by token
// expect-cxx: tenet: MultiHeadAttention: only causal attention decodes token by token
using net = tenet::nn::Sequential<tenet::nn::Embedding<50, 8>, tenet::nn::MultiHeadAttention<8, 2>, tenet::nn::Linear<8, 50>>;
tenet::infer::decoder<net, tenet::fp32, 2, 16, tenet::Host> d;
