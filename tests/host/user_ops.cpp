// A user's own elementwise operation, as a user outside tenet:: writes it:
// tenet::map(f, xs...) against float64 loops (unary, binary with broadcast
// and plain numbers, inside a larger fused chain, f32 and bf16 storage), its
// derivative<J> member through gradients(...) against central finite
// differences, and nn::Activation<F> training in a model: a functor that is
// ReLU gives the very parameters nn::ReLU gives.
#include "synthetic_task.hpp"
#include "tensor_testing.hpp"

#include <tenet/nn/nn.hpp>
#include <tenet/train/trainer.hpp>

#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

namespace user {

// x / (1 + |x|), and its derivative 1 / (1 + |x|)^2.
struct softsign {
    template <class X>
    TENET_HD X operator()(X x) const
    {
        return x / (X(1) + (x < X(0) ? -x : x));
    }
    template <std::size_t J, class X>
    TENET_HD X derivative(X x) const
    {
        const X d = X(1) + (x < X(0) ? -x : x);
        return X(1) / (d * d);
    }
    static constexpr auto name() { return tenet::fixed_string("softsign"); }
};

// x * y + sin(x) * k: two operands and a member (a functor may carry state).
struct blend {
    float k;
    template <class X, class Y>
    TENET_HD auto operator()(X x, Y y) const
    {
        return x * y + std::sin(x) * static_cast<X>(k);
    }
    template <std::size_t J, class X, class Y>
    TENET_HD auto derivative(X x, Y y) const
    {
        if constexpr (J == 0) return y + std::cos(x) * static_cast<X>(k);
        else return x;
    }
};

// ReLU written by a user: the same values and derivative as nn::ReLU.
struct my_relu {
    TENET_HD float operator()(float x) const { return x > 0.0f ? x : 0.0f; }
    template <std::size_t J>
    TENET_HD float derivative(float x) const
    {
        return x > 0.0f ? 1.0f : 0.0f;
    }
};

// A layer of the user's own, written against the public protocol
// (nn/layer.hpp): y = x * scale, one learnable scale per feature.
template <std::size_t N>
struct Scale {
    template <class In>
    using output_shape = In;

    template <tenet::precision_policy P, class In, class Place>
    class layer {
        using T = typename P::storage;
        using rows = tenet::Shape<In::numel / N, N>;

    public:
        static constexpr std::size_t parameter_count = N;
        static constexpr std::size_t parameter_numel = tenet::nn::padded_numel<T>(N);
        static constexpr std::size_t activation_bytes = 0;  // keeps a pointer to its input
        static constexpr std::size_t activation_gradient_bytes = 0;
        static constexpr bool wants_preactivation_gradient = false;

        template <class Slice>
        explicit layer(Slice& slice) : scale_(slice.template take<tenet::Shape<N>, Place>())
        {
        }
        void initialize(std::uint64_t seed) { scale_.first = tenet::random_uniform<tenet::Shape<N>>(seed) * 0.5f + 0.75f; }

        template <class X, class Y>
        void forward(const X& x, const Y& y, const tenet::nn::step_info&)
        {
            input_ = x.data();
            tenet::reshape<rows>(y) = tenet::reshape<rows>(x) * scale_.first;
        }

        template <class DY, class DX, class Prev>
        void backward(const DY& dy, const DX& dx, const tenet::nn::step_info&, Prev&)
        {
            const auto x = tenet::make_view<rows, Place>(input_);
            scale_.second = tenet::sum<0>(tenet::reshape<rows>(dy) * x);
            if constexpr (!tenet::nn::is_no_input_gradient<DX>) tenet::reshape<rows>(dx) = tenet::reshape<rows>(dy) * scale_.first;
        }

        template <class F>
        void for_each_parameter(F&& f, const std::string& prefix)
        {
            f(prefix + "scale", scale_.first, scale_.second);
        }

    private:
        decltype(std::declval<tenet::nn::parameter_slice<T, tenet::nn::gradient_t<P>>&>().template take<tenet::Shape<N>, Place>()) scale_;
        const T* input_ = nullptr;
    };
};

// No derivative: fine for forward expressions.
struct clamp_to_unit {
    TENET_HD float operator()(float x) const { return x < -1.0f ? -1.0f : (x > 1.0f ? 1.0f : x); }
};

}  // namespace user

using namespace tenet;
namespace nn = tenet::nn;
namespace train = tenet::train;

namespace {

template <class T, class S>
Tensor<T, S, Host> random_tensor(std::uint64_t seed, double lo = -3, double hi = 3)
{
    Tensor<T, S, Host> t;
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(lo, hi);
    for (std::size_t i = 0; i < S::numel; ++i) t.data()[i] = convert<T>(u(rng));
    return t;
}

template <class T, class S>
double value(const Tensor<T, S, Host>& t, std::size_t i)
{
    return convert<f64>(t.data()[i]);
}

template <class T, class S>
void poison(Tensor<T, S, Host>& t)
{
    for (std::size_t i = 0; i < S::numel; ++i) t.data()[i] = convert<T>(1e30);
}

// |got - want| within the storage type's rounding of want.
template <class T>
bool close(double got, double want)
{
    const double eps = std::is_same_v<T, bf16> ? 1.0 / 128 : 1e-6;
    return std::fabs(got - want) <= eps * (1 + std::fabs(want));
}

}  // namespace

TEST_CASE_TEMPLATE("tenet::map: a user's unary functor, alone and inside a fused chain", T, f32, bf16)
{
    using S = Shape<37, 19>;  // not a multiple of any vector width
    const auto x = random_tensor<T, S>(1);
    Tensor<T, S, Host> y, z;
    poison(y);
    poison(z);
    y = map(user::softsign{}, x);
    z = map(user::softsign{}, x * 2.0f) + 1.0f;
    for (std::size_t i = 0; i < S::numel; ++i) {
        const double v = value(x, i);
        CHECK(close<T>(value(y, i), v / (1 + std::fabs(v))));
        CHECK(close<T>(value(z, i), 2 * v / (1 + std::fabs(2 * v)) + 1));
    }
}

TEST_CASE("tenet::map: two operands broadcast together, plain numbers, a functor with state")
{
    const auto a = random_tensor<f32, Shape<8, 16>>(2);
    const auto b = random_tensor<f32, Shape<16>>(3);
    Tensor<f32, Shape<8, 16>, Host> y, with_number;
    poison(y);
    poison(with_number);
    y = map(user::blend{0.5f}, a, b);
    with_number = map(user::blend{-2.0f}, a, 3);
    for (std::size_t r = 0; r < 8; ++r)
        for (std::size_t c = 0; c < 16; ++c) {
            const double x = value(a, r * 16 + c), w = value(b, c);
            CHECK(close<f32>(value(y, r * 16 + c), x * w + std::sin(x) * 0.5));
            CHECK(close<f32>(value(with_number, r * 16 + c), x * 3 - std::sin(x) * 2));
        }
    // A functor without a derivative works forwards.
    Tensor<f32, Shape<8, 16>, Host> clamped;
    clamped = map(user::clamp_to_unit{}, a);
    for (std::size_t i = 0; i < 8 * 16; ++i) CHECK(value(clamped, i) == std::fmax(-1.0, std::fmin(1.0, value(a, i))));
}

TEST_CASE("tenet::map: gradients through a user's derivative match finite differences")
{
    using S = Shape<6, 5>;
    // Away from softsign's kink at 0, where the difference quotient is not the derivative.
    auto x = random_tensor<f64, S>(4, 0.2, 2.5);
    for (std::size_t i = 0; i < S::numel; i += 2) x.data()[i] = -x.data()[i];
    const auto w = random_tensor<f64, S>(5);
    const auto dy = random_tensor<f64, S>(6);
    Tensor<f64, S, Host> dx, dw;
    poison(dx);
    poison(dw);
    tie(dx, dw) = gradients(map(user::blend{0.75f}, map(user::softsign{}, var<0>(x)), var<1>(w)) * 3.0, dy);

    const double h = 1e-6;
    auto f = [&](double xv, double wv) {
        const double s = xv / (1 + std::fabs(xv));
        return 3 * (s * wv + std::sin(s) * 0.75);
    };
    for (std::size_t i = 0; i < S::numel; ++i) {
        const double xv = x.data()[i], wv = w.data()[i], g = dy.data()[i];
        const double want_dx = g * (f(xv + h, wv) - f(xv - h, wv)) / (2 * h);
        const double want_dw = g * (f(xv, wv + h) - f(xv, wv - h)) / (2 * h);
        CHECK(std::fabs(dx.data()[i] - want_dx) <= 1e-6 * (1 + std::fabs(want_dx)));
        CHECK(std::fabs(dw.data()[i] - want_dw) <= 1e-6 * (1 + std::fabs(want_dw)));
    }
}

TEST_CASE("nn::Activation<F>: a user's ReLU trains exactly as nn::ReLU")
{
    constexpr std::size_t features = 12, classes = 4, batch = 16;
    using mine = nn::Sequential<nn::Linear<features, 24>, nn::Activation<user::my_relu>, nn::Linear<24, classes>>;
    using builtin = nn::Sequential<nn::Linear<features, 24>, nn::ReLU, nn::Linear<24, classes>>;
    nn::model<mine, fp32, Shape<batch, features>, Host> a(7);
    nn::model<builtin, fp32, Shape<batch, features>, Host> b(7);
    static_assert(decltype(a)::flat_numel == decltype(b)::flat_numel);
    train::trainer ta(a, train::adamw{}, train::constant_lr{1e-2f});
    train::trainer tb(b, train::adamw{}, train::constant_lr{1e-2f});
    const auto data = testing::make_task(5 * batch, features, classes, 11);
    testing::task_batch<f32, batch, features> batch_data;
    for (std::size_t first = 0; first < data.y.size(); first += batch) {
        batch_data.fill(data, first);
        ta.step(batch_data.x, batch_data.labels, batch_data.valid);
        tb.step(batch_data.x, batch_data.labels, batch_data.valid);
    }
    std::size_t differing = 0;
    for (std::size_t i = 0; i < decltype(a)::flat_numel; ++i) differing += a.parameters()[i] != b.parameters()[i];
    CHECK(differing == 0);
    CHECK(ta.mean_loss() == tb.mean_loss());
    CHECK(std::isfinite(ta.mean_loss()));
}

static_assert(nn::layer_spec<user::Scale<8>, fp32, Shape<4, 8>, Host>);
static_assert(nn::layer_spec<nn::Linear<8, 3>, bf16_mixed, Shape<4, 8>, Host>);
static_assert(nn::layer_spec<nn::Activation<user::softsign>, fp32, Shape<4, 8>, Host>);
static_assert(nn::layer_spec<nn::LayerNorm<8>, fp32, Shape<4, 8>, Host>);
static_assert(nn::layer_spec<nn::Sequential<nn::Linear<8, 3>, nn::ReLU>, fp32, Shape<4, 8>, Host>);
static_assert(!nn::layer_spec<user::softsign, fp32, Shape<4, 8>, Host>);

TEST_CASE("a user's own layer: its gradients match finite differences; it trains and checkpoints")
{
    constexpr std::size_t features = 12, classes = 4, batch = 16;
    using spec = nn::Sequential<nn::Linear<features, 16>, user::Scale<16>, nn::Tanh, nn::Linear<16, classes>>;
    using model_t = nn::model<spec, training_precision<f64, f64, f64, f64>, Shape<batch, features>, Host>;
    model_t m(3);
    const auto data = testing::make_task(batch, features, classes, 21);
    testing::task_batch<f64, batch, features> b;
    b.fill(data, 0);

    // Mean softmax cross-entropy of the logits, and its gradient, in float64.
    auto loss_of = [&](const auto& logits, Tensor<f64, Shape<batch, classes>, Host>* dlogits) {
        double total = 0;
        for (std::size_t r = 0; r < batch; ++r) {
            double top = -1e300, z = 0;
            for (std::size_t c = 0; c < classes; ++c) top = std::fmax(top, logits.data()[r * classes + c]);
            for (std::size_t c = 0; c < classes; ++c) z += std::exp(logits.data()[r * classes + c] - top);
            const auto label = static_cast<std::size_t>(b.labels.data()[r]);
            total += top + std::log(z) - logits.data()[r * classes + label];
            if (dlogits)
                for (std::size_t c = 0; c < classes; ++c)
                    dlogits->data()[r * classes + c] =
                        (std::exp(logits.data()[r * classes + c] - top) / z - (c == label)) / batch;
        }
        return total / batch;
    };
    Tensor<f64, Shape<batch, classes>, Host> dlogits;
    loss_of(m.forward(b.x), &dlogits);
    m.backward(dlogits);
    std::vector<double> analytic;
    f64* scale = nullptr;
    m.for_each_parameter([&](const std::string& name, auto value, auto gradient) {
        if (name != "1.scale") return;
        scale = value.data();
        analytic.assign(gradient.data(), gradient.data() + 16);
    });
    REQUIRE(scale != nullptr);
    const double h = 1e-6;
    for (std::size_t i = 0; i < 16; ++i) {
        const double kept = scale[i];
        scale[i] = kept + h;
        const double up = loss_of(m.forward(b.x), nullptr);
        scale[i] = kept - h;
        const double down = loss_of(m.forward(b.x), nullptr);
        scale[i] = kept;
        const double numeric = (up - down) / (2 * h);
        CHECK(std::fabs(analytic[i] - numeric) <= 1e-6 * (1 + std::fabs(numeric)));
    }

    // It trains with the trainer, and its parameter round-trips through a checkpoint.
    nn::model<spec, fp32, Shape<batch, features>, Host> net(5);
    train::trainer t(net, train::adamw{}, train::constant_lr{1e-2f});
    const auto task = testing::make_task(8 * batch, features, classes, 22);
    testing::task_batch<f32, batch, features> fb;
    double first = 0, last = 0;
    for (int epoch = 0; epoch < 20; ++epoch) {
        for (std::size_t at = 0; at < task.y.size(); at += batch) {
            fb.fill(task, at);
            t.step(fb.x, fb.labels, fb.valid);
        }
        (epoch == 0 ? first : last) = t.end_epoch().mean_loss;
    }
    CHECK(last < 0.5 * first);
    const auto path = (std::filesystem::temp_directory_path() / "tenet_user_layer.ckpt").string();
    t.save(path);
    std::vector<float> saved(net.parameters(), net.parameters() + decltype(net)::flat_numel);
    fb.fill(task, 0);
    t.step(fb.x, fb.labels, fb.valid);
    t.load(path);
    CHECK(std::equal(saved.begin(), saved.end(), net.parameters()));
    std::filesystem::remove(path);
}
