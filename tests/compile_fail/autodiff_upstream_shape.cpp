// An upstream gradient that does not broadcast to the expression's shape.
#include <tenet/tenet.hpp>
// expect: gradients_dy_does_not_broadcast_to_the_shape_of_e<
// expect-cxx: tenet: gradients(e, dy): dy of shape Shape<4> does not broadcast to the shape of e, Shape<4,3>
// expect-cuda: gradients_dy_does_not_broadcast_to_the_shape_of_e<tenet::Shape<4UL, 3UL>, tenet::Shape<4UL>>
using namespace tenet;
void f(const Tensor<float, Shape<4, 3>, Host>& x, const Tensor<float, Shape<4>, Host>& dy,
       Tensor<float, Shape<4, 3>, Host>& dx)
{
    tie(dx) = gradients(exp(var<0>(x)), dy);
}
