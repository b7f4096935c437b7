// Quantized models on the device against the same models on the host: a
// calibrated MLP and a calibrated CNN converted to int8 give the host's
// int32 accumulators bit for bit and the same logits, and a QAT step
// (fake-quantized forward, straight-through backward) of each gives the
// host's gradients. Padding is inert on the device as on the host: the
// observers and fp8's amax see the real rows alone.
#include "device_testing.hpp"

#include <tenet/quant/fp8_linear.hpp>
#include <tenet/quant/int8_model.hpp>

#include <array>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;
namespace quant = tenet::quant;

namespace {

// 30 hidden units: the int8 model pads them to 32 (IMMA's multiple of 4).
using spec = nn::Sequential<nn::Linear<64, 30>, nn::ReLU, nn::Linear<30, 10>>;
using input = Shape<128, 64>;
template <class Place>
using qat_model = nn::model<spec, quant::qat<fp32>, input, Place>;
// Conv 3x3 (27 taps per output, padded to 28) + ReLU + BatchNorm + max
// pool, a strided convolution, Flatten, Linear.
using cnn = nn::Sequential<nn::Conv2d<3, 8, 3, 1, 1>, nn::ReLU, nn::BatchNorm2d<8>, nn::MaxPool2d<2>,
                           nn::Conv2d<8, 12, 3, 2, 1>, nn::Flatten, nn::Linear<2 * 2 * 12, 10>>;
using image = Shape<16, 8, 8, 3>;

template <class S = input>
Tensor<f32, S, Host> random_input(std::uint64_t seed)
{
    Tensor<f32, S, Host> t;
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (std::size_t i = 0; i < S::numel; ++i) t.data()[i] = normal(rng);
    return t;
}

template <class T, class S>
double largest_difference(const Tensor<T, S, Host>& a, const Tensor<T, S, Host>& b)
{
    double worst = 0;
    for (std::size_t i = 0; i < S::numel; ++i)
        worst = std::max(worst, std::fabs(convert<f64>(a.data()[i]) - convert<f64>(b.data()[i])));
    return worst;
}

// The backward of both models from dy: the largest gradient difference.
template <class HostModel, class DeviceModel, class DY>
double backward_difference(HostModel& host, DeviceModel& device, const DY& dy)
{
    host.backward(dy);
    device.backward(testing::to_device(dy));
    constexpr std::size_t n = HostModel::flat_numel;
    std::vector<f32> gd(n);
    TENET_CUDA_CHECK(cudaMemcpy(gd.data(), device.gradients(), n * sizeof(f32), cudaMemcpyDeviceToHost));
    double worst = 0;
    for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(double(gd[i]) - host.gradients()[i]));
    return worst;
}

// Calibrates the same QAT model on the host and on the device (3 batches
// from `seed`), converts both to int8: the second GEMM unit's accumulators
// must be equal bit for bit, the logits within `tolerance`.
template <class Spec, class In>
void check_int8_on_device(std::uint64_t model_seed, std::uint64_t seed, double tolerance)
{
    nn::model<Spec, quant::qat<fp32>, In, Host> host(model_seed);
    nn::model<Spec, quant::qat<fp32>, In, Device> device(model_seed);
    quant::prepare_calibration(host);
    quant::prepare_calibration(device);
    for (std::uint64_t batch = 0; batch < 3; ++batch) {
        const auto x = random_input<In>(seed + batch);
        host.forward(x);
        device.forward(testing::to_device(x));
    }
    quant::int8_model<Spec, In, Host> qh(host);
    quant::int8_model<Spec, In, Device> qd(device);
    const auto x = random_input<In>(seed + 100);
    const auto& yh = qh.forward(x);
    const auto yd = testing::to_host(qd.forward(testing::to_device(x)));
    const auto& acc_h = qh.template unit<1>().accumulators();
    const auto acc_d = testing::to_host(qd.template unit<1>().accumulators());
    CHECK_BITWISE_EQUAL("int8 unit accumulators (IMMA)", acc_d.data(), acc_h.data(), acc_h.numel);
    CHECK(largest_difference(yh, yd) < tolerance);
}

}  // namespace

TEST_CASE("int8 model on the device: IMMA accumulators and logits equal the host's")
{
    check_int8_on_device<spec, input>(5, 100, 1e-5);
}

TEST_CASE("qat step on the device: fake-quantized forward and straight-through gradients equal the host's")
{
    qat_model<Host> host(9);
    qat_model<Device> device(9);
    const auto x = random_input(300);
    Tensor<f32, Shape<128, 10>, Host> dy;
    std::mt19937_64 rng(301);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (std::size_t i = 0; i < dy.numel; ++i) dy.data()[i] = normal(rng);
    const auto& yh = host.forward(x);
    const auto yd = testing::to_host(device.forward(testing::to_device(x)));
    CHECK(largest_difference(yh, yd) < 1e-4);
    CHECK(backward_difference(host, device, dy) < 1e-3);
}

TEST_CASE("int8 CNN on the device: convolution accumulators and logits equal the host's")
{
    check_int8_on_device<cnn, image>(7, 400, 1e-4);
}

TEST_CASE("qat step of a CNN on the device: gradients equal the host's")
{
    nn::model<cnn, quant::qat<fp32>, image, Host> host(9);
    nn::model<cnn, quant::qat<fp32>, image, Device> device(9);
    const auto x = random_input<image>(600);
    const auto dy = random_input<Shape<16, 10>>(601);
    const auto& yh = host.forward(x);
    const auto yd = testing::to_host(device.forward(testing::to_device(x)));
    CHECK(largest_difference(yh, yd) < 1e-3);
    CHECK(backward_difference(host, device, dy) < 1e-2);
}

TEST_CASE("padded batches on the device: observers and fp8 amax see the real rows alone, as on the host")
{
    constexpr std::size_t real = 100;  // of 128; the rest is padding holding garbage
    auto x = random_input(700);
    Tensor<f32, Shape<128>, Host> mask;
    for (std::size_t r = 0; r < 128; ++r) mask.data()[r] = r < real ? 1.0f : 0.0f;
    for (std::size_t i = real * 64; i < input::numel; ++i) x.data()[i] = i % 2 ? 1e6f : std::nanf("");
    const auto xd = testing::to_device(x);
    const auto mask_d = testing::to_device(mask);

    nn::model<spec, quant::qat<fp32, quant::percentile_observer>, input, Host> qh(3);
    nn::model<spec, quant::qat<fp32, quant::percentile_observer>, input, Device> qd(3);
    qh.forward(x, nn::valid_samples(mask));
    qd.forward(xd, nn::valid_samples(mask_d));
    // (fixed arrays: GCC 12 warns of a vector's first push_back here, a false -Warray-bounds)
    std::array<float, 2> ph{}, pd{};
    std::size_t nh = 0, nd = 0;
    quant::detail::for_each_fake_quant_layer(qh, [&](auto& l) { ph.at(nh++) = l.input_params().scale; });
    quant::detail::for_each_fake_quant_layer(qd, [&](auto& l) { pd.at(nd++) = l.input_params().scale; });
    REQUIRE(nh == 2);
    REQUIRE(nd == 2);
    for (std::size_t i = 0; i < 2; ++i) {
        CHECK(pd[i] == doctest::Approx(ph[i]).epsilon(1e-5));
        CHECK(ph[i] < 1.0f);  // (the padding's 1e6 would make it about 8000)
    }

    nn::model<spec, quant::fp8_training<fp32, 4>, input, Host> fh(4);
    nn::model<spec, quant::fp8_training<fp32, 4>, input, Device> fd(4);
    fh.forward(x, nn::valid_samples(mask));
    fd.forward(xd, nn::valid_samples(mask_d));
    std::vector<float> ah, ad;
    fh.for_each_layer([&](auto& l) {
        if constexpr (requires { l.input_scaling(); }) ah.push_back(l.input_scaling().history().data()[0]);
    });
    fd.for_each_layer([&](auto& l) {
        if constexpr (requires { l.input_scaling(); }) ad.push_back(testing::to_host(l.input_scaling().history()).data()[0]);
    });
    REQUIRE(ah.size() == 2);
    for (std::size_t i = 0; i < 2; ++i) {
        CHECK(std::isfinite(ah[i]));
        CHECK(ah[i] < 100.0f);
        CHECK(ad[i] == doctest::Approx(ah[i]).epsilon(1e-5));
    }
}
