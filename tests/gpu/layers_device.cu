// nn layers on the device against the same model on the host: Philox draws
// the same parameters from the same seed on both, so forward outputs and
// parameter gradients must agree (within the accumulation-order and
// tensor-core rounding differences of the two GEMMs).
#include "device_testing.hpp"

#include <ratio>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;

namespace {

template <class T, class S>
Tensor<T, S, Host> random_host(std::uint64_t seed)
{
    Tensor<T, S, Host> t;
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (std::size_t i = 0; i < S::numel; ++i) t.data()[i] = convert<T>(normal(rng));
    return t;
}

template <class T>
double relative_error(const T* got, const T* want, std::size_t n)
{
    double err = 0, norm = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double w = convert<f64>(want[i]);
        err += std::pow(convert<f64>(got[i]) - w, 2);
        norm += w * w;
    }
    return std::sqrt(err) / (std::sqrt(norm) + 1e-30);
}

template <class Net, class P, class In, class Out>
void check_device_matches_host(double tolerance)
{
    using T = typename P::storage;
    using G = nn::gradient_t<P>;
    nn::model<Net, P, In, Host> host(11);
    nn::model<Net, P, In, Device> device(11);
    using HM = decltype(host);
    std::vector<T> device_parameters(HM::flat_numel);
    TENET_CUDA_CHECK(cudaMemcpy(device_parameters.data(), device.parameters(), HM::flat_numel * sizeof(T), cudaMemcpyDeviceToHost));
    CHECK(std::memcmp(device_parameters.data(), host.parameters(), HM::flat_numel * sizeof(T)) == 0);

    const auto x = random_host<T, In>(12);
    const auto dy = random_host<T, Out>(13);
    const auto xd = testing::to_device(x);
    const auto dyd = testing::to_device(dy);

    const auto& yh = host.forward(x);
    const auto& yd = device.forward(xd);
    Tensor<T, Out, Host> y_back;
    copy(y_back, yd);
    current_stream().synchronize();
    CHECK(relative_error(y_back.data(), yh.data(), Out::numel) <= tolerance);

    host.backward(dy);
    device.backward(dyd);
    std::vector<G> device_gradients(HM::flat_numel);
    TENET_CUDA_CHECK(cudaMemcpy(device_gradients.data(), device.gradients(), HM::flat_numel * sizeof(G), cudaMemcpyDeviceToHost));
    host.for_each_parameter([&](const std::string& name, auto value, auto gradient) {
        const std::size_t at = static_cast<std::size_t>(gradient.data() - host.gradients());
        INFO(name);
        CHECK(relative_error(device_gradients.data() + at, gradient.data(), decltype(value)::shape::numel) <= tolerance);
    });
}

}  // namespace

TEST_CASE("device models equal host models: fused relu/gelu units, LayerNorm, activations")
{
    using net = nn::Sequential<nn::Linear<64, 128>, nn::ReLU, nn::Linear<128, 96>, nn::GELUTanh, nn::Linear<96, 48>,
                               nn::LayerNorm<48>, nn::Tanh, nn::Linear<48, 10>>;
    check_device_matches_host<net, fp32, Shape<256, 64>, Shape<256, 10>>(1e-4);
    check_device_matches_host<net, bf16_mixed, Shape<256, 64>, Shape<256, 10>>(2e-2);
    check_device_matches_host<net, fp16_mixed, Shape<256, 64>, Shape<256, 10>>(5e-3);
}

TEST_CASE("device LayerNorm with a large eps and no affine parameters equals the host's")
{
    using norm = nn::LayerNorm<48, nn::layernorm_options{.eps = 0.5f, .affine = false}>;
    using net = nn::Sequential<nn::Linear<64, 48>, nn::Tanh, norm, nn::Linear<48, 10>>;
    check_device_matches_host<net, fp32, Shape<256, 64>, Shape<256, 10>>(1e-4);
    check_device_matches_host<net, bf16_mixed, Shape<256, 64>, Shape<256, 10>>(2e-2);
}

TEST_CASE("device dropout draws the host's mask")
{
    using S = Shape<128, 256>;
    using net = nn::Sequential<nn::Dropout<std::ratio<1, 3>>>;
    nn::model<net, fp32, S, Host> host(3);
    nn::model<net, fp32, S, Device> device(3);
    const auto x = random_host<f32, S>(4);
    const auto xd = testing::to_device(x);
    const auto& yh = host.forward(x);
    Tensor<f32, S, Host> yd;
    copy(yd, device.forward(xd));
    current_stream().synchronize();
    CHECK(std::memcmp(yd.data(), yh.data(), S::numel * sizeof(f32)) == 0);
}
