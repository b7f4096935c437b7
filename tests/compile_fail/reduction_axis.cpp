// Reducing over an axis the shape does not have.
#include <tenet/tenet.hpp>
// expect: reduction_axis_out_of_range_for_shape<
// expect-cxx: tenet: reduction axis 2 out of range for Shape<3,4>
// expect-cuda: reduction_axis_out_of_range_for_shape<tenet::Shape<3UL, 4UL>, 2>
auto f(const tenet::Tensor<float, tenet::Shape<3, 4>, tenet::Host>& x) { return tenet::sum<2>(x); }
