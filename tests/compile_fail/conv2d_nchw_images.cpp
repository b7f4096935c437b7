// A small CNN fed NCHW images (PyTorch's layout), trained as a new user
// would: one error, the Conv2d's, naming the shape and the NHWC layout; the
// layers after it, the model and the trainer add none.
#include <tenet/tenet.hpp>
// expect: Conv2d_takes_NHWC_images_with_InChannels_last_and_Groups_dividing_the_channels_not<
// expect-cxx: tenet: Conv2d<1, 8, 3, 1, 1, 1, 1> fed Shape<16,1,28,28>: its last extent (channels) must be 1 (NCHW images? tenet takes NHWC: permute<0, 2, 3, 1>(x))
// expect-cuda: Conv2d_takes_NHWC_images_with_InChannels_last_and_Groups_dividing_the_channels_not<tenet::nn::detail::conv_misfit::channels, 1UL, 8UL, 3UL, 1UL, 1UL, 1UL, 1UL, tenet::Shape<16UL, 1UL, 28UL, 28UL>>
using namespace tenet;
using net = nn::Sequential<nn::Conv2d<1, 8, 3, 1, 1>, nn::ReLU, nn::MaxPool2d<2>, nn::Conv2d<8, 10, 3, 1, 1>, nn::ReLU,
                           nn::MaxPool2d<2>, nn::GlobalAvgPool2d>;  // (no Linear: the CUDA run has no Eigen)
using model_t = nn::model<net, fp32, Shape<16, 1, 28, 28>, Host>;
void run(model_t& m, const Tensor<f32, Shape<16, 1, 28, 28>, Host>& images, const Tensor<i32, Shape<16>, Host>& labels,
         const Tensor<f32, Shape<16>, Host>& valid)
{
    train::trainer<model_t, train::adamw> t(m);
    t.step(images, labels, valid);
}
