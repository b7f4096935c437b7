// y += e with e of a shape that does not broadcast to y's.
#include <tenet/tenet.hpp>
// expect: shape_mismatch_in_compound_assignment<
// expect-cxx: tenet: shape mismatch in compound assignment: destination Shape<2,3> vs expression Shape<3,2>
// expect-cuda: shape_mismatch_in_compound_assignment<tenet::Shape<2UL, 3UL>, tenet::Shape<3UL, 2UL>>
void f(tenet::Tensor<float, tenet::Shape<2, 3>, tenet::Host>& y, const tenet::Tensor<float, tenet::Shape<3, 2>, tenet::Host>& x)
{
    y += x * 2.0f;
}
