// A PositionalEmbedding for sequences of up to 16 fed sequences of 20.
#include <tenet/tenet.hpp>
// expect: PositionalEmbedding_Seq_Dim_needs_last_extent_Dim_and_at_most_Seq_positions_not<
// expect-cxx: tenet: PositionalEmbedding<16, 8> fed Shape<2,20,8>: its last extent must be 8 and the one before at most 16
using net = tenet::nn::Sequential<tenet::nn::Embedding<50, 8>, tenet::nn::PositionalEmbedding<16, 8>>;
using out = net::output_shape<tenet::Shape<2, 20>>;
out* shape_of_output = nullptr;
