// A PositionalEmbedding for sequences of 16 fed sequences of 12.
#include <tenet/tenet.hpp>
// expect: PositionalEmbedding_Seq_Dim_needs_last_two_extents_Seq_Dim_not<
// expect-cxx: tenet: PositionalEmbedding<16, 8> fed Shape<2,12,8>: its last two extents must be 16, 8
using net = tenet::nn::Sequential<tenet::nn::Embedding<50, 8>, tenet::nn::PositionalEmbedding<16, 8>>;
using out = net::output_shape<tenet::Shape<2, 12>>;
out* shape_of_output = nullptr;
