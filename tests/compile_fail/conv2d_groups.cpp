// A Conv2d whose groups do not divide its channels.
#include <tenet/tenet.hpp>
// expect: Conv2d_takes_NHWC_images_with_InChannels_last_and_Groups_dividing_the_channels_not<
// expect-cxx: tenet: Conv2d<6, 8, 3, 1, 1, 1, 4> fed Shape<2,8,8,6>: Groups 4 must divide InChannels 6 and OutChannels 8
using net = tenet::nn::Sequential<tenet::nn::Conv2d<6, 8, 3, 1, 1, 1, 4>>;
using model = tenet::nn::model<net, tenet::fp32, tenet::Shape<2, 8, 8, 6>, tenet::Host>;
model make() { return model(1); }
