// The library's implementations of its public protocols, checked against
// their concepts (tensor/expression.hpp, nn/layer.hpp, train/loss.hpp): each
// kind of expression node and the evaluator it prepares (on the host, and on
// the device when nvcc compiles this file), the built-in layer specs under
// each training policy, and the losses. A member renamed or dropped anywhere
// fails this file at compile time.
#include "tensor_testing.hpp"

#include <ratio>

using namespace tenet;

namespace protocol_checks {

using context = exec_context<Host>;

// An expression in the full sense: its types, and a prepare giving an evaluator.
template <class E>
constexpr bool conforms = expression<std::remove_cvref_t<E>> && evaluable<std::remove_cvref_t<E>, context>;

struct halve {
    template <class X>
    TENET_HD auto operator()(X x) const
    {
        return x * 0.5f;
    }
    template <std::size_t>
    TENET_HD float derivative(float) const
    {
        return 0.5f;
    }
};

}  // namespace protocol_checks

// Operands, only ever named in decltype (declared, never defined).
namespace protocol_operands {
Tensor<f32, Shape<4, 8>, Host>& x();
Tensor<bf16, Shape<4, 8>, Host>& h();
Tensor<f32, Shape<8>, Host>& row();
Tensor<f32, Shape<8, 3>, Host>& w();
Tensor<f32, Shape<4, 8>, Device>& xd();
Tensor<f32, Shape<8, 3>, Device>& wd();
}  // namespace protocol_operands

namespace protocol_checks {

using namespace protocol_operands;

// Leaves and views.
static_assert(conforms<decltype(x())>);
static_assert(conforms<decltype(x().view())>);
static_assert(conforms<decltype(std::as_const(h()).view())>);
// Elementwise nodes: operators, math, a user's functor, plain numbers, broadcasting.
static_assert(conforms<decltype(x() + h())>);
static_assert(conforms<decltype(exp(x()) * 2.0f)>);
static_assert(conforms<decltype(map(halve{}, x()))>);
static_assert(conforms<decltype(where(x() > 0.0f, x(), row()))>);
static_assert(conforms<decltype(cast<bf16>(x()))>);
// Generators and scalars.
static_assert(conforms<decltype(full<Shape<4, 8>>(1.5f))>);
static_assert(conforms<decltype(iota<Shape<4, 8>>(0.0f, 0.25f))>);
static_assert(conforms<decltype(random_uniform<Shape<4, 8>>(7))>);
static_assert(conforms<decltype(bernoulli<Shape<4, 8>>(0.5f, 7))>);
// Views of tensors and of expressions.
static_assert(conforms<decltype(transpose(x()))>);
static_assert(conforms<decltype(transpose(x() + 1.0f))>);
static_assert(conforms<decltype(permute<1, 0>(h()))>);
static_assert(conforms<decltype(slice<1, 2, 6>(x()))>);
static_assert(conforms<decltype(reshape<Shape<32>>(x()))>);
static_assert(conforms<decltype(reshape<Shape<32>>(x() * x()))>);
static_assert(conforms<decltype(unsqueeze<0>(row()))>);
static_assert(conforms<decltype(broadcast_to<Shape<4, 8>>(row()))>);
// Nodes that materialise: reductions, row ops, matmul.
static_assert(conforms<decltype(sum<1>(x()))>);
static_assert(conforms<decltype(argmax<1>(exp(x())))>);
static_assert(conforms<decltype(softmax(x()))>);
static_assert(conforms<decltype(log_softmax(h()))>);
static_assert(conforms<decltype(matmul(x(), w()))>);
static_assert(conforms<decltype(matmul(x(), w()) + 1.0f)>);
#if TENET_CUDA_COMPILER
// The same nodes prepared for the device.
template <class E>
constexpr bool conforms_on_device =
    expression<std::remove_cvref_t<E>> && evaluable<std::remove_cvref_t<E>, exec_context<Device>>;

static_assert(conforms_on_device<decltype(xd())>);
static_assert(conforms_on_device<decltype(exp(xd()) * 2.0f + random_normal<Shape<4, 8>>(3))>);
static_assert(conforms_on_device<decltype(map(halve{}, permute<1, 0>(xd())))>);
static_assert(conforms_on_device<decltype(sum<1>(xd()))>);
static_assert(conforms_on_device<decltype(softmax(xd()))>);
static_assert(conforms_on_device<decltype(matmul(xd(), wd()))>);
#endif

// Not expressions.
static_assert(!expression<float> && !expression<std::vector<float>> && !expression<halve>);

// Layers: every built-in spec under every training policy.
template <class Spec, class In = Shape<4, 8>>
constexpr bool layer_everywhere = nn::layer_spec<Spec, fp32, In, Host> && nn::layer_spec<Spec, bf16_mixed, In, Host> &&
                                  nn::layer_spec<Spec, fp16_mixed, In, Host>;

static_assert(layer_everywhere<nn::Linear<8, 3>>);
static_assert(layer_everywhere<nn::ReLU> && layer_everywhere<nn::GELU> && layer_everywhere<nn::GELUTanh>);
static_assert(layer_everywhere<nn::Tanh> && layer_everywhere<nn::Sigmoid> && layer_everywhere<nn::SiLU> &&
              layer_everywhere<nn::Softplus>);
static_assert(layer_everywhere<nn::Activation<halve>>);
static_assert(layer_everywhere<nn::LayerNorm<8>>);
static_assert(layer_everywhere<nn::Dropout<std::ratio<1, 4>>>);
static_assert(layer_everywhere<nn::Sequential<nn::Linear<8, 16>, nn::ReLU, nn::Linear<16, 3>>>);
static_assert(nn::layer_spec<nn::Linear<8, 3>, quant::qat<fp32>, Shape<4, 8>, Host>);
// Convolutional layers, on NHWC images.
using image = Shape<2, 6, 5, 4>;
static_assert(layer_everywhere<nn::Conv2d<4, 6, 3, 2, 1>, image> && layer_everywhere<nn::Conv2dNoBias<4, 4, 1>, image>);
static_assert(layer_everywhere<nn::Conv2d<4, 4, 3, 1, 2, 2, 4>, image>);
static_assert(layer_everywhere<nn::conv2d_unit<4, 6, 3, 1, 1, 1, 2, true, linalg::activation::relu>, image>);
static_assert(layer_everywhere<nn::MaxPool2d<2>, image> && layer_everywhere<nn::AvgPool2d<3, 2, 1>, image>);
static_assert(layer_everywhere<nn::GlobalAvgPool2d, image> && layer_everywhere<nn::Flatten, image>);
static_assert(layer_everywhere<nn::BatchNorm2d<4>, image> &&
              layer_everywhere<nn::BatchNorm2d<4, nn::batchnorm_options{.affine = false}>, image>);
static_assert(layer_everywhere<nn::Sequential<nn::Conv2d<4, 8, 3, 1, 1>, nn::ReLU, nn::MaxPool2d<2>, nn::Flatten,
                                              nn::Linear<48, 3>>, image>);
// Not layers.
static_assert(!nn::layer_spec<halve, fp32, Shape<4, 8>, Host>);

// Losses, for a model with three outputs.
template <class L, class Out = Shape<4, 3>>
constexpr bool loss_everywhere = train::loss<L, fp32, Out, Host> && train::loss<L, bf16_mixed, Out, Host>;

// A user's loss: an expression of the prediction and target expressions.
struct squared_error {
    template <class P, class T>
    auto operator()(const P& p, const T& t) const
    {
        return (p - t) * (p - t);
    }
};

static_assert(loss_everywhere<train::softmax_cross_entropy>);
static_assert(loss_everywhere<train::mean_squared_error>);
static_assert(loss_everywhere<train::elementwise_loss<squared_error>>);
static_assert(!train::loss<halve, fp32, Shape<4, 3>, Host>);

}  // namespace protocol_checks
