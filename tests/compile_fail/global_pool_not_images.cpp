// Global average pooling of rows that are not images.
#include <tenet/tenet.hpp>
// expect: global_pool_failure<
// expect-cxx: tenet: GlobalAvgPool2d fed Shape<64,10>: it takes NHWC images, Shape<N, H, W, C>
using net = tenet::nn::Sequential<tenet::nn::Linear<784, 10>, tenet::nn::GlobalAvgPool2d>;
using model = tenet::nn::model<net, tenet::fp32, tenet::Shape<64, 784>, tenet::Host>;
model make() { return model(1); }
