// A BatchNorm2d for another number of channels than its input has.
#include <tenet/tenet.hpp>
// expect: BatchNorm2d_takes_NHWC_images_Shape_N_H_W_Channels_not<16
// expect-cxx: tenet: BatchNorm2d<16> fed Shape<2,8,8,8>: it takes NHWC images, Shape<N, H, W, 16>
using net = tenet::nn::Sequential<tenet::nn::Conv2d<1, 8, 3, 1, 1>, tenet::nn::BatchNorm2d<16>>;
using model = tenet::nn::model<net, tenet::fp32, tenet::Shape<2, 8, 8, 1>, tenet::Host>;
model make() { return model(1); }
