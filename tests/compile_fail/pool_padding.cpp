// A pooling layer padded by more than half its window (PyTorch rejects it too).
#include <tenet/tenet.hpp>
// expect: MaxPool2d_AvgPool2d_take_NHWC_images_with_padding_at_most_half_the_kernel_not<
// expect-cxx: tenet: MaxPool2d<2, 2, 2> fed Shape<2,8,8,4>: padding 2 must be at most half the kernel 2
using net = tenet::nn::Sequential<tenet::nn::MaxPool2d<2, 2, 2>>;
using model = tenet::nn::model<net, tenet::fp32, tenet::Shape<2, 8, 8, 4>, tenet::Host>;
model make() { return model(1); }
