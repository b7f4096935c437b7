// y += e with e of a shape that does not broadcast to y's.
#include <tenet/tenet.hpp>
// expect: tenet: shape mismatch in compound assignment
// expect-errors: 1
// expect-cxx: tenet: shape mismatch in compound assignment: destination Shape<2,3> vs expression Shape<3,2>
// expect-cuda: Shape<3UL, 2UL>
void f(tenet::Tensor<float, tenet::Shape<2, 3>, tenet::Host>& y, const tenet::Tensor<float, tenet::Shape<3, 2>, tenet::Host>& x)
{
    y += x * 2.0f;
}
