// Convolutional layers on the host: Conv2d (stride, padding, dilation,
// groups, depthwise, 1x1, no bias, fused ReLU), MaxPool2d (NaN and ties),
// AvgPool2d, GlobalAvgPool2d, BatchNorm2d (batch and running statistics,
// eval mode, buffers in checkpoints) and Flatten. Every forward against
// float64 loops written from the definition; every backward (input and
// parameter gradients) against central finite differences in float64;
// 16-bit policies against the float64 model holding the same parameters.
#include "model_testing.hpp"

#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;
using testing::check_gradients_f64, testing::direct_conv, testing::driven, testing::f64_policy, testing::parameter_table, testing::random_tensor;

namespace {

// L = sum(r * layer(x)): the input and parameter gradients of backward(r)
// against central differences (float64, training mode).
template <class Spec, class In>
void check_layer_gradients(std::uint64_t seed, double tolerance = 1e-6)
{
    driven<Spec, In> d(seed);
    using Out = typename driven<Spec, In>::out;
    auto x = random_tensor<f64, In>(seed + 1);
    const auto r = random_tensor<f64, Out>(seed + 2);
    Tensor<f64, Out, Host> y;
    Tensor<f64, In, Host> dx;
    auto loss = [&] {
        d.forward(x, y);
        double l = 0;
        for (std::size_t i = 0; i < Out::numel; ++i) l += r.data()[i] * y.data()[i];
        return l;
    };
    d.forward(x, y);
    testing::poison(dx);
    d.backward(r, dx);
    auto numeric = [&](double& p) {
        const double saved = p, h = 1e-6 * std::max(1.0, std::fabs(saved));
        p = saved + h;
        const double up = loss();
        p = saved - h;
        const double down = loss();
        p = saved;
        return (up - down) / (2 * h);
    };
    for (std::size_t i = 0; i < In::numel; ++i) {
        const double want = numeric(x.data()[i]);
        INFO("dx[" << i << "]: backward " << dx.data()[i] << " vs finite difference " << want);
        CHECK(std::fabs(dx.data()[i] - want) <= tolerance * (1 + std::fabs(want)));
    }
    std::size_t checked = 0;
    for (const auto& [name, where] : d.parameters())
        for (std::size_t j = 0; j < where.second; ++j, ++checked) {
            const double want = numeric(d.values[where.first + j]);
            const double got = d.gradients[where.first + j];
            INFO(name << "[" << j << "]: backward " << got << " vs finite difference " << want);
            CHECK(std::fabs(got - want) <= tolerance * (1 + std::fabs(want)));
        }
    CHECK(checked == driven<Spec, In>::layer_type::parameter_count);
}

template <class In, std::size_t Co, std::size_t K, std::size_t S = 1, std::size_t P = 0, std::size_t D = 1,
          std::size_t G = 1, bool Bias = true>
void check_conv_forward(std::uint64_t seed)
{
    using spec = nn::conv2d_unit<In::extents[3], Co, K, S, P, D, G, Bias>;
    driven<spec, In> d(seed);
    using Out = typename driven<spec, In>::out;
    const auto x = random_tensor<f64, In>(seed + 1);
    Tensor<f64, Out, Host> y;
    testing::poison(y);
    d.forward(x, y);
    const auto table = d.parameters();
    const double* w = d.values.data() + table.at("weight").first;
    const double* b = Bias ? d.values.data() + table.at("bias").first : nullptr;
    const auto want = direct_conv<In, Co, K, S, P, D, G>(x.data(), w, b, false);
    REQUIRE(want.size() == Out::numel);
    for (std::size_t i = 0; i < Out::numel; ++i) {
        INFO("output " << i);
        CHECK(y.data()[i] == doctest::Approx(want[i]).epsilon(1e-12).scale(1));
    }
}

}  // namespace

TEST_CASE("Conv2d: output shapes computed at compile time, as PyTorch's")
{
    static_assert(std::is_same_v<nn::Conv2d<3, 8, 3>::output_shape<Shape<2, 28, 28, 3>>, Shape<2, 26, 26, 8>>);
    static_assert(std::is_same_v<nn::Conv2d<3, 8, 3, 1, 1>::output_shape<Shape<2, 28, 28, 3>>, Shape<2, 28, 28, 8>>);
    static_assert(std::is_same_v<nn::Conv2d<3, 8, 3, 2, 1>::output_shape<Shape<2, 7, 6, 3>>, Shape<2, 4, 3, 8>>);
    static_assert(std::is_same_v<nn::Conv2d<4, 4, 3, 1, 2, 2, 4>::output_shape<Shape<1, 5, 5, 4>>, Shape<1, 5, 5, 4>>);
    static_assert(std::is_same_v<nn::Conv2d<4, 6, 5, 3>::output_shape<Shape<1, 11, 5, 4>>, Shape<1, 3, 1, 6>>);
    static_assert(std::is_same_v<nn::MaxPool2d<2>::output_shape<Shape<3, 7, 8, 5>>, Shape<3, 3, 4, 5>>);
    static_assert(std::is_same_v<nn::AvgPool2d<3, 2, 1>::output_shape<Shape<3, 7, 8, 5>>, Shape<3, 4, 4, 5>>);
    static_assert(std::is_same_v<nn::GlobalAvgPool2d::output_shape<Shape<3, 7, 8, 5>>, Shape<3, 5>>);
    static_assert(std::is_same_v<nn::Flatten::output_shape<Shape<3, 7, 8, 5>>, Shape<3, 280>>);
    static_assert(std::is_same_v<nn::FlattenCHW::output_shape<Shape<3, 7, 8, 5>>, Shape<3, 280>>);
    static_assert(std::is_same_v<nn::BatchNorm2d<5>::output_shape<Shape<3, 7, 8, 5>>, Shape<3, 7, 8, 5>>);
}

TEST_CASE("Conv2d forward against a float64 direct convolution")
{
    SUBCASE("3x3, stride 1, no padding") { check_conv_forward<Shape<2, 6, 5, 3>, 4, 3>(1); }
    SUBCASE("3x3, padding 1, batch of 1") { check_conv_forward<Shape<1, 5, 6, 2>, 3, 3, 1, 1>(2); }
    SUBCASE("stride 2, H and W not multiples of the stride") { check_conv_forward<Shape<2, 7, 8, 3>, 5, 3, 2, 1>(3); }
    SUBCASE("dilation 2") { check_conv_forward<Shape<2, 7, 7, 2>, 3, 3, 1, 2, 2>(4); }
    SUBCASE("groups 2") { check_conv_forward<Shape<2, 5, 6, 4>, 6, 3, 1, 1, 1, 2>(5); }
    SUBCASE("depthwise (groups = channels), stride 2, dilation 2") { check_conv_forward<Shape<2, 9, 8, 3>, 3, 3, 2, 1, 2, 3>(6); }
    SUBCASE("depthwise with a channel multiplier") { check_conv_forward<Shape<1, 5, 5, 2>, 4, 3, 1, 1, 1, 2>(7); }
    SUBCASE("1x1 (the input is read as the GEMM's columns)") { check_conv_forward<Shape<2, 4, 3, 5>, 7, 1>(8); }
    SUBCASE("1x1 with stride 2") { check_conv_forward<Shape<2, 5, 4, 3>, 2, 1, 2>(9); }
    SUBCASE("kernel 5, stride 3, no bias") { check_conv_forward<Shape<1, 11, 8, 2>, 3, 5, 3, 0, 1, 1, false>(10); }
    SUBCASE("kernel as large as the padded input") { check_conv_forward<Shape<2, 3, 3, 2>, 3, 5, 1, 1>(11); }
}

TEST_CASE("every convolutional layer's backward against central finite differences (float64)")
{
    SUBCASE("Conv2d 3x3") { check_layer_gradients<nn::Conv2d<3, 4, 3>, Shape<2, 5, 6, 3>>(20); }
    SUBCASE("Conv2d stride 2, padding 1") { check_layer_gradients<nn::Conv2d<2, 3, 3, 2, 1>, Shape<2, 7, 6, 2>>(21); }
    SUBCASE("Conv2d dilation 2, padding 2") { check_layer_gradients<nn::Conv2d<2, 3, 3, 1, 2, 2>, Shape<1, 6, 5, 2>>(22); }
    SUBCASE("Conv2d groups 2") { check_layer_gradients<nn::Conv2d<4, 6, 3, 1, 1, 1, 2>, Shape<2, 4, 5, 4>>(23); }
    SUBCASE("Conv2d depthwise, stride 2") { check_layer_gradients<nn::Conv2d<3, 3, 3, 2, 1, 1, 3>, Shape<2, 7, 7, 3>>(24); }
    SUBCASE("Conv2d 1x1") { check_layer_gradients<nn::Conv2d<5, 3, 1>, Shape<2, 3, 4, 5>>(25); }
    SUBCASE("Conv2d 1x1 stride 2") { check_layer_gradients<nn::Conv2d<3, 2, 1, 2>, Shape<2, 5, 4, 3>>(26); }
    SUBCASE("Conv2dNoBias") { check_layer_gradients<nn::Conv2dNoBias<2, 3, 3, 1, 1>, Shape<2, 4, 4, 2>>(27); }
    SUBCASE("Conv2d with the fused ReLU")
    {
        check_layer_gradients<nn::conv2d_unit<2, 4, 3, 1, 1, 1, 1, true, linalg::activation::relu>, Shape<2, 5, 5, 2>>(28);
    }
    SUBCASE("MaxPool2d 2x2") { check_layer_gradients<nn::MaxPool2d<2>, Shape<2, 6, 5, 3>>(30); }
    SUBCASE("MaxPool2d 3x3, stride 2, padding 1 (overlapping windows)")
    {
        check_layer_gradients<nn::MaxPool2d<3, 2, 1>, Shape<2, 7, 6, 2>>(31);
    }
    SUBCASE("AvgPool2d 2x2") { check_layer_gradients<nn::AvgPool2d<2>, Shape<2, 5, 6, 3>>(32); }
    SUBCASE("AvgPool2d 3x3, stride 2, padding 1") { check_layer_gradients<nn::AvgPool2d<3, 2, 1>, Shape<2, 6, 7, 2>>(33); }
    SUBCASE("GlobalAvgPool2d") { check_layer_gradients<nn::GlobalAvgPool2d, Shape<3, 4, 5, 2>>(34); }
    SUBCASE("BatchNorm2d, batch statistics") { check_layer_gradients<nn::BatchNorm2d<3>, Shape<2, 3, 4, 3>>(35); }
    SUBCASE("BatchNorm2d without affine parameters")
    {
        check_layer_gradients<nn::BatchNorm2d<2, nn::batchnorm_options{.affine = false}>, Shape<3, 2, 3, 2>>(36);
    }
    SUBCASE("Flatten") { check_layer_gradients<nn::Flatten, Shape<2, 3, 4, 2>>(37); }
    SUBCASE("FlattenCHW") { check_layer_gradients<nn::FlattenCHW, Shape<2, 3, 4, 2>>(38); }
}

TEST_CASE("FlattenCHW puts NHWC features in PyTorch's (c, h, w) order, inside a Sequential and last")
{
    using In = Shape<2, 3, 4, 5>;
    Tensor<f32, In, Host> x;
    x = random_normal<In>(5, 0);
    nn::model<nn::FlattenCHW, fp32, In, Host> flat(1);
    const auto& y = flat.forward(x);
    for (std::size_t n = 0; n < 2; ++n)
        for (std::size_t h = 0; h < 3; ++h)
            for (std::size_t w = 0; w < 4; ++w)
                for (std::size_t c = 0; c < 5; ++c)
                    CHECK(y.data()[n * 60 + (c * 3 + h) * 4 + w] == x.data()[((n * 3 + h) * 4 + w) * 5 + c]);
    using net = nn::Sequential<nn::Conv2d<2, 3, 3, 1, 1>, nn::FlattenCHW, nn::Linear<48, 4>>;
    check_gradients_f64<nn::model<net, f64_policy, Shape<2, 4, 4, 2>, Host>>(95);
}

namespace {

// Max pooling from the definition: the first NaN, else the first largest
// value in row-major window order; padding skipped. Returns (values, taps).
template <class In, std::size_t K, std::size_t S, std::size_t P>
std::pair<std::vector<double>, std::vector<long>> reference_max_pool(const double* x)
{
    constexpr std::size_t N = In::extents[0], H = In::extents[1], W = In::extents[2], C = In::extents[3];
    constexpr std::size_t Ho = (H + 2 * P - K) / S + 1, Wo = (W + 2 * P - K) / S + 1;
    std::vector<double> y(N * Ho * Wo * C);
    std::vector<long> from(y.size(), -1);
    for (std::size_t n = 0; n < N; ++n)
        for (std::size_t oh = 0; oh < Ho; ++oh)
            for (std::size_t ow = 0; ow < Wo; ++ow)
                for (std::size_t c = 0; c < C; ++c) {
                    const std::size_t o = ((n * Ho + oh) * Wo + ow) * C + c;
                    for (std::size_t kh = 0; kh < K; ++kh)
                        for (std::size_t kw = 0; kw < K; ++kw) {
                            const long ih = static_cast<long>(oh * S + kh) - static_cast<long>(P);
                            const long iw = static_cast<long>(ow * S + kw) - static_cast<long>(P);
                            if (ih < 0 || ih >= static_cast<long>(H) || iw < 0 || iw >= static_cast<long>(W)) continue;
                            const long at = static_cast<long>(((n * H + ih) * W + iw) * C + c);
                            const double v = x[at];
                            if (from[o] < 0 || (!std::isnan(y[o]) && (std::isnan(v) || v > y[o]))) y[o] = v, from[o] = at;
                        }
                }
    return {y, from};
}

template <class In, std::size_t K, std::size_t S, std::size_t P>
void check_max_pool(std::uint64_t seed, bool with_specials)
{
    using spec = nn::MaxPool2d<K, S, P>;
    driven<spec, In> d(seed);
    using Out = typename driven<spec, In>::out;
    Tensor<f64, In, Host> x;
    std::mt19937_64 rng(seed);
    for (std::size_t i = 0; i < In::numel; ++i) {
        // small integers: many ties; and some NaN and infinities
        x.data()[i] = static_cast<double>(std::uniform_int_distribution<int>(-3, 3)(rng));
        if (with_specials && i % 11 == 3) x.data()[i] = (i % 3 == 0) ? NAN : (i % 3 == 1 ? INFINITY : -INFINITY);
    }
    const auto dy = random_tensor<f64, Out>(seed + 1);
    Tensor<f64, Out, Host> y;
    Tensor<f64, In, Host> dx;
    testing::poison(y);
    testing::poison(dx);
    d.forward(x, y);
    d.backward(dy, dx);
    const auto [want, from] = reference_max_pool<In, K, S, P>(x.data());
    std::vector<double> want_dx(In::numel, 0.0);
    for (std::size_t o = 0; o < Out::numel; ++o) want_dx[static_cast<std::size_t>(from[o])] += dy.data()[o];
    for (std::size_t i = 0; i < Out::numel; ++i) {
        INFO("output " << i);
        if (std::isnan(want[i])) CHECK(std::isnan(y.data()[i]));
        else CHECK(y.data()[i] == want[i]);
    }
    for (std::size_t i = 0; i < In::numel; ++i) {
        INFO("dx " << i);
        CHECK(dx.data()[i] == doctest::Approx(want_dx[i]).epsilon(1e-12).scale(1));
    }
}

}  // namespace

TEST_CASE("MaxPool2d: ties go to the first tap, NaN propagates, the gradient follows the choice")
{
    SUBCASE("2x2") { check_max_pool<Shape<2, 6, 6, 3>, 2, 2, 0>(40, false); }
    SUBCASE("2x2 with NaN and infinities") { check_max_pool<Shape<2, 6, 6, 3>, 2, 2, 0>(41, true); }
    SUBCASE("3x3, stride 2, padding 1, odd extents") { check_max_pool<Shape<2, 7, 5, 2>, 3, 2, 1>(42, true); }
    SUBCASE("3x3, stride 1 (every input in several windows)") { check_max_pool<Shape<1, 5, 6, 2>, 3, 1, 0>(43, false); }
    // the host loop's cases: windows that tile the input, and those that leave inputs out
    SUBCASE("2x2 on odd extents (the last row and column in no window)") { check_max_pool<Shape<2, 7, 5, 3>, 2, 2, 0>(44, true); }
    SUBCASE("2x2, stride 3 (gaps between windows)") { check_max_pool<Shape<1, 8, 8, 2>, 2, 3, 0>(45, true); }
    SUBCASE("2x2, stride 2, padding 1 (windows cut by the border)") { check_max_pool<Shape<2, 5, 6, 4>, 2, 2, 1>(46, true); }
    SUBCASE("2x2 over 32 channels (whole vectors)") { check_max_pool<Shape<1, 4, 6, 32>, 2, 2, 0>(47, true); }
}

TEST_CASE("AvgPool2d and GlobalAvgPool2d against float64 (padding counts as zeros)")
{
    using In = Shape<2, 7, 6, 3>;
    const auto x = random_tensor<f64, In>(50);
    {
        driven<nn::AvgPool2d<3, 2, 1>, In> d(1);
        Tensor<f64, Shape<2, 4, 3, 3>, Host> y;
        testing::poison(y);
        d.forward(x, y);
        for (std::size_t n = 0; n < 2; ++n)
            for (std::size_t oh = 0; oh < 4; ++oh)
                for (std::size_t ow = 0; ow < 3; ++ow)
                    for (std::size_t c = 0; c < 3; ++c) {
                        double sum = 0;
                        for (long kh = 0; kh < 3; ++kh)
                            for (long kw = 0; kw < 3; ++kw) {
                                const long ih = static_cast<long>(oh) * 2 + kh - 1, iw = static_cast<long>(ow) * 2 + kw - 1;
                                if (ih >= 0 && ih < 7 && iw >= 0 && iw < 6) sum += x.data()[((n * 7 + ih) * 6 + iw) * 3 + c];
                            }
                        CHECK(y.data()[((n * 4 + oh) * 3 + ow) * 3 + c] == doctest::Approx(sum / 9).epsilon(1e-13).scale(1));
                    }
    }
    {
        driven<nn::GlobalAvgPool2d, In> d(1);
        Tensor<f64, Shape<2, 3>, Host> y;
        testing::poison(y);
        d.forward(x, y);
        for (std::size_t n = 0; n < 2; ++n)
            for (std::size_t c = 0; c < 3; ++c) {
                double sum = 0;
                for (std::size_t p = 0; p < 42; ++p) sum += x.data()[(n * 42 + p) * 3 + c];
                CHECK(y.data()[n * 3 + c] == doctest::Approx(sum / 42).epsilon(1e-13).scale(1));
            }
    }
}

namespace {

struct channel_statistics {
    std::vector<double> mean, var;  // biased variance
};

template <std::size_t C>
channel_statistics statistics(const double* x, std::size_t rows)
{
    channel_statistics s{std::vector<double>(C, 0.0), std::vector<double>(C, 0.0)};
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < C; ++c) s.mean[c] += x[r * C + c] / static_cast<double>(rows);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < C; ++c) s.var[c] += std::pow(x[r * C + c] - s.mean[c], 2) / static_cast<double>(rows);
    return s;
}

}  // namespace

TEST_CASE("BatchNorm2d: batch statistics, running statistics over steps, and eval mode, against float64")
{
    constexpr std::size_t C = 3, rows = 2 * 4 * 5;
    using In = Shape<2, 4, 5, C>;
    driven<nn::BatchNorm2d<C>, In> d(1);
    const auto table = d.parameters();
    // gamma and beta away from 1 and 0
    for (std::size_t c = 0; c < C; ++c) {
        d.values[table.at("weight").first + c] = 0.5 + c;
        d.values[table.at("bias").first + c] = 0.25 * c - 0.3;
    }
    std::vector<double> running_mean(C, 0.0), running_var(C, 1.0);
    Tensor<f64, In, Host> y;
    for (std::uint64_t step = 0; step < 4; ++step) {
        auto x = random_tensor<f64, In>(60 + step, 1.0 + static_cast<double>(step));
        for (std::size_t i = 0; i < In::numel; ++i) x.data()[i] += 10.0 * static_cast<double>(i % C);  // offset channels
        testing::poison(y);
        d.forward(x, y);
        const auto s = statistics<C>(x.data(), rows);
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t c = 0; c < C; ++c) {
                const double want = (x.data()[r * C + c] - s.mean[c]) / std::sqrt(s.var[c] + 1e-5) * (0.5 + c) + (0.25 * c - 0.3);
                CHECK(y.data()[r * C + c] == doctest::Approx(want).epsilon(1e-9).scale(1));
            }
        for (std::size_t c = 0; c < C; ++c) {
            running_mean[c] = 0.9 * running_mean[c] + 0.1 * s.mean[c];
            running_var[c] = 0.9 * running_var[c] + 0.1 * s.var[c] * rows / (rows - 1.0);
        }
    }
    // the buffers: running_mean then running_var, f32
    std::map<std::string, const f32*> buffers;
    d.layer->for_each_buffer([&](const std::string& name, auto view) { buffers[name] = view.data(); }, "");
    REQUIRE(buffers.size() == 2);
    for (std::size_t c = 0; c < C; ++c) {
        CHECK(buffers.at("running_mean")[c] == doctest::Approx(running_mean[c]).epsilon(1e-6));
        CHECK(buffers.at("running_var")[c] == doctest::Approx(running_var[c]).epsilon(1e-6));
    }
    // evaluation: the running statistics, which stay where they are
    const auto x = random_tensor<f64, In>(70);
    testing::poison(y);
    d.forward(x, y, false);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < C; ++c) {
            const double want = (x.data()[r * C + c] - static_cast<f32>(running_mean[c])) /
                                    std::sqrt(static_cast<double>(static_cast<f32>(running_var[c])) + 1e-5) * (0.5 + c) +
                                (0.25 * c - 0.3);
            CHECK(y.data()[r * C + c] == doctest::Approx(want).epsilon(1e-6).scale(1));
        }
    CHECK(buffers.at("running_mean")[0] == doctest::Approx(running_mean[0]).epsilon(1e-6));
    // the eval-mode backward: dx = dy gamma / sqrt(running_var + eps)
    const auto dy = random_tensor<f64, In>(71);
    Tensor<f64, In, Host> dx;
    testing::poison(dx);
    d.backward(dy, dx);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < C; ++c)
            CHECK(dx.data()[r * C + c] ==
                  doctest::Approx(dy.data()[r * C + c] * (0.5 + c) /
                                  std::sqrt(static_cast<double>(static_cast<f32>(running_var[c])) + 1e-5))
                      .epsilon(1e-6)
                      .scale(1));
}

namespace {

using small_cnn = nn::Sequential<nn::Conv2d<2, 6, 3, 1, 1>, nn::ReLU, nn::BatchNorm2d<6>, nn::MaxPool2d<2>,
                                 nn::Conv2d<6, 8, 3, 2, 1, 1, 2>, nn::ReLU, nn::AvgPool2d<2, 1>, nn::Flatten,
                                 nn::Linear<8, 5>>;
using small_in = Shape<4, 8, 8, 2>;

template <class M>
std::vector<float> buffer_values(M& m)
{
    std::vector<float> v;
    m.for_each_buffer([&](const std::string&, auto view) {
        for (std::size_t i = 0; i < decltype(view)::shape::numel; ++i) v.push_back(view.data()[i]);
    });
    return v;
}

}  // namespace

TEST_CASE("a CNN: parameter names, fused conv+ReLU units, byte counts, and the whole model's gradients")
{
    using M = nn::model<small_cnn, f64_policy, small_in, Host>;
    M m(5);
    const auto table = parameter_table(m);
    for (const char* name : {"0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias", "8.weight", "8.bias"})
        CHECK(table.count(name) == 1);
    CHECK(table.size() == 8);
    CHECK(table.at("0.weight").second == 6 * 3 * 3 * 2);
    CHECK(table.at("4.weight").second == 8 * 3 * 3 * 3);
    CHECK(m.parameter_list().find("buffers: 2.running_mean[6] 2.running_var[6]") != std::string::npos);
    CHECK(M::buffer_numel == 2 * nn::padded_numel<f32>(6));
    // the conv+ReLU units keep no activation of their own between them
    static_assert(M::layer_type::parameter_count == 6 * 18 + 6 + 12 + 8 * 27 + 8 + 8 * 5 + 5);

    // every parameter's gradient through the whole model (BatchNorm with batch statistics)
    check_gradients_f64<M>(5);
}

TEST_CASE("a CNN under fp32, bf16_mixed and fp16_mixed against the float64 model with the same parameters")
{
    nn::model<small_cnn, f64_policy, small_in, Host> exact(9);
    nn::model<small_cnn, fp32, small_in, Host> single(9);
    nn::model<small_cnn, bf16_mixed, small_in, Host> bf(9);
    nn::model<small_cnn, fp16_mixed, small_in, Host> half(9);
    const auto t_exact = parameter_table(exact), t_single = parameter_table(single), t_bf = parameter_table(bf),
               t_half = parameter_table(half);
    // one set of parameters, representable in bf16 and fp16 (bf16 values of fp16 range)
    for (const auto& [name, where] : t_bf)
        for (std::size_t j = 0; j < where.second; ++j) {
            const double v = convert<f64>(bf.parameters()[where.first + j]);
            exact.parameters()[t_exact.at(name).first + j] = v;
            single.parameters()[t_single.at(name).first + j] = convert<f32>(v);
            half.parameters()[t_half.at(name).first + j] = convert<f16>(v);
        }
    auto x = random_tensor<f64, small_in>(10);
    Tensor<f32, small_in, Host> x32;
    Tensor<bf16, small_in, Host> xb;
    Tensor<f16, small_in, Host> xh;
    for (std::size_t i = 0; i < small_in::numel; ++i) {
        xb.data()[i] = convert<bf16>(x.data()[i]);
        x.data()[i] = convert<f64>(xb.data()[i]);
        x32.data()[i] = convert<f32>(x.data()[i]);
        xh.data()[i] = convert<f16>(x.data()[i]);
    }
    const auto r = random_tensor<f64, Shape<4, 5>>(11);
    const auto& y = exact.forward(x);
    const auto& y32 = single.forward(x32);
    const auto& yb = bf.forward(xb);
    const auto& yh = half.forward(xh);
    double scale = 0;
    for (std::size_t i = 0; i < 20; ++i) scale = std::max(scale, std::fabs(y.data()[i]));
    for (std::size_t i = 0; i < 20; ++i) {
        INFO("logit " << i);
        CHECK(std::fabs(convert<f64>(y32.data()[i]) - y.data()[i]) <= 1e-5 * scale);
        CHECK(std::fabs(convert<f64>(yb.data()[i]) - y.data()[i]) <= 0.05 * scale);   // bf16: 8 significant bits
        CHECK(std::fabs(convert<f64>(yh.data()[i]) - y.data()[i]) <= 0.01 * scale);   // fp16: 11
    }
    exact.backward(r);
    single.backward(r);
    bf.backward(r);
    half.backward(r);
    for (const auto& [name, where] : t_bf) {
        double norm = 0, e32 = 0, eb = 0, eh = 0;
        for (std::size_t j = 0; j < where.second; ++j) {
            const double want = exact.gradients()[t_exact.at(name).first + j];
            norm += want * want;
            e32 += std::pow(single.gradients()[t_single.at(name).first + j] - want, 2);
            eb += std::pow(bf.gradients()[where.first + j] - want, 2);
            eh += std::pow(half.gradients()[t_half.at(name).first + j] - want, 2);
        }
        INFO(name << ": |g| " << std::sqrt(norm) << ", f32 " << std::sqrt(e32) << ", bf16 " << std::sqrt(eb) << ", fp16 " << std::sqrt(eh));
        CHECK(std::sqrt(e32) <= 1e-4 * std::sqrt(norm) + 1e-7);
        CHECK(std::sqrt(eb) <= 0.1 * std::sqrt(norm) + 1e-3);
        CHECK(std::sqrt(eh) <= 0.02 * std::sqrt(norm) + 1e-4);
    }
}

TEST_CASE("a Checkpointed CNN segment: the same gradients, the running statistics moved once per step")
{
    using plain = nn::Sequential<nn::Conv2d<2, 4, 3, 1, 1>, nn::ReLU, nn::BatchNorm2d<4>, nn::MaxPool2d<2>, nn::Flatten,
                                 nn::Linear<64, 3>>;
    using checkpointed = nn::Sequential<nn::Checkpointed<nn::Conv2d<2, 4, 3, 1, 1>, nn::ReLU, nn::BatchNorm2d<4>>,
                                        nn::MaxPool2d<2>, nn::Flatten, nn::Linear<64, 3>>;
    using In = Shape<2, 8, 8, 2>;
    nn::model<plain, fp32, In, Host> a(3);
    nn::model<checkpointed, fp32, In, Host> b(3);
    REQUIRE(decltype(a)::flat_numel == decltype(b)::flat_numel);
    std::copy(a.parameters(), a.parameters() + decltype(a)::flat_numel, b.parameters());
    for (std::uint64_t step = 0; step < 2; ++step) {
        const auto x = random_tensor<f32, In>(20 + step);
        const auto r = random_tensor<f32, Shape<2, 3>>(30 + step);
        a.forward(x);
        b.forward(x);
        a.backward(r);
        b.backward(r);
    }
    for (std::size_t i = 0; i < decltype(a)::flat_numel; ++i) {
        INFO("gradient " << i);
        CHECK(a.gradients()[i] == b.gradients()[i]);
    }
    CHECK(buffer_values(a) == buffer_values(b));
}

TEST_CASE("BatchNorm2d's running statistics: saved with the parameters, restored, untouched by the optimizer")
{
    using net = nn::Sequential<nn::Conv2d<1, 4, 3>, nn::BatchNorm2d<4>, nn::ReLU, nn::GlobalAvgPool2d, nn::Linear<4, 3>>;
    using In = Shape<8, 6, 6, 1>;
    using M = nn::model<net, fp32, In, Host>;
    M m(1);
    train::trainer t(m, train::adamw{0.9f, 0.999f, 1e-8f, 0.5f}, train::constant_lr{1e-2f});
    Tensor<f32, In, Host> x;
    Tensor<i32, Shape<8>, Host> labels;
    Tensor<f32, Shape<8>, Host> valid;
    std::mt19937_64 rng(5);
    for (std::size_t i = 0; i < 8; ++i) labels.data()[i] = static_cast<i32>(i % 3), valid.data()[i] = 1;
    for (int step = 0; step < 3; ++step) {
        x = random_tensor<f32, In>(40 + step, 10.0);
        t.step(x, labels, valid);
    }
    const auto after_training = buffer_values(m);
    // weight decay 0.5 would have pulled buffers towards 0; the running
    // variance of the convolution's outputs (variance ~30 here) has moved up
    // from 1 instead
    bool moved = false;
    REQUIRE(after_training.size() == 8);  // running_mean[4], running_var[4]
    for (std::size_t c = 0; c < 4; ++c) moved = moved || after_training[4 + c] > 2.0f;
    CHECK(moved);

    const auto path = (std::filesystem::temp_directory_path() / "tenet_conv_buffers.ckpt").string();
    t.save(path);
    m.save(path + ".model");
    x = random_tensor<f32, In>(50, 3.0);
    t.step(x, labels, valid);
    CHECK(buffer_values(m) != after_training);
    t.load(path);
    CHECK(buffer_values(m) == after_training);
    t.step(x, labels, valid);
    m.load(path + ".model");
    CHECK(buffer_values(m) == after_training);

    // a file whose buffers are not finite is refused whole, the model unchanged
    m.for_each_buffer([](const std::string& name, auto view) {
        if (name == "1.running_var") view.data()[0] = std::numeric_limits<float>::quiet_NaN();
    });
    m.save(path + ".bad");
    m.load(path + ".model");
    const auto parameters_before = std::vector<f32>(m.parameters(), m.parameters() + M::flat_numel);
    CHECK_THROWS_AS(m.load(path + ".bad"), format_error);
    CHECK(buffer_values(m) == after_training);
    CHECK(std::vector<f32>(m.parameters(), m.parameters() + M::flat_numel) == parameters_before);
    // a model without buffers does not load a file with them (another signature)
    nn::model<nn::Sequential<nn::Conv2d<1, 4, 3>, nn::ReLU, nn::GlobalAvgPool2d, nn::Linear<4, 3>>, fp32, In, Host> other(1);
    CHECK_THROWS_AS(other.load(path + ".model"), format_error);
    for (const auto& p : {path, path + ".model", path + ".bad"}) std::filesystem::remove(p);
}

namespace {

template <class T, class S>
Tensor<T, S, Host> awkward_tensor(std::uint64_t seed)
{
    Tensor<T, S, Host> t;
    std::mt19937_64 rng(seed);
    for (std::size_t i = 0; i < S::numel; ++i) {
        // small integers (ties), and now and then NaN or an infinity
        const int k = std::uniform_int_distribution<int>(-3, 3)(rng);
        t.data()[i] = convert<T>(i % 13 == 5 ? (k > 0 ? NAN : k * INFINITY) : static_cast<double>(k));
    }
    return t;
}

template <class T, class S>
void check_same_bits(const Tensor<T, S, Host>& a, const Tensor<T, S, Host>& b)
{
    CHECK(std::memcmp(a.data(), b.data(), S::numel * sizeof(T)) == 0);
}

// The gathers as expressions (what the device runs) against the host loops
// the layers use on the host: the same bits.
template <class T, class In, std::size_t K, std::size_t S, std::size_t P, std::size_t D, std::size_t Groups>
void check_gathers(std::uint64_t seed)
{
    using G = conv::window_geometry<In, K, S, P, D>;
    const auto x = awkward_tensor<T, In>(seed);
    Tensor<T, conv::columns_shape<G, Groups>, Host> by_expression, by_loop;
    testing::poison(by_expression);
    testing::poison(by_loop);
    by_expression = conv::im2col<G, Groups>(x);
    conv::detail::host_im2col<G, Groups>(by_loop.data(), x.data());
    check_same_bits(by_expression, by_loop);

    const auto columns = random_tensor<T, conv::columns_shape<G, Groups>>(seed + 1);
    Tensor<T, In, Host> dx_expression, dx_loop;
    testing::poison(dx_expression);
    testing::poison(dx_loop);
    dx_expression = conv::col2im<G, Groups>(columns);
    conv::detail::host_col2im<G, Groups>(dx_loop.data(), columns.data());
    check_same_bits(dx_expression, dx_loop);
}

template <class T, class In, std::size_t K, std::size_t S, std::size_t P>
void check_max_pool_paths(std::uint64_t seed)
{
    using G = conv::window_geometry<In, K, S, P>;
    using Out = typename G::template output_shape<G::channels>;
    const auto x = awkward_tensor<T, In>(seed);
    const auto dy = random_tensor<T, Out>(seed + 1);
    Tensor<T, Out, Host> y_expression, y_loop;
    testing::poison(y_expression);
    testing::poison(y_loop);
    y_expression = conv::max_pool2d<G>(x);
    conv::max_pool2d_into<G>(y_loop.view(), x.view());
    check_same_bits(y_expression, y_loop);
    Tensor<T, In, Host> dx_expression, dx_loop;
    testing::poison(dx_expression);
    testing::poison(dx_loop);
    dx_expression = conv::max_pool2d_backward<G>(x, dy);
    conv::max_pool2d_backward_into<G>(dx_loop.view(), x.view(), dy.view());
    check_same_bits(dx_expression, dx_loop);
}

}  // namespace

TEST_CASE("the gather expressions (the device's path) give the host loops' bits")
{
    check_gathers<f32, Shape<2, 7, 6, 4>, 3, 2, 1, 1, 1>(80);
    check_gathers<bf16, Shape<2, 7, 6, 4>, 3, 1, 2, 2, 2>(81);
    check_gathers<f16, Shape<1, 5, 9, 6>, 3, 2, 1, 1, 6>(82);
    check_gathers<f32, Shape<2, 4, 4, 3>, 1, 2, 0, 1, 1>(83);
    check_max_pool_paths<f32, Shape<2, 8, 7, 5>, 2, 2, 0>(84);
    check_max_pool_paths<bf16, Shape<2, 9, 9, 3>, 3, 3, 1>(85);
    check_max_pool_paths<f16, Shape<1, 7, 6, 4>, 2, 3, 1>(86);
    check_max_pool_paths<f32, Shape<2, 7, 7, 2>, 3, 2, 1>(87);  // overlapping: the expression on both
}

TEST_CASE("the host gathers refuse a destination that overlaps what they read")
{
    using G = conv::window_geometry<Shape<1, 4, 4, 2>, 2, 2, 0>;
    Tensor<f32, Shape<1, 4, 4, 2>, Host> x;
    x = random_normal<Shape<1, 4, 4, 2>>(1, 0);
    const auto y = make_view<Shape<1, 2, 2, 2>, Host>(x.data() + 4);
    CHECK_THROWS_AS(conv::max_pool2d_into<G>(y, x.view()), aliasing_error);
}

TEST_CASE("pruning reaches convolutions: magnitude per layer and global, 2:4 along input channels, kept by the optimizer")
{
    using net = nn::Sequential<nn::Conv2d<4, 8, 3, 1, 1>, nn::ReLU, nn::Conv2d<8, 8, 3, 1, 1, 1, 2>, nn::ReLU,
                               nn::GlobalAvgPool2d, nn::Linear<8, 3>>;
    using In = Shape<4, 6, 6, 4>;
    using M = nn::model<net, fp32, In, Host>;
    M m(1);
    train::trainer_options options;
    options.optimizer.masked = true;
    train::trainer t(m, train::adamw{}, train::constant_lr{1e-2f}, options);
    auto& optimizer = t.optimizer();
    Tensor<i32, Shape<4>, Host> labels;
    Tensor<f32, Shape<4>, Host> valid;
    for (std::size_t i = 0; i < 4; ++i) labels.data()[i] = static_cast<i32>(i % 3), valid.data()[i] = 1;
    auto zeros_of = [&](const std::string& name) {
        std::size_t zeros = 0, total = 0;
        m.for_each_parameter([&](const std::string& n, auto value, auto) {
            if (n != name) return;
            for (std::size_t i = 0; i < decltype(value)::shape::numel; ++i) zeros += value.data()[i] == 0.0f, ++total;
        });
        return static_cast<double>(zeros) / static_cast<double>(total);
    };
    auto train_steps = [&](std::uint64_t seed) {
        for (std::uint64_t s = 0; s < 3; ++s) {
            const auto x = random_tensor<f32, In>(seed + s);
            t.step(x, labels, valid);
        }
    };
    // the conv weights [8, 3, 3, 4] and [8, 3, 3, 4] are prunable; biases are not
    CHECK(optimizer.masks().prunable().size() == 3);
    prune::magnitude(optimizer.masks(), 0.5, prune::scope::per_layer);
    optimizer.apply_masks();
    train_steps(100);
    CHECK(zeros_of("0.weight") == doctest::Approx(0.5));
    CHECK(zeros_of("2.weight") == doctest::Approx(0.5));
    CHECK(zeros_of("0.bias") == 0.0);
    prune::magnitude(optimizer.masks(), 0.75, prune::scope::global);
    optimizer.apply_masks();
    train_steps(200);
    const double global_zeros = (zeros_of("0.weight") * 288 + zeros_of("2.weight") * 288 + zeros_of("5.weight") * 24) / 600;
    CHECK(global_zeros == doctest::Approx(0.75).epsilon(0.01));

    optimizer.masks().reset();
    prune::two_four(optimizer.masks());  // groups of 4 input channels of each tap
    optimizer.apply_masks();
    train_steps(300);
    CHECK(prune::satisfies_n_of_m<2, 4>(optimizer.masks()));
    m.for_each_parameter([&](const std::string& name, auto value, auto) {
        using S = typename decltype(value)::shape;
        if constexpr (S::rank == 4) {
            for (std::size_t g = 0; g < S::numel / 4; ++g) {
                int nonzero = 0;
                for (std::size_t k = 0; k < 4; ++k) nonzero += value.data()[g * 4 + k] != 0.0f;
                INFO(name << " group " << g);
                CHECK(nonzero <= 2);
            }
        }
    });
}

TEST_CASE("2:4 with skip_misfits leaves a convolution of one input channel dense")
{
    using net = nn::Sequential<nn::Conv2d<1, 4, 3>, nn::ReLU, nn::Conv2d<4, 4, 3>, nn::Flatten, nn::Linear<16, 3>>;
    nn::model<net, fp32, Shape<2, 6, 6, 1>, Host> m(2);
    prune::masks<decltype(m)> masks(m);
    prune::two_four(masks, prune::skip_misfits);  // prune::two_four(masks) does not compile: [4, 3, 3, 1]
    masks.apply();
    std::map<std::string, std::size_t> zeros;
    m.for_each_parameter([&](const std::string& name, auto value, auto) {
        for (std::size_t i = 0; i < decltype(value)::shape::numel; ++i) zeros[name] += value.data()[i] == 0.0f;
    });
    CHECK(zeros["0.weight"] == 0);
    CHECK(zeros["2.weight"] == 4 * 9 * 4 / 2);
    CHECK(zeros["4.weight"] == 3 * 16 / 2);
    CHECK_FALSE(prune::satisfies_n_of_m<2, 4>(masks));
    CHECK(prune::satisfies_n_of_m<2, 4>(masks, prune::skip_misfits));
}

TEST_CASE("Flatten is a view inside a Sequential: no copy, no tensor, gradients through it anywhere")
{
    using In = Shape<2, 4, 4, 2>;
    using middle = nn::Sequential<nn::Conv2d<2, 3, 3, 1, 1>, nn::Flatten, nn::Linear<48, 4>>;
    using twice = nn::Sequential<nn::Conv2d<2, 3, 3, 1, 1>, nn::Flatten, nn::Flatten, nn::Linear<48, 4>>;
    using nested_first = nn::Sequential<nn::Conv2d<2, 3, 3, 1, 1>, nn::Sequential<nn::Flatten, nn::Linear<48, 4>>>;
    using last = nn::Sequential<nn::Conv2d<2, 3, 3, 1, 1>, nn::Flatten>;
    using checkpointed = nn::Sequential<nn::Checkpointed<nn::Conv2d<2, 3, 3, 1, 1>, nn::Flatten, nn::Linear<48, 4>>>;
    check_gradients_f64<nn::model<middle, f64_policy, In, Host>>(90);
    check_gradients_f64<nn::model<twice, f64_policy, In, Host>>(91);
    check_gradients_f64<nn::model<nested_first, f64_policy, In, Host>>(92);
    check_gradients_f64<nn::model<last, f64_policy, In, Host>>(93);
    check_gradients_f64<nn::model<checkpointed, f64_policy, In, Host>>(94);
    // Flatten keeps nothing: the same bytes as the Sequential without it
    using without = nn::Sequential<nn::Conv2d<2, 3, 3, 1, 1>, nn::Linear<3, 4>>;
    using M1 = nn::model<middle, fp32, In, Host>;
    using M2 = nn::model<without, fp32, In, Host>;
    static_assert(M1::layer_type::activation_bytes == M2::layer_type::activation_bytes &&
                  M1::layer_type::activation_gradient_bytes == M2::layer_type::activation_gradient_bytes);
    // and the output of the layer before it is what the Linear reads
    M1 m(3);
    Tensor<f32, In, Host> x;
    x = random_normal<In>(4, 0);
    const auto& y = m.forward(x);
    nn::model<nn::Sequential<nn::Conv2d<2, 3, 3, 1, 1>, nn::Flatten>, fp32, In, Host> conv_only(3);
    const auto& features = conv_only.forward(x);
    const auto table = parameter_table(m);
    const f32* w = m.parameters() + table.at("2.weight").first;
    const f32* b = m.parameters() + table.at("2.bias").first;
    for (std::size_t r = 0; r < 2; ++r)
        for (std::size_t o = 0; o < 4; ++o) {
            double want = b[o];
            for (std::size_t i = 0; i < 48; ++i) want += static_cast<double>(w[o * 48 + i]) * features.data()[r * 48 + i];
            CHECK(y.data()[r * 4 + o] == doctest::Approx(want).epsilon(1e-5).scale(1));
        }
}
