// fp8 training with delayed scaling: the scale formula and its special cases,
// the amax history ring, the one-step lag of the scale, an fp8 Linear's
// forward and backward against float64 references built from explicitly
// fp8-rounded operands, the parameter layout shared with the plain policy,
// and an MLP that learns under fp8_training<fp32>.
#include "synthetic_task.hpp"
#include "tensor_testing.hpp"

#include <tenet/quant/fp8_linear.hpp>
#include <tenet/train/trainer.hpp>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <random>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;
namespace quant = tenet::quant;
namespace train = tenet::train;

namespace {

constexpr float float_max = std::numeric_limits<float>::max();
constexpr float infinity = std::numeric_limits<float>::infinity();
constexpr float not_a_number = std::numeric_limits<float>::quiet_NaN();

constexpr std::size_t batch = 64, features = 16, hidden = 32, classes = 4;
using spec = nn::Sequential<nn::Linear<features, hidden>, nn::ReLU, nn::Linear<hidden, classes>>;
using fp8_fp32 = quant::fp8_training<fp32>;
// The two layers spec becomes under the policy (Linear + ReLU is one unit).
using hidden_layer = quant::fp8_linear_layer<fp8_fp32, Shape<batch, features>, Host, features, hidden, linalg::activation::relu>;
using output_layer = quant::fp8_linear_layer<fp8_fp32, Shape<batch, hidden>, Host, hidden, classes, linalg::activation::none>;

// A layer bound to parameter buffers of its own.
template <class P, class L>
struct bound {
    using T = typename P::storage;
    Tensor<T, Shape<L::parameter_numel>, Host> values;
    Tensor<nn::gradient_t<P>, Shape<L::parameter_numel>, Host> gradients;
    nn::parameter_slice<T, nn::gradient_t<P>> slice{values.data(), gradients.data(), 0};
    L layer{slice};
};

template <class T, class S>
void fill_normal(Tensor<T, S, Host>& t, std::uint64_t seed, double sigma)
{
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal(0.0, sigma);
    for (std::size_t i = 0; i < S::numel; ++i) t.data()[i] = convert<T>(normal(rng));
}

template <class T, class S>
double amax_of(const Tensor<T, S, Host>& t)
{
    double m = 0;
    for (std::size_t i = 0; i < S::numel; ++i) m = std::max(m, std::fabs(convert<f64>(t.data()[i])));
    return m;
}

float value(const Tensor<f32, Shape<>, Host>& t) { return t.data()[0]; }

// What the layer feeds its GEMMs: fp8(v * s), the product in f32 and rounded
// to Format by convert, widened back and multiplied by s^-1 in f32.
template <class Format, class T>
double dequantized(T v, float s, float s_inverse)
{
    return convert<f32>(convert<Format>(convert<f32>(v) * s)) * s_inverse;
}

struct scales {
    float s, inverse;
};
template <class Scaling>
scales read(const Scaling& scaling)
{
    return {value(scaling.scale()), value(scaling.scale_inverse())};
}

// |got - want| within 1e-5 of the sum of the magnitudes of what was added
// (f32 sums of products) plus the result's own rounding to T.
template <class T>
void check_close(const char* what, const T* got, const std::vector<double>& want, const std::vector<double>& magnitude)
{
    std::size_t bad = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        const double g = convert<f64>(got[i]);
        double allowed = 1e-5 * magnitude[i] + 1e-30;
        if constexpr (!std::is_same_v<T, f32>) allowed += testing::storage_ulp<T>(want[i]);
        if (!(std::fabs(g - want[i]) <= allowed)) {
            if (bad++ < 5) MESSAGE(std::string(what) << "[" << i << "]: got " << g << ", want " << want[i]);
        }
    }
    CHECK_MESSAGE(bad == 0, std::string(what) << ": " << bad << " of " << want.size() << " wrong");
}

// The forward's reference: z = dq(x) dq(W)^T + b in float64 over the
// dequantized fp8 operands (returned for the backward's reference).
struct forward_reference {
    std::vector<double> xq, wq, z, magnitude;
};

template <class P, std::size_t M, std::size_t In, std::size_t Out, class T>
forward_reference reference_forward(const T* x, const T* w, const T* b, scales sx, scales sw)
{
    using e4m3 = typename P::fp8_forward;
    forward_reference r{std::vector<double>(M * In), std::vector<double>(Out * In), std::vector<double>(M * Out),
                        std::vector<double>(M * Out)};
    for (std::size_t i = 0; i < M * In; ++i) r.xq[i] = dequantized<e4m3>(x[i], sx.s, sx.inverse);
    for (std::size_t i = 0; i < Out * In; ++i) r.wq[i] = dequantized<e4m3>(w[i], sw.s, sw.inverse);
    for (std::size_t m = 0; m < M; ++m)
        for (std::size_t o = 0; o < Out; ++o) {
            double z = convert<f64>(b[o]), mag = std::fabs(z);
            for (std::size_t k = 0; k < In; ++k) {
                z += r.xq[m * In + k] * r.wq[o * In + k];
                mag += std::fabs(r.xq[m * In + k] * r.wq[o * In + k]);
            }
            r.z[m * Out + o] = z;
            r.magnitude[m * Out + o] = mag;
        }
    return r;
}

}  // namespace

TEST_CASE("fp8: fp8_max and delayed_scale (normal, margin, amax 0, inf, NaN, tiny)")
{
    CHECK(quant::fp8_max<f8e4m3> == convert<f32>(numeric_traits<f8e4m3>::max()));
    CHECK(quant::fp8_max<f8e5m2> == convert<f32>(numeric_traits<f8e5m2>::max()));
    CHECK(quant::fp8_max<f8e4m3> == 448.0f);
    CHECK(quant::fp8_max<f8e5m2> == 57344.0f);

    CHECK(quant::delayed_scale(2.0f, 7.0f, 448.0f, 0) == 224.0f);
    CHECK(quant::delayed_scale(2.0f, 7.0f, 448.0f, 1) == 112.0f);
    CHECK(quant::delayed_scale(2.0f, 7.0f, 448.0f, 3) == 28.0f);
    CHECK(quant::delayed_scale(3.0f, 7.0f, 57344.0f, 0) == 57344.0f / 3.0f);
    CHECK(quant::delayed_scale(0.5f, 7.0f, 57344.0f, 2) == 28672.0f);
    // kept: no information about the range
    CHECK(quant::delayed_scale(0.0f, 7.0f, 448.0f, 0) == 7.0f);
    CHECK(quant::delayed_scale(infinity, 7.0f, 448.0f, 0) == 7.0f);
    CHECK(quant::delayed_scale(-infinity, 7.0f, 448.0f, 0) == 7.0f);
    CHECK(quant::delayed_scale(not_a_number, 7.0f, 448.0f, 0) == 7.0f);
    // a subnormal amax would give an infinite scale: the largest float instead
    CHECK(quant::delayed_scale(1e-40f, 7.0f, 448.0f, 0) == float_max);
    CHECK(quant::delayed_scale(float_max, 7.0f, 448.0f, 0) == 448.0f / float_max);
    static_assert(quant::delayed_scale(4.0f, 1.0f, 448.0f, 0) == 112.0f);  // constexpr, as kernels use it
}

TEST_CASE("fp8: delayed_scaling's history is a ring over the last H steps; the scale lags one step")
{
    quant::delayed_scaling<f8e4m3, 4, Host> s;
    CHECK(value(s.scale()) == 1.0f);
    CHECK(value(s.scale_inverse()) == 1.0f);
    for (std::size_t i = 0; i < 4; ++i) CHECK(s.history().data()[i] == 0.0f);

    // record alone does not change this step's scale; update does
    s.record(5.0f);
    CHECK(value(s.scale()) == 1.0f);
    s.update();
    CHECK(value(s.scale()) == 448.0f / 5.0f);
    CHECK(value(s.scale_inverse()) == 1.0f / (448.0f / 5.0f));
    // four more steps of amax 1: 5 stays the max while it is among the last 4
    for (int step = 0; step < 3; ++step) {
        s.record(1.0f);
        s.update();
        CHECK(value(s.scale()) == 448.0f / 5.0f);
    }
    s.record(1.0f);  // overwrites the 5
    s.update();
    CHECK(value(s.scale()) == 448.0f);
    for (std::size_t i = 0; i < 4; ++i) CHECK(s.history().data()[i] == 1.0f);

    // The same from a rank-0 tensor of amax (how layers record max(abs(x))).
    Tensor<f32, Shape<3>, Host> x;
    x.data()[0] = 0.25f, x.data()[1] = -7.0f, x.data()[2] = 3.0f;
    s.record(tenet::max(abs(x)));
    s.update();
    CHECK(value(s.scale()) == 64.0f);

    CHECK_THROWS_AS((quant::delayed_scaling<f8e4m3, 4, Host>(-1)), tenet::error);
}

TEST_CASE("fp8: delayed_scaling over random amax sequences with zeros, inf and NaN matches a window reference")
{
    constexpr std::size_t H = 5;
    constexpr int margin = 2;
    quant::delayed_scaling<f8e5m2, H, Host> s(margin);
    std::mt19937_64 rng(17);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::deque<double> window(H, 0.0);
    float want = 1.0f;
    for (int step = 0; step < 60; ++step) {
        const double u = unit(rng);
        const float amax = u < 0.05 ? not_a_number : u < 0.1 ? infinity : u < 0.2 ? 0.0f : static_cast<float>(std::exp(20 * unit(rng) - 10));
        s.record(amax);
        s.update();
        window.pop_front();
        window.push_back(amax);
        bool has_nan = false;
        double m = 0;
        for (const double a : window) has_nan |= std::isnan(a), m = std::max(m, a);
        if (!has_nan && m > 0 && std::isfinite(m)) want = static_cast<float>(57344.0 / m / std::ldexp(1.0, margin));
        CAPTURE(step);
        CHECK(value(s.scale()) == want);
        CHECK(value(s.scale_inverse()) == 1.0f / want);
    }
}

TEST_CASE("fp8: a Linear + ReLU unit's forward and backward equal float64 references over fp8-rounded operands")
{
    bound<fp8_fp32, hidden_layer> b;
    auto& layer = b.layer;
    layer.initialize(3);
    const float* w = b.values.data();
    const float* bias = b.values.data() + nn::padded_numel<f32>(hidden * features);
    static_assert(hidden_layer::activation_bytes ==
                  4 * (batch * features + hidden * features + 2 * batch * hidden) + 3 * (4 * (16 + 2) + 4));

    nn::no_previous_layer none;
    for (int round = 0; round < 3; ++round) {
        CAPTURE(round);
        // The inputs grow each round: the scale from the previous round's
        // amax saturates some of them, which fp8 rounding must reproduce.
        Tensor<f32, Shape<batch, features>, Host> x;
        fill_normal(x, 10 + round, 1.0 + 2.0 * round);
        Tensor<f32, Shape<batch, hidden>, Host> y, dy;
        Tensor<f32, Shape<batch, features>, Host> dx;
        fill_normal(dy, 20 + round, 0.01 * (round + 1));
        testing::poison(y);
        testing::poison(dx);
        testing::poison(b.gradients);

        const scales sx = read(layer.input_scaling()), sw = read(layer.weight_scaling());
        // delayed: this step casts with the previous step's scale, not one from its own amax
        if (round > 0) CHECK(sx.s != static_cast<float>(448.0 / amax_of(x)));
        layer.forward(x, y.view(), nn::step_info{});
        const auto ref = reference_forward<fp8_fp32, batch, features, hidden>(x.data(), w, bias, sx, sw);
        std::vector<double> y_want(ref.z.size());
        for (std::size_t i = 0; i < y_want.size(); ++i) y_want[i] = std::max(ref.z[i], 0.0);
        check_close("y", y.data(), y_want, ref.magnitude);
        // the scale for the next step comes from this step's amax
        CHECK(value(layer.input_scaling().scale()) == static_cast<float>(448.0 / amax_of(x)));

        const scales sg = read(layer.gradient_scaling());
        layer.backward(dy, dx.view(), nn::step_info{}, none);
        // dz = dy where z > 0 (y > 0 exactly then), g = dq(e5m2(dz sg))
        std::vector<double> dz(batch * hidden), g(batch * hidden);
        double dz_amax = 0;
        for (std::size_t i = 0; i < dz.size(); ++i) {
            const float d = y.data()[i] > 0 ? dy.data()[i] : 0.0f;
            dz[i] = d;
            dz_amax = std::max(dz_amax, std::fabs(dz[i]));
            g[i] = dequantized<f8e5m2>(d, sg.s, sg.inverse);
        }
        std::vector<double> dw(hidden * features, 0.0), dw_mag(dw.size(), 0.0), dx_want(batch * features, 0.0),
            dx_mag(dx_want.size(), 0.0), db(hidden, 0.0), db_mag(hidden, 0.0);
        for (std::size_t m = 0; m < batch; ++m)
            for (std::size_t o = 0; o < hidden; ++o) {
                db[o] += dz[m * hidden + o];
                db_mag[o] += std::fabs(dz[m * hidden + o]);
                for (std::size_t k = 0; k < features; ++k) {
                    const double pw = g[m * hidden + o] * ref.xq[m * features + k];
                    dw[o * features + k] += pw, dw_mag[o * features + k] += std::fabs(pw);
                    const double px = g[m * hidden + o] * ref.wq[o * features + k];
                    dx_want[m * features + k] += px, dx_mag[m * features + k] += std::fabs(px);
                }
            }
        check_close("dW", b.gradients.data(), dw, dw_mag);
        check_close("db", b.gradients.data() + nn::padded_numel<f32>(hidden * features), db, db_mag);
        check_close("dx", dx.data(), dx_want, dx_mag);
        CHECK(value(layer.gradient_scaling().scale()) == static_cast<float>(57344.0 / dz_amax));
    }

    // An evaluation forward records nothing.
    const scales before = read(layer.input_scaling());
    Tensor<f32, Shape<batch, features>, Host> x;
    Tensor<f32, Shape<batch, hidden>, Host> y;
    fill_normal(x, 99, 50.0);
    layer.forward(x, y.view(), nn::step_info{0, 0, false});
    CHECK(value(layer.input_scaling().scale()) == before.s);
}

TEST_CASE("fp8: fp8_mixed (bf16 storage) forward equals the float64 reference, rounded to bf16")
{
    using layer_t = quant::fp8_linear_layer<quant::fp8_mixed, Shape<batch, hidden>, Host, hidden, classes, linalg::activation::none>;
    bound<quant::fp8_mixed, layer_t> b;
    b.layer.initialize(5);
    const bf16* w = b.values.data();
    const bf16* bias = b.values.data() + nn::padded_numel<bf16>(classes * hidden);
    for (int round = 0; round < 2; ++round) {
        Tensor<bf16, Shape<batch, hidden>, Host> x;
        Tensor<bf16, Shape<batch, classes>, Host> y;
        fill_normal(x, 30 + round, 3.0 + round);
        testing::poison(y);
        const scales sx = read(b.layer.input_scaling()), sw = read(b.layer.weight_scaling());
        b.layer.forward(x, y.view(), nn::step_info{});
        const auto ref = reference_forward<quant::fp8_mixed, batch, hidden, classes>(x.data(), w, bias, sx, sw);
        check_close("y", y.data(), ref.z, ref.magnitude);
    }
}

TEST_CASE("fp8: fp8_training takes the plain policy's parameters (same layout, names and initial values)")
{
    using plain = nn::model<spec, fp32, Shape<batch, features>, Host>;
    using fp8 = nn::model<spec, fp8_fp32, Shape<batch, features>, Host>;
    static_assert(plain::flat_numel == fp8::flat_numel);
    static_assert(plain::parameter_bytes == fp8::parameter_bytes);
    plain a(7);
    fp8 c(7);
    CHECK(std::equal(a.parameters(), a.parameters() + plain::flat_numel, c.parameters()));
    std::vector<std::pair<std::string, std::ptrdiff_t>> names_a, names_c;
    a.for_each_parameter([&](const std::string& n, auto v, auto) { names_a.emplace_back(n, v.data() - a.parameters()); });
    c.for_each_parameter([&](const std::string& n, auto v, auto) { names_c.emplace_back(n, v.data() - c.parameters()); });
    CHECK(names_a == names_c);
    CHECK(names_c.size() == 4);
    CHECK(names_c.front().first == "0.weight");
    CHECK(names_c.back().first == "2.bias");
}

namespace {

using testing::task;
using host_batch = testing::task_batch<f32, batch, features>;

task make_task(std::size_t n, std::uint64_t seed) { return testing::make_task(n, features, classes, seed); }

}  // namespace

TEST_CASE("fp8: an MLP trained with fp8_training<fp32> learns a 4-class task")
{
    const task train_set = make_task(2048, 1), test_set = make_task(512, 2);
    nn::model<spec, fp8_fp32, Shape<batch, features>, Host> m(3);
    train::trainer t(m, train::adamw{}, train::warmup_cosine_lr{3e-3f, 20, 300, 0.0f});
    host_batch b;
    auto accuracy = [&] {
        for (std::size_t first = 0; first < test_set.y.size(); first += batch) {
            b.fill(test_set, first);
            t.evaluate(b.x, b.labels, b.valid);
        }
        return t.end_epoch().accuracy;
    };
    const double before = accuracy();
    for (int epoch = 0; epoch < 9; ++epoch)
        for (std::size_t first = 0; first < train_set.y.size(); first += batch) {
            b.fill(train_set, first);
            t.step(b.x, b.labels, b.valid);
        }
    const double after = accuracy();
    MESSAGE("fp8_training<fp32>: accuracy " << before << " -> " << after);
    CHECK(before < 0.5);
    CHECK(after > 0.8);
    // the layers' scales moved away from their initial 1
    int moved = 0;
    m.for_each_layer([&](auto& layer) {
        if constexpr (requires { layer.gradient_scaling(); }) moved += value(layer.gradient_scaling().scale()) != 1.0f;
    });
    CHECK(moved == 2);
}
