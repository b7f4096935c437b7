// Negative axes count from the end, but not past the start.
#include <tenet/tenet.hpp>
// expect: reduction_axis_out_of_range_for_shape<
// expect-cxx: tenet: reduction axis -3 out of range for Shape<3,4>
// expect-cuda: reduction_axis_out_of_range_for_shape<tenet::Shape<3UL, 4UL>, -3>
auto f(const tenet::Tensor<float, tenet::Shape<3, 4>, tenet::Host>& x) { return tenet::max<-3>(x, tenet::keepdims); }
