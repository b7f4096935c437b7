// A Conv2d whose (dilated) kernel is larger than the padded input.
#include <tenet/tenet.hpp>
// expect: Conv2d_takes_NHWC_images_with_InChannels_last_and_Groups_dividing_the_channels_not<
// expect-cxx: tenet: Conv2d<1, 8, 3, 1, 1, 3, 1> fed Shape<2,4,4,1>: the kernel spans 7 pixels, more than the padded input (padding 1)
using net = tenet::nn::Sequential<tenet::nn::Conv2d<1, 8, 3, 1, 1, 3>>;
using model = tenet::nn::model<net, tenet::fp32, tenet::Shape<2, 4, 4, 1>, tenet::Host>;
model make() { return model(1); }
