// A Conv2d fed images with another number of channels.
#include <tenet/tenet.hpp>
// expect: Conv2d_takes_NHWC_images_with_InChannels_last_and_Groups_dividing_the_channels_not<
// expect-cxx: tenet: Conv2d<3, 8, 3, 1, 0, 1, 1> fed Shape<2,28,28,1>: its last extent (channels) must be 3
using net = tenet::nn::Sequential<tenet::nn::Conv2d<3, 8, 3>, tenet::nn::ReLU>;
using model = tenet::nn::model<net, tenet::fp32, tenet::Shape<2, 28, 28, 1>, tenet::Host>;
model make() { return model(1); }
