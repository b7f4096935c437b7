// Images too small for the second pooling: its error is the only one. The
// Conv2d after it, fed a stand-in it rejects too, is passed over in silence.
#include <tenet/tenet.hpp>
// expect: MaxPool2d_AvgPool2d_take_NHWC_images_with_padding_at_most_half_the_kernel_not<
// expect-cxx: tenet: MaxPool2d<2, 2, 0> fed Shape<4,1,1,8>: the 2x2 window is larger than the padded input
// expect-cuda: MaxPool2d_AvgPool2d_take_NHWC_images_with_padding_at_most_half_the_kernel_not<true, 2UL, 2UL, 0UL, tenet::Shape<4UL, 1UL, 1UL, 8UL>>
using namespace tenet;
using net = nn::Sequential<nn::Conv2d<1, 8, 3>, nn::ReLU, nn::MaxPool2d<2>, nn::MaxPool2d<2>, nn::Conv2d<8, 16, 3>,
                           nn::ReLU, nn::GlobalAvgPool2d>;
using model_t = nn::model<net, fp32, Shape<4, 4, 4, 1>, Host>;
void run(model_t& m)
{
    train::trainer<model_t, train::adamw> t(m);
}
