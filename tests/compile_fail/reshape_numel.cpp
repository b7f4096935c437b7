// A reshape must keep the element count.
#include <tenet/tenet.hpp>
// expect: reshape_changes_the_element_count<
// expect-cxx: tenet: reshape changes the element count: Shape<2,3> has 6, Shape<7> has 7
// expect-cuda: reshape_changes_the_element_count<tenet::Shape<2UL, 3UL>, tenet::Shape<7UL>>
auto f(const tenet::Tensor<float, tenet::Shape<2, 3>, tenet::Host>& x) { return tenet::reshape<tenet::Shape<7>>(x); }
