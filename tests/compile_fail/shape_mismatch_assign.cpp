// Assigning an expression of another shape.
#include <tenet/tenet.hpp>
// expect: tenet: shape mismatch in assignment
// expect-cxx: tenet: shape mismatch in assignment: destination Shape<2,3> vs expression Shape<2,4>
// expect-cuda: Shape<2UL, 4UL>
void f(tenet::Tensor<float, tenet::Shape<2, 3>, tenet::Host>& y, const tenet::Tensor<float, tenet::Shape<2, 4>, tenet::Host>& x)
{
    y = x * 2.0f;
}
