// A Conv2d fed rows of features instead of NHWC images (forgot a reshape).
#include <tenet/tenet.hpp>
// expect: Conv2d_takes_NHWC_images_with_InChannels_last_and_Groups_dividing_the_channels_not<
// expect-cxx: tenet: Conv2d<1, 32, 3, 1, 1, 1, 1> fed Shape<64,784>: it takes NHWC images, Shape<N, H, W, C>
using net = tenet::nn::Sequential<tenet::nn::Conv2d<1, 32, 3, 1, 1>, tenet::nn::ReLU>;
using model = tenet::nn::model<net, tenet::fp32, tenet::Shape<64, 784>, tenet::Host>;
model make() { return model(1); }
