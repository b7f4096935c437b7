// Conv2d in f32 and bf16_mixed on the host engine (oneDNN's plan where the
// build has it -- for bf16 where the CPU has its kernels -- else the im2col
// + GEMM lowering) against float64 loops written from the
// definition: the forward (with and without bias, with the fused ReLU), the
// input, weight and bias gradients. Shapes small enough for oneDNN's plain
// layouts and wide enough for its channel-blocked ones (reorders both ways),
// stride 2 with extents that are not multiples of it, padding, dilation,
// groups, depthwise, 1x1, a batch of 1. Bounds: each result's error against
// 1e-5 of the sum of its terms' magnitudes (f32 accumulation), plus, for a
// result stored in bf16, 2^-8 of its value (one rounding). bf16's operands
// are bf16 values, so the float64 loops read exactly what the engine does.
#include "model_testing.hpp"

#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;
using testing::driven, testing::for_each_conv_product, testing::random_tensor;

namespace {

struct reference {
    std::vector<double> value, magnitude;
    explicit reference(std::size_t n) : value(n, 0.0), magnitude(n, 0.0) {}
    void add(std::size_t i, double a, double b)
    {
        value[i] += a * b;
        magnitude[i] += std::fabs(a * b);
    }
};

template <class T>
void check_close(const char* what, const T* got, const reference& want)
{
    const double rounding = std::is_same_v<T, bf16> ? 0x1p-8 : 0.0;
    std::size_t bad = 0;
    for (std::size_t i = 0; i < want.value.size(); ++i) {
        const double tolerance = 1e-5 * want.magnitude[i] + rounding * std::fabs(want.value[i]) + 1e-30;
        if (!(std::fabs(static_cast<double>(got[i]) - want.value[i]) <= tolerance)) {
            if (bad++ < 5)
                FAIL_CHECK(what << "[" << i << "]: " << got[i] << " vs float64 " << want.value[i] << " (tolerance "
                                << tolerance << ")");
        }
    }
    CHECK_MESSAGE(bad == 0, what << ": " << bad << " of " << want.value.size() << " outside the bound");
}

template <class Policy, class In, std::size_t Co, std::size_t K, std::size_t S = 1, std::size_t P = 0,
          std::size_t D = 1, std::size_t G = 1, bool Bias = true, bool Relu = false>
void check_conv(std::uint64_t seed)
{
    using T = typename Policy::storage;
    using spec = nn::conv2d_unit<In::extents[3], Co, K, S, P, D, G, Bias,
                                 Relu ? linalg::activation::relu : linalg::activation::none>;
    using layer_driver = driven<spec, In, Policy>;
    layer_driver d(seed);
    using Out = typename layer_driver::out;
    const auto table = d.parameters();
    const T* w = d.values.data() + table.at("weight").first;
    const T* b = Bias ? d.values.data() + table.at("bias").first : nullptr;

    const auto x = random_tensor<T, In>(seed + 1);
    Tensor<T, Out, Host> y, dy;
    Tensor<T, In, Host> dx;
    testing::poison(y);
    d.forward(x, y);

    reference want_y(Out::numel);
    for (std::size_t i = 0; i < Out::numel; ++i)
        if (Bias) want_y.add(i, static_cast<double>(b[i % Co]), 1.0);
    for_each_conv_product<In, Co, K, S, P, D, G>(
        [&](std::size_t yi, std::size_t xi, std::size_t wi) { want_y.add(yi, double(x.data()[xi]), double(w[wi])); });
    if (Relu)
        for (double& v : want_y.value) v = std::max(v, 0.0);
    check_close("y", y.data(), want_y);

    // the output gradient, masked where the (fused) ReLU was off
    dy = random_tensor<T, Out>(seed + 2);
    std::vector<double> dz(Out::numel);
    for (std::size_t i = 0; i < Out::numel; ++i) dz[i] = Relu && !(y.data()[i] > T(0)) ? 0.0 : double(dy.data()[i]);
    testing::poison(dx);
    for (std::size_t i = 0; i < d.gradients.size(); ++i) d.gradients[i] = std::nanf("");
    d.backward(dy, dx);

    constexpr std::size_t weight_numel = Co * K * K * (In::extents[3] / G);
    reference want_dx(In::numel), want_dw(weight_numel), want_db(Co);
    for_each_conv_product<In, Co, K, S, P, D, G>([&](std::size_t yi, std::size_t xi, std::size_t wi) {
        want_dx.add(xi, dz[yi], double(w[wi]));
        want_dw.add(wi, dz[yi], double(x.data()[xi]));
    });
    for (std::size_t i = 0; i < Out::numel; ++i) want_db.add(i % Co, dz[i], 1.0);
    check_close("dx", dx.data(), want_dx);
    check_close("dw", d.gradients.data() + table.at("weight").first, want_dw);
    if (Bias) check_close("db", d.gradients.data() + table.at("bias").first, want_db);
}

}  // namespace

// Every shape, for one policy.
template <class Policy>
void check_conv_shapes()
{
    SUBCASE("3x3, few channels") { check_conv<Policy, Shape<2, 6, 5, 3>, 4, 3>(1); }
    SUBCASE("3x3, padding 1, batch of 1, fused ReLU") { check_conv<Policy, Shape<1, 5, 6, 2>, 3, 3, 1, 1, 1, 1, true, true>(2); }
    SUBCASE("one input channel (the example's first layer), padding 1, fused ReLU")
    {
        check_conv<Policy, Shape<3, 10, 9, 1>, 32, 3, 1, 1, 1, 1, true, true>(3);
    }
    SUBCASE("32 -> 64 channels, padding 1 (channel-blocked layouts)") { check_conv<Policy, Shape<2, 7, 6, 32>, 64, 3, 1, 1>(4); }
    SUBCASE("16 -> 48 channels, stride 2 over odd extents, no bias, fused ReLU")
    {
        check_conv<Policy, Shape<2, 9, 8, 16>, 48, 3, 2, 1, 1, 1, false, true>(5);
    }
    SUBCASE("dilation 2, padding 2, 24 channels") { check_conv<Policy, Shape<2, 8, 7, 24>, 16, 3, 1, 2, 2>(6); }
    SUBCASE("stride 2 with no padding: the last rows are not read") { check_conv<Policy, Shape<2, 8, 8, 16>, 16, 1, 2>(7); }
    SUBCASE("groups 2, 32 channels") { check_conv<Policy, Shape<2, 6, 6, 32>, 32, 3, 1, 1, 1, 2>(8); }
    SUBCASE("depthwise, 32 channels, stride 2") { check_conv<Policy, Shape<2, 9, 9, 32>, 32, 3, 2, 1, 1, 32>(9); }
    SUBCASE("depthwise with a channel multiplier, few channels") { check_conv<Policy, Shape<1, 5, 5, 2>, 4, 3, 1, 1, 1, 2>(10); }
    SUBCASE("1x1, 32 -> 16 channels") { check_conv<Policy, Shape<2, 5, 4, 32>, 16, 1>(11); }
    SUBCASE("kernel 5, stride 3, no bias") { check_conv<Policy, Shape<1, 11, 8, 2>, 3, 5, 3, 0, 1, 1, false>(12); }
    SUBCASE("kernel as large as the padded input") { check_conv<Policy, Shape<2, 3, 3, 16>, 16, 5, 1, 1>(13); }
}

TEST_CASE("Conv2d in f32 on the host engine against float64 loops: forward, input, weight and bias gradients")
{
    const std::string engine = conv::runs_on_onednn<f32, f32, Host> ? "oneDNN" : "im2col + GEMM";
    MESSAGE("host convolution engine: " << engine);
    check_conv_shapes<fp32>();
}

TEST_CASE("Conv2d in bf16_mixed on the host engine against float64 loops: bf16 values, f32 weight gradients")
{
    using engine = conv::conv2d_engine<conv::window_geometry<Shape<2, 6, 6, 16>, 3, 1, 1>, 1, 16,
                                       linalg::activation::none, true, bf16, f32, Host>;
#if defined(TENET_WITH_ONEDNN)
    const std::string where = engine().on_onednn() ? "oneDNN" : "im2col + GEMM (no oneDNN bf16 kernel for this CPU)";
    MESSAGE("bf16 convolutions: " << where);
#else
    MESSAGE("bf16 convolutions: im2col + GEMM (no oneDNN in this build)");
    (void)sizeof(engine);
#endif
    check_conv_shapes<bf16_mixed>();
}

#if defined(TENET_WITH_ONEDNN)
TEST_CASE("oneDNN's plan: a problem it cannot plan is a tenet::error naming the convolution")
{
    // an output extent that the window does not give
    const conv::conv2d_problem bad{2, 8, 8, 4, 5, 8, 4, 3, 1, 1, 1, 1, true, false};
    CHECK_THROWS_AS(conv::onednn_conv2d{bad}, tenet::error);
    try {
        conv::onednn_conv2d plan(bad);
    } catch (const tenet::error& e) {
        const std::string what = e.what();
        INFO(what);
        CHECK(what.find("tenet: oneDNN failed to plan a convolution (input 2x8x8x4") != std::string::npos);
    }
}

TEST_CASE("oneDNN's plan allocates its buffers at construction and reports them")
{
    conv::onednn_engine<conv::window_geometry<Shape<8, 14, 14, 32>, 3, 1, 1>, 1, 64, linalg::activation::relu, true, f32,
                        Host>
        engine;
    CHECK(engine.workspace_bytes() > 0);
    MESSAGE("workspace of a 14x14x32 -> 64 convolution, batch 8: " << engine.workspace_bytes() << " bytes");
}
#endif
