// Conv2d in f32, bf16_mixed and fp16_mixed on the host engine (oneDNN's plan
// where the build has it -- for bf16 where the CPU has its kernels, for f16
// on f32 copies -- else the im2col
// + GEMM lowering) against float64 loops written from the
// definition: the forward (with and without bias, with the fused ReLU), the
// input, weight and bias gradients. Shapes small enough for oneDNN's plain
// layouts and wide enough for its channel-blocked ones (reorders both ways),
// stride 2 with extents that are not multiples of it, padding, dilation,
// groups, depthwise, 1x1, a batch of 1. Bounds: each result's error against
// 1e-5 of the sum of its terms' magnitudes (f32 accumulation), plus, for a
// result stored in bf16, 2^-8 of its value (one rounding; f16: 2^-11). The
// 16-bit operands are 16-bit values, so the float64 loops read exactly what
// the engine does.
#include "model_testing.hpp"

#include <tenet/exec/host_threads.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
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
    const double rounding = std::is_same_v<T, bf16> ? 0x1p-8 : std::is_same_v<T, f16> ? 0x1p-11 : 0.0;
    std::size_t bad = 0;
    for (std::size_t i = 0; i < want.value.size(); ++i) {
        // (f16: plus half its subnormal spacing, where the rounding is absolute)
        const double tolerance = 1e-5 * want.magnitude[i] + rounding * std::fabs(want.value[i]) +
                                 (std::is_same_v<T, f16> ? 0x1p-25 : 1e-30);
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

TEST_CASE("Conv2d in fp16_mixed on the host engine against float64 loops: f16 values, f32 weight gradients")
{
    MESSAGE("f16 convolutions: " << (conv::runs_on_onednn<f16, f32, Host> ? "oneDNN in f32 on converted copies"
                                                                          : "im2col + GEMM"));
    check_conv_shapes<fp16_mixed>();
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

#if defined(TENET_WITH_ONEDNN) && defined(_OPENMP)
namespace {

// Every pass of one plan, the forward under one thread count and the
// backward under another, on fixed random operands; the results' bits.
template <class T>
struct counts_run {
    conv::onednn_conv2d& plan;
    const conv::conv2d_problem& p;
    std::vector<T> x, w, b, dz;

    std::vector<float> operator()(int forward_threads, int backward_threads)
    {
        const std::size_t outputs = std::size_t(p.batch) * p.out_height * p.out_width * p.out_channels;
        std::vector<T> y(outputs, T(std::nanf(""))), dx(x.size(), T(std::nanf("")));
        std::vector<float> dw(w.size(), std::nanf("")), db(b.size(), std::nanf(""));
        {
            const host_threads_scope scope(forward_threads);
            plan.forward(x.data(), w.data(), b.data(), y.data());
        }
        {
            const host_threads_scope scope(backward_threads);
            plan.backward(dz.data(), x.data(), w.data(), dw.data(), db.data(), dx.data());
        }
        std::vector<float> all;
        for (const auto* v : {&y, &dx})
            for (const T& e : *v) all.push_back(static_cast<float>(e));
        all.insert(all.end(), dw.begin(), dw.end());
        all.insert(all.end(), db.begin(), db.end());
        return all;
    }
};

template <class T>
std::vector<T> random_values(std::size_t n, std::uint64_t seed)
{
    const auto t = random_tensor<f32, Shape<4096>>(seed);
    std::vector<T> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = T(t.data()[(i * 7 + seed) % 4096] * (1.0f + float(i % 13) / 64));
    return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b)
{
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

template <class T>
void check_thread_counts(const conv::conv2d_problem& p, dnnl_data_type_t storage)
{
    const host_threads_scope two(2);
    std::unique_ptr<conv::onednn_conv2d> made;
    try {
        made = std::make_unique<conv::onednn_conv2d>(p, storage);
    } catch (const conv::onednn_error& e) {
        if (e.status() != dnnl_unimplemented) throw;
        MESSAGE("no oneDNN kernel for this CPU: " << e.what());
        return;
    }
    const std::size_t inputs = std::size_t(p.batch) * p.height * p.width * p.in_channels,
                      weights = std::size_t(p.out_channels) * p.kernel * p.kernel * (p.in_channels / p.groups);
    counts_run<T> run{*made, p, random_values<T>(inputs, 1), random_values<T>(weights, 2),
                      random_values<T>(p.bias ? p.out_channels : 0, 3),
                      random_values<T>(std::size_t(p.batch) * p.out_height * p.out_width * p.out_channels, 4)};
    const std::vector<float> reference = run(2, 2);
    CHECK(std::none_of(reference.begin(), reference.end(), [](float v) { return std::isnan(v); }));
    CHECK(same_bits(run(1, 1), reference));  // 1 thread met in a forward: planned, then compared
    CHECK(same_bits(run(2, 1), reference));  // the count changes between the passes
    CHECK(same_bits(run(1, 2), reference));
    CHECK(same_bits(run(3, 3), reference));
    CHECK(same_bits(run(4, 1), reference));  // a count met first in a backward, then in a forward
    CHECK(host_threads() == 2);
    MESSAGE(conv::describe(p) << ": " << made->thread_counts_planned() << " thread counts with primitives of their own");
    // Not hollow: some pass took another count's own primitive.
    CHECK(made->thread_counts_planned() > 1);
}

}  // namespace

TEST_CASE("oneDNN's plan: results do not depend on the thread count a pass runs under")
{
    // the Fashion-MNIST CNN's two convolutions at batch 32 (oneDNN's weight
    // gradient adds per-thread partial sums there), and a strided one
    SUBCASE("28x28x1 -> 32, ReLU, f32")
    {
        check_thread_counts<f32>({32, 28, 28, 1, 28, 28, 32, 3, 1, 1, 1, 1, true, true}, dnnl_f32);
    }
    SUBCASE("14x14x32 -> 64, ReLU, f32")
    {
        check_thread_counts<f32>({32, 14, 14, 32, 14, 14, 64, 3, 1, 1, 1, 1, true, true}, dnnl_f32);
    }
    SUBCASE("14x14x32 -> 64, ReLU, bf16")
    {
        check_thread_counts<bf16>({32, 14, 14, 32, 14, 14, 64, 3, 1, 1, 1, 1, true, true}, dnnl_bf16);
    }
    SUBCASE("9x8x16 -> 48, stride 2, no bias, f32")
    {
        check_thread_counts<f32>({8, 9, 8, 16, 5, 4, 48, 3, 2, 1, 1, 1, false, false}, dnnl_f32);
    }
}
#endif
