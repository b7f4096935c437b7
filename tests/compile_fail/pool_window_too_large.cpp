// An average pool whose window is larger than the image it pools.
#include <tenet/tenet.hpp>
// expect: MaxPool2d_AvgPool2d_take_NHWC_images_with_padding_at_most_half_the_kernel_not<
// expect-cxx: tenet: AvgPool2d<4, 4, 0> fed Shape<2,3,3,4>: the 4x4 window is larger than the padded input
using net = tenet::nn::Sequential<tenet::nn::AvgPool2d<4>>;
using model = tenet::nn::model<net, tenet::fp32, tenet::Shape<2, 3, 3, 4>, tenet::Host>;
model make() { return model(1); }
