// Assigning an expression of another shape.
#include <tenet/tenet.hpp>
// expect: shape_mismatch_in_assignment<
// expect-cxx: tenet: shape mismatch in assignment: destination Shape<2,3> vs expression Shape<2,4>
// expect-cuda: shape_mismatch_in_assignment<tenet::Shape<2UL, 3UL>, tenet::Shape<2UL, 4UL>>
void f(tenet::Tensor<float, tenet::Shape<2, 3>, tenet::Host>& y, const tenet::Tensor<float, tenet::Shape<2, 4>, tenet::Host>& x)
{
    y = x * 2.0f;
}
