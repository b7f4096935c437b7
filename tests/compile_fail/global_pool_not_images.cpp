// Global average pooling of rows that are not images.
#include <tenet/tenet.hpp>
// expect: GlobalAvgPool2d_takes_NHWC_images_Shape_N_H_W_C_not<
// expect-cxx: tenet: GlobalAvgPool2d fed Shape<64,10>: it takes NHWC images, Shape<N, H, W, C>
using net = tenet::nn::Sequential<tenet::nn::Linear<784, 10>, tenet::nn::GlobalAvgPool2d>;
using model = tenet::nn::model<net, tenet::fp32, tenet::Shape<64, 784>, tenet::Host>;
model make() { return model(1); }
