// A Residual whose layers change the shape: x + f(x) has no meaning.
#include <tenet/tenet.hpp>
// expect: Residual_layers_must_keep_the_shape_In_not_Out<
// expect-cxx: tenet: Residual: its layers must keep the shape: fed Shape<2,8> they give Shape<2,4>
using block = tenet::nn::Residual<tenet::nn::Linear<8, 4>>;
using out = block::output_shape<tenet::Shape<2, 8>>;
out* shape_of_output = nullptr;
