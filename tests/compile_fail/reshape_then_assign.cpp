// A reshape that changes the element count, used in an assignment: the
// reshape's error is the only one (no follow-on shape mismatch).
#include <tenet/tenet.hpp>
// expect: reshape_changes_the_element_count<
// expect-cxx: tenet: reshape changes the element count: Shape<2,3> has 6, Shape<7> has 7
// expect-cuda: reshape_changes_the_element_count<tenet::Shape<2UL, 3UL>, tenet::Shape<7UL>>
void f(const tenet::Tensor<float, tenet::Shape<2, 3>, tenet::Host>& x, tenet::Tensor<float, tenet::Shape<7>, tenet::Host>& y)
{
    y = tenet::reshape<tenet::Shape<7>>(x) * 2.0f;
}
