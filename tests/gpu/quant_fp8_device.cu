// An fp8 Linear + ReLU unit on the device against the same layer on the
// host: the same seed draws the same parameters, the delayed scales (exact
// maxima, the same formula) must be equal bit for bit, and outputs and
// gradients agree within the two f32 GEMMs' summation-order differences.
#include "device_testing.hpp"
#include "relative_error.hpp"

#include <tenet/quant/fp8_linear.hpp>

#include <cmath>

using namespace tenet;
namespace nn = tenet::nn;
namespace quant = tenet::quant;

namespace {

constexpr std::size_t batch = 64, in = 16, out = 32;
using policy = quant::fp8_training<fp32>;
template <class Place>
using layer_t = quant::fp8_linear_layer<policy, Shape<batch, in>, Place, in, out, linalg::activation::relu>;

template <class Place>
struct bound {
    static constexpr std::size_t n = layer_t<Place>::parameter_numel;
    Tensor<f32, Shape<n>, Place> values, gradients;
    nn::parameter_slice<f32, f32> slice{values.data(), gradients.data(), 0};
    layer_t<Place> layer{slice};
};

template <class S>
Tensor<f32, S, Host> random_host(std::uint64_t seed, double sigma)
{
    Tensor<f32, S, Host> t;
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal(0.0, sigma);
    for (std::size_t i = 0; i < S::numel; ++i) t.data()[i] = static_cast<float>(normal(rng));
    return t;
}

template <class Scaling, class DeviceScaling>
void check_same_scale(const char* what, const Scaling& host, const DeviceScaling& device)
{
    INFO(what);
    CHECK(testing::to_host(device.scale()).data()[0] == host.scale().data()[0]);
    CHECK(testing::to_host(device.scale_inverse()).data()[0] == host.scale_inverse().data()[0]);
}

}  // namespace

TEST_CASE("fp8 device: a Linear + ReLU unit's forward and backward equal the host's")
{
    bound<Host> h;
    bound<Device> d;
    h.layer.initialize(3);
    d.layer.initialize(3);
    CHECK_RELATIVE_ERROR("fp8 quantized values", testing::to_host(d.values).data(), h.values.data(), h.values.numel, 0.0);

    nn::no_previous_layer none;
    for (int round = 0; round < 3; ++round) {
        CAPTURE(round);
        const auto x = random_host<Shape<batch, in>>(10 + round, 1.0 + 2.0 * round);
        const auto dy = random_host<Shape<batch, out>>(20 + round, 0.01 * (round + 1));
        const auto xd = testing::to_device(x);
        const auto dyd = testing::to_device(dy);
        Tensor<f32, Shape<batch, out>, Host> y;
        Tensor<f32, Shape<batch, in>, Host> dx;
        Tensor<f32, Shape<batch, out>, Device> yd;
        Tensor<f32, Shape<batch, in>, Device> dxd;
        testing::poison(yd);
        testing::poison(dxd);
        testing::poison(d.gradients);
        testing::poison(h.gradients);  // the padding between parameters compares equal

        h.layer.forward(x, y.view(), nn::step_info{});
        d.layer.forward(xd, yd.view(), nn::step_info{});
        CHECK_RELATIVE_ERROR("fp8 Linear + ReLU forward", testing::to_host(yd).data(), y.data(), y.numel, 1e-5);
        check_same_scale("x", h.layer.input_scaling(), d.layer.input_scaling());
        check_same_scale("W", h.layer.weight_scaling(), d.layer.weight_scaling());

        h.layer.backward(dy, dx.view(), nn::step_info{}, none);
        d.layer.backward(dyd, dxd.view(), nn::step_info{}, none);
        CHECK_RELATIVE_ERROR("fp8 Linear + ReLU input gradient", testing::to_host(dxd).data(), dx.data(), dx.numel, 1e-5);
        CHECK_RELATIVE_ERROR("fp8 Linear + ReLU weight gradients", testing::to_host(d.gradients).data(), h.gradients.data(),
                             h.gradients.numel, 1e-5);
        check_same_scale("dz", h.layer.gradient_scaling(), d.layer.gradient_scaling());
    }
}
