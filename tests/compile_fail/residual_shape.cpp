// A Residual whose layers change the shape: x + f(x) has no meaning.
#include <tenet/tenet.hpp>
// expect: residual_shape_failure<
// expect-cxx: tenet: Residual: its layers must keep the shape: fed Shape<2,8> they give Shape<2,4>
using block = tenet::nn::Residual<tenet::nn::Linear<8, 4>>;
using out = block::output_shape<tenet::Shape<2, 8>>;
out* shape_of_output = nullptr;
