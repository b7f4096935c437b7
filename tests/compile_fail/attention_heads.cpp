// Heads that do not divide the width: no whole number of features per head.
#include <tenet/tenet.hpp>
// expect: MultiHeadAttention_Dim_Heads_Heads_must_divide_Dim<
// expect-cxx: tenet: MultiHeadAttention<64, 5>: Heads must divide Dim
using net = tenet::nn::Sequential<tenet::nn::MultiHeadAttention<64, 5>>;
using out = net::output_shape<tenet::Shape<2, 8, 64>>;
out* shape_of_output = nullptr;
