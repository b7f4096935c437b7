// A gradient destination whose shape is not its variable's.
#include <tenet/tenet.hpp>
// expect: gradient_destination_must_have_the_variable_shape<1
// expect-cxx: tenet: the gradient of var<1> has its shape: destination Shape<4,3> vs variable Shape<3>
// expect-cuda: gradient_destination_must_have_the_variable_shape<1UL, tenet::Shape<4UL, 3UL>, tenet::Shape<3UL>>
using namespace tenet;
void f(const Tensor<float, Shape<4, 3>, Host>& x, const Tensor<float, Shape<3>, Host>& b,
       Tensor<float, Shape<4, 3>, Host>& dx, Tensor<float, Shape<4, 3>, Host>& db)
{
    tie(dx, db) = gradients(tanh(var<0>(x) + var<1>(b)), 1.0f);
}
