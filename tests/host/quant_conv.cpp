// Quantization of convolutional models on the host: the fake-quantized
// Conv2d of QAT (forward and the clipped straight-through estimator against
// float64 loops from the definition), and int8 models of CNNs (exact int32
// accumulators with zero-point padding, agreement with the fake-quantized
// model through BatchNorm, pooling, Flatten and the activations, bytes).
#include "model_testing.hpp"

#include <tenet/nn/nn.hpp>
#include <tenet/quant/int8_model.hpp>
#include <tenet/quant/qat.hpp>

#include <cmath>
#include <random>
#include <ratio>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;
namespace quant = tenet::quant;
using testing::random_tensor;

namespace {

// PyTorch's fake quantization in double (the reference), and whether x was
// inside the range (the straight-through estimator's mask).
double quantized(double x, double scale, int zero_point)
{
    return std::nearbyint(static_cast<double>(static_cast<float>(x) * (1.0f / static_cast<float>(scale)))) + zero_point;
}
double fake_quant(double x, double scale, int zero_point, int qmin)
{
    return (std::clamp(quantized(x, scale, zero_point), static_cast<double>(qmin), 127.0) - zero_point) * scale;
}
bool inside(double x, double scale, int zero_point, int qmin)
{
    const double q = quantized(x, scale, zero_point);
    return q >= qmin && q <= 127;
}

// One fake-quantized convolution (observed on one batch, then frozen and fed
// a wider one, so some inputs clip) against float64 loops.
template <class In, std::size_t Co, std::size_t K, std::size_t S, std::size_t P, std::size_t D, class Spec>
void check_fake_quant_conv(std::uint64_t seed)
{
    constexpr std::size_t Ci = In::extents[3];
    constexpr bool relu = Spec::activation == linalg::activation::relu;
    testing::driven<Spec, In, quant::qat<fp32>> d(seed);
    using Out = typename decltype(d)::out;
    Tensor<f32, Out, Host> y;
    Tensor<f32, In, Host> dx_got;
    d.forward(random_tensor<f32, In>(seed + 1), y);
    d.layer->enable_observers(false);
    const auto x = random_tensor<f32, In>(seed + 2, 2.0);
    const auto dy = random_tensor<f32, Out>(seed + 3);
    testing::poison(y);
    testing::poison(dx_got);
    d.forward(x, y);
    d.backward(dy, dx_got);

    const quant::affine p = d.layer->input_params();
    std::vector<double> wscale;
    for (std::size_t o = 0; o < Co; ++o) wscale.push_back(d.layer->weight_scale().data()[o]);
    const std::vector<double> params(d.values.begin(), d.values.end()), grads(d.gradients.begin(), d.gradients.end());
    constexpr std::size_t wn = Co * K * K * Ci;
    // Weight scales: per output channel, max |w| / 127 over the filter.
    std::vector<double> wq(wn), xq(In::numel);
    std::vector<bool> w_in(wn), x_in(In::numel);
    for (std::size_t o = 0; o < Co; ++o) {
        double largest = 0;
        for (std::size_t j = 0; j < wn / Co; ++j) largest = std::max(largest, std::fabs(params[o * (wn / Co) + j]));
        CHECK(wscale[o] == doctest::Approx(largest / 127.0).epsilon(1e-6));
        for (std::size_t j = o * (wn / Co); j < (o + 1) * (wn / Co); ++j) {
            wq[j] = fake_quant(params[j], wscale[o], 0, -127);
            w_in[j] = inside(params[j], wscale[o], 0, -127);
        }
    }
    std::size_t clipped = 0;
    for (std::size_t i = 0; i < In::numel; ++i) {
        xq[i] = fake_quant(x.data()[i], p.scale, p.zero_point, -128);
        x_in[i] = inside(x.data()[i], p.scale, p.zero_point, -128);
        clipped += !x_in[i];
    }
    CHECK(clipped > 0);  // the wider batch reaches past the frozen range

    const auto table = d.parameters();
    const std::size_t bias_at = Spec::bias ? table.at("bias").first : 0;  // after the weight's padding
    const double* bias = Spec::bias ? params.data() + bias_at : nullptr;
    const std::vector<double> want = testing::direct_conv<In, Co, K, S, P, D, 1>(xq.data(), wq.data(), bias, relu);
    for (std::size_t i = 0; i < Out::numel; ++i) {
        INFO("y[" << i << "]");
        CHECK(y.data()[i] == doctest::Approx(want[i]).epsilon(1e-4).scale(1.0));
    }
    // The straight-through estimator: dz = dy (where y > 0 with a ReLU);
    // dW = dz * xq where W was inside its range, dx = dz * wq where x was.
    std::vector<double> dz(Out::numel), dw(wn, 0.0), dx(In::numel, 0.0), db(Co, 0.0);
    for (std::size_t i = 0; i < Out::numel; ++i) {
        dz[i] = relu && want[i] <= 0 ? 0.0 : dy.data()[i];
        db[i % Co] += dz[i];
    }
    testing::for_each_conv_product<In, Co, K, S, P, D, 1>([&](std::size_t yi, std::size_t xi, std::size_t wi) {
        dw[wi] += dz[yi] * xq[xi];
        dx[xi] += dz[yi] * wq[wi];
    });
    for (std::size_t j = 0; j < wn; ++j) {
        INFO("dW[" << j << "]");
        CHECK(grads[j] == doctest::Approx(w_in[j] ? dw[j] : 0.0).epsilon(1e-4).scale(1.0));
    }
    for (std::size_t o = 0; o < (Spec::bias ? Co : 0); ++o) CHECK(grads[bias_at + o] == doctest::Approx(db[o]).epsilon(1e-4).scale(1.0));
    for (std::size_t i = 0; i < In::numel; ++i) {
        INFO("dx[" << i << "]");
        CHECK(dx_got.data()[i] == doctest::Approx(x_in[i] ? dx[i] : 0.0).epsilon(1e-4).scale(1.0));
    }
}

// Parameters and BatchNorm statistics drawn at random (running variances
// positive), so that no BatchNorm is the identity.
template <class M>
void randomize(M& m, std::uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    m.for_each_parameter([&](const std::string& name, auto value, auto) {
        if (name.find("weight") == std::string::npos || decltype(value)::shape::rank > 1) return;
        for (std::size_t i = 0; i < decltype(value)::shape::numel; ++i) value.data()[i] = 1.0f + 0.3f * normal(rng);
    });
    m.for_each_buffer([&](const std::string& name, auto value) {
        const bool variance = name.find("running_var") != std::string::npos;
        for (std::size_t i = 0; i < decltype(value)::shape::numel; ++i)
            value.data()[i] = variance ? 0.5f + std::fabs(normal(rng)) : 0.3f * normal(rng);
    });
}

// Calibrates a QAT twin of a model on a few batches, converts it to int8,
// and compares the int8 logits with the fake-quantized model's.
template <class Spec, class In>
void check_int8_cnn(std::uint64_t seed)
{
    nn::model<Spec, quant::qat<fp32, quant::min_max_observer<>>, In, Host> calibrated(seed);
    randomize(calibrated, seed + 1);
    quant::prepare_calibration(calibrated);
    for (std::uint64_t b = 0; b < 4; ++b) calibrated.forward(random_tensor<f32, In>(seed + 10 + b));
    quant::int8_model<Spec, In, Host> q(calibrated);
    quant::freeze_observers(calibrated);
    quant::enable_fake_quant(calibrated, true);
    const auto x = random_tensor<f32, In>(seed + 20);
    const auto& fake = calibrated.forward(x);
    const auto& real = q.forward(x);
    using Out = typename decltype(q)::output_shape;
    double worst = 0, largest = 0;
    for (std::size_t i = 0; i < Out::numel; ++i) {
        REQUIRE(std::isfinite(real.data()[i]));
        worst = std::max(worst, std::fabs(double(fake.data()[i]) - double(real.data()[i])));
        largest = std::max(largest, std::fabs(double(fake.data()[i])));
    }
    MESSAGE("largest logit difference, int8 vs fake-quantized: " << worst << " (largest logit " << largest << ")");
    CHECK(largest > 0.1);
    CHECK(worst <= 0.03 * largest);
}

}  // namespace

TEST_CASE("qat: a fake-quantized Conv2d forward and its straight-through backward vs float64 loops")
{
    SUBCASE("3x3, padding 1")
    {
        check_fake_quant_conv<Shape<2, 5, 6, 3>, 4, 3, 1, 1, 1, nn::Conv2d<3, 4, 3, 1, 1>>(1);
    }
    SUBCASE("stride 2, dilation 2, no bias")
    {
        check_fake_quant_conv<Shape<2, 9, 7, 2>, 5, 3, 2, 2, 2, nn::Conv2dNoBias<2, 5, 3, 2, 2, 2>>(2);
    }
    SUBCASE("1x1 (its input is its columns)")
    {
        check_fake_quant_conv<Shape<1, 4, 4, 6>, 3, 1, 1, 0, 1, nn::Conv2d<6, 3, 1>>(3);
    }
    SUBCASE("with the ReLU Sequential fuses into it")
    {
        using fused = nn::conv2d_unit<2, 4, 3, 1, 1, 1, 1, true, linalg::activation::relu>;
        check_fake_quant_conv<Shape<2, 5, 5, 2>, 4, 3, 1, 1, 1, fused>(4);
    }
}

TEST_CASE("int8_model: a convolution's accumulators are the exact integer products, padding at the zero point")
{
    using In = Shape<2, 6, 5, 3>;
    constexpr std::size_t Co = 5, K = 3, Ho = 3, Wo = 3;  // stride 2, padding 1
    using spec = nn::Sequential<nn::Conv2d<3, Co, K, 2, 1>, nn::Flatten, nn::Linear<Ho * Wo * Co, 4>>;
    nn::model<spec, quant::qat<fp32>, In, Host> calibrated(5);
    quant::prepare_calibration(calibrated);
    Tensor<f32, In, Host> x = random_tensor<f32, In>(6);
    for (std::size_t i = 0; i < In::numel; ++i) x.data()[i] = 1.5f + x.data()[i];  // mostly positive: zero point far from 0
    calibrated.forward(x);
    quant::int8_model<spec, In, Host> q(calibrated);
    q.forward(x);
    auto& u = q.unit<0>();
    const int zp = u.input_params().zero_point;
    CHECK(zp < -64);
    constexpr std::size_t kp = 28;  // 27 rounded up to 4
    std::size_t compared = 0;
    for (std::size_t n = 0; n < 2; ++n)
        for (std::size_t oh = 0; oh < Ho; ++oh)
            for (std::size_t ow = 0; ow < Wo; ++ow)
                for (std::size_t o = 0; o < Co; ++o) {
                    std::int64_t s = 0;
                    for (std::size_t kh = 0; kh < K; ++kh)
                        for (std::size_t kw = 0; kw < K; ++kw)
                            for (std::size_t c = 0; c < 3; ++c) {
                                const long h = static_cast<long>(oh * 2 + kh) - 1, w = static_cast<long>(ow * 2 + kw) - 1;
                                const bool pad = h < 0 || h >= 6 || w < 0 || w >= 5;
                                const std::int64_t xv = pad ? zp : u.input().data()[((n * 6 + h) * 5 + w) * 3 + c];
                                s += xv * u.weight().data()[o * kp + (kh * K + kw) * 3 + c];
                            }
                    const std::size_t m = (n * Ho + oh) * Wo + ow;
                    CHECK(u.accumulators().data()[m * 8 + o] == s);
                    ++compared;
                }
    CHECK(compared == 2 * Ho * Wo * Co);
}

TEST_CASE("int8_model of CNNs: the int8 logits are the fake-quantized model's")
{
    SUBCASE("conv, ReLU, BatchNorm, max pool; conv without bias, BatchNorm, GELU, avg pool; Flatten, Dropout, Linear")
    {
        using spec = nn::Sequential<nn::Conv2d<3, 8, 3, 1, 1>, nn::ReLU, nn::BatchNorm2d<8>, nn::MaxPool2d<2>,
                                    nn::Conv2dNoBias<8, 12, 3, 1, 1>, nn::BatchNorm2d<12>, nn::GELU, nn::AvgPool2d<2>,
                                    nn::Flatten, nn::Dropout<std::ratio<1, 4>>, nn::Linear<2 * 2 * 12, 5>>;
        check_int8_cnn<spec, Shape<4, 8, 9, 3>>(11);
    }
    SUBCASE("BatchNorm first, 1x1 conv, dilated conv, global average pool, Linear")
    {
        using spec = nn::Sequential<nn::BatchNorm2d<3>, nn::Conv2d<3, 6, 1>, nn::ReLU, nn::Conv2d<6, 8, 3, 1, 0, 2>,
                                    nn::Tanh, nn::GlobalAvgPool2d, nn::Linear<8, 4>>;
        check_int8_cnn<spec, Shape<3, 7, 7, 3>>(12);
    }
}

TEST_CASE("int8_model of grouped and depthwise convolutions: the logits of a dense twin with block-diagonal filters")
{
    // A grouped int8 convolution is exactly the dense one whose filters are
    // zero outside their group: build that twin by hand and compare bits.
    using In = Shape<2, 5, 6, 4>;
    using grouped = nn::Sequential<nn::Conv2d<4, 6, 3, 1, 1, 1, 2>, nn::ReLU, nn::Conv2d<6, 6, 3, 2, 1, 1, 6>, nn::Flatten,
                                   nn::Linear<3 * 3 * 6, 3>>;
    using dense = nn::Sequential<nn::Conv2d<4, 6, 3, 1, 1>, nn::ReLU, nn::Conv2d<6, 6, 3, 2, 1>, nn::Flatten,
                                 nn::Linear<3 * 3 * 6, 3>>;
    using policy = quant::qat<fp32, quant::min_max_observer<>>;
    nn::model<grouped, policy, In, Host> g(31);
    nn::model<dense, policy, In, Host> d(32);
    std::vector<std::vector<float>> values;
    g.for_each_parameter([&](const std::string&, auto v, auto) {
        values.emplace_back(v.data(), v.data() + decltype(v)::shape::numel);
    });
    std::size_t index = 0;
    d.for_each_parameter([&]([[maybe_unused]] const std::string& name, auto v, auto) {
        const std::vector<float>& from = values[index++];
        using S = typename decltype(v)::shape;
        if constexpr (S::rank == 4) {  // the convolutions' [Out, 3, 3, In] from [Out, 3, 3, In / G]
            REQUIRE((name == "0.weight" || name == "2.weight"));
            constexpr std::size_t out = S::extents[0], in = S::extents[3];
            const std::size_t per_group = from.size() / (out * 9), groups = in / per_group;
            for (std::size_t o = 0; o < out; ++o)
                for (std::size_t t = 0; t < 9; ++t)
                    for (std::size_t c = 0; c < in; ++c) {
                        const std::size_t first = o / (out / groups) * per_group;
                        v.data()[(o * 9 + t) * in + c] =
                            c >= first && c < first + per_group ? from[(o * 9 + t) * per_group + c - first] : 0.0f;
                    }
        } else {
            REQUIRE(from.size() == S::numel);
            std::copy(from.begin(), from.end(), v.data());
        }
    });
    REQUIRE(index == values.size());
    quant::prepare_calibration(g);
    quant::prepare_calibration(d);
    for (std::uint64_t b = 0; b < 3; ++b) {
        const auto x = random_tensor<f32, In>(40 + b);
        g.forward(x);
        d.forward(x);
    }
    quant::int8_model<grouped, In, Host> qg(g);
    quant::int8_model<dense, In, Host> qd(d);
    static_assert(decltype(qg)::weight_bytes == decltype(qd)::weight_bytes);  // the zeros are stored
    const auto x = random_tensor<f32, In>(50);
    const auto& yg = qg.forward(x);
    const auto& yd = qd.forward(x);
    double largest = 0;
    for (std::size_t i = 0; i < decltype(qg)::output_shape::numel; ++i) {
        REQUIRE(yg.data()[i] == yd.data()[i]);
        largest = std::max(largest, std::fabs(double(yg.data()[i])));
    }
    CHECK(largest > 0.01);
}

TEST_CASE("int8_model of CNNs with grouped and depthwise convolutions: the int8 logits are the fake-quantized model's")
{
    using spec = nn::Sequential<nn::Conv2d<4, 8, 3, 1, 1, 1, 2>, nn::ReLU, nn::BatchNorm2d<8>,
                                nn::Conv2d<8, 8, 3, 1, 1, 1, 8>, nn::ReLU, nn::MaxPool2d<2>, nn::Flatten,
                                nn::Linear<3 * 3 * 8, 5>>;
    check_int8_cnn<spec, Shape<3, 6, 7, 4>>(13);
}

TEST_CASE("int8_model of a CNN: bytes at compile time")
{
    using spec = nn::Sequential<nn::Conv2d<1, 8, 3, 1, 1>, nn::ReLU, nn::BatchNorm2d<8>, nn::MaxPool2d<2>, nn::Flatten,
                                nn::Linear<4 * 4 * 8, 10>>;
    using q = quant::int8_model<spec, Shape<2, 8, 8, 1>, Host>;
    constexpr std::size_t weights = 8 * 9 + 128 * 10;
    static_assert(q::weight_bytes == weights);
    // int8 weights, f32 biases and scales per output channel, each unit's
    // input scale and zero point, and BatchNorm's scale and shift.
    static_assert(q::parameter_bytes == weights + 2 * (8 + 10) * sizeof(f32) + 2 * 8 + 2 * 8 * sizeof(f32));
    CHECK(q::allocated_bytes > q::parameter_bytes);
}

TEST_CASE("copy_parameters carries BatchNorm's running statistics into the QAT twin")
{
    using spec = nn::Sequential<nn::Conv2d<2, 4, 3, 1, 1>, nn::BatchNorm2d<4>, nn::ReLU, nn::Flatten, nn::Linear<64, 3>>;
    using In = Shape<2, 4, 4, 2>;
    nn::model<spec, fp32, In, Host> trained(1);
    randomize(trained, 2);
    nn::model<spec, quant::qat<fp32>, In, Host> twin(3);
    quant::copy_parameters(twin, trained);
    static_assert(decltype(twin)::buffer_numel > 0);
    for (std::size_t i = 0; i < decltype(twin)::buffer_numel; ++i) CHECK(twin.buffers()[i] == trained.buffers()[i]);
    for (std::size_t i = 0; i < decltype(twin)::flat_numel; ++i) CHECK(twin.parameters()[i] == trained.parameters()[i]);
    std::vector<float> variances;
    twin.for_each_buffer([&](const std::string& name, auto value) {
        if (name == "1.running_var") variances.assign(value.data(), value.data() + 4);
    });
    REQUIRE(variances.size() == 4);
    CHECK(variances[0] != 1.0f);  // not the initial statistics
}
