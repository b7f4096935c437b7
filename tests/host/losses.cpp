// The trainer's loss protocol on the host: mean squared error and a user's
// elementwise loss (Huber) give the gradients a float64 loop gives, padding
// rows contribute nothing whatever they hold, the regression models learn,
// evaluation_loss() is the mean over valid rows; nn::model and
// train::optimizer save and load on their own, and a hand-written loop
// resumed from their files continues exactly.
#include "tensor_testing.hpp"
#include "user_losses.hpp"

#include <tenet/nn/nn.hpp>
#include <tenet/train/trainer.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;
namespace train = tenet::train;

namespace {

constexpr std::size_t features = 6, outputs = 3, batch = 16;
using linear_spec = nn::Linear<features, outputs>;
template <class P = fp32>
using linear_model = nn::model<linear_spec, P, Shape<batch, features>, Host>;

struct regression_batch {
    Tensor<f32, Shape<batch, features>, Host> x;
    Tensor<f32, Shape<batch, outputs>, Host> y;
    Tensor<i32, Shape<batch>, Host> valid;
};

// y = A x + noise for a fixed random A; the last `padding` rows are marked
// invalid and hold NaN targets (and large x), which must not matter.
regression_batch make_batch(std::mt19937_64& rng, std::size_t padding)
{
    static const std::vector<float> a = [] {
        std::mt19937_64 fixed(99);
        std::normal_distribution<float> n(0.0f, 1.0f);
        std::vector<float> v(features * outputs);
        for (auto& e : v) e = n(fixed);
        return v;
    }();
    std::normal_distribution<float> normal(0.0f, 1.0f);
    regression_batch b;
    for (std::size_t r = 0; r < batch; ++r) {
        const bool real = r + padding < batch;
        b.valid.data()[r] = real ? 1 : 0;
        for (std::size_t f = 0; f < features; ++f) b.x.data()[r * features + f] = real ? normal(rng) : 1e30f;
        for (std::size_t o = 0; o < outputs; ++o) {
            float z = 0.1f * normal(rng);
            for (std::size_t f = 0; f < features; ++f) z += a[o * features + f] * b.x.data()[r * features + f];
            b.y.data()[r * outputs + o] = real ? 2.0f * z : std::numeric_limits<float>::quiet_NaN();
        }
    }
    return b;
}

// The float64 gradient of mean over valid elements of l(p, t) with respect to
// the linear model's weight and bias, given dl/dp, at the model's parameters.
template <class M, class DL>
std::vector<double> reference_gradient(M& m, const regression_batch& b, DL dl)
{
    std::vector<double> w(features * outputs), bias(outputs), grad(M::flat_numel, 0.0);
    std::size_t w_at = 0, b_at = 0;
    m.for_each_parameter([&](const std::string& name, auto value, auto) {
        const std::size_t at = static_cast<std::size_t>(value.data() - m.parameters());
        if (name == "weight") w_at = at;
        else b_at = at;
    });
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = m.parameters()[w_at + i];
    for (std::size_t o = 0; o < outputs; ++o) bias[o] = m.parameters()[b_at + o];
    double rows = 0;
    for (std::size_t r = 0; r < batch; ++r) rows += b.valid.data()[r];
    for (std::size_t r = 0; r < batch; ++r) {
        if (!b.valid.data()[r]) continue;
        for (std::size_t o = 0; o < outputs; ++o) {
            double p = bias[o];
            for (std::size_t f = 0; f < features; ++f) p += w[o * features + f] * b.x.data()[r * features + f];
            const double g = dl(p, double(b.y.data()[r * outputs + o])) / (rows * outputs);
            for (std::size_t f = 0; f < features; ++f) grad[w_at + o * features + f] += g * b.x.data()[r * features + f];
            grad[b_at + o] += g;
        }
    }
    return grad;
}

template <class M>
double worst_gradient_error(M& m, const std::vector<double>& want)
{
    double worst = 0, scale = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        worst = std::max(worst, std::abs(double(m.gradients()[i]) - want[i]));
        scale = std::max(scale, std::abs(want[i]));
    }
    REQUIRE(scale > 1e-3);  // a real gradient, not zeros
    return worst / scale;
}

template <class M>
std::vector<float> parameters_of(const M& m)
{
    return std::vector<float>(m.parameters(), m.parameters() + M::flat_numel);
}

std::string temp_path(const char* name)
{
    return (std::filesystem::temp_directory_path() / (std::string("tenet_losses_") + name)).string();
}

void damage(const std::string& path, std::size_t at)
{
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(at));
    char c = 0;
    f.read(&c, 1);
    c ^= 0x20;
    f.seekp(static_cast<std::streamoff>(at));
    f.write(&c, 1);
}

}  // namespace

TEST_CASE("losses: mean squared error and a user's Huber loss give the float64 gradients; padding is ignored")
{
    std::mt19937_64 rng(5);
    const auto b = make_batch(rng, 3);
    SUBCASE("mean_squared_error")
    {
        linear_model<> m(7);
        train::trainer t(m, train::sgd{}, train::constant_lr{1e-3f}, {}, train::mean_squared_error{});
        const auto want = reference_gradient(m, b, [](double p, double y) { return 2 * (p - y); });
        t.step(b.x, b.y, b.valid);
        CHECK(worst_gradient_error(m, want) < 1e-5);
        CHECK(std::isfinite(t.mean_loss()));
    }
    SUBCASE("elementwise_loss{huber}: both branches of the where")
    {
        linear_model<> m(7);
        train::trainer t(m, train::sgd{}, train::constant_lr{1e-3f}, {}, train::elementwise_loss{user::huber{1.5f}});
        const auto want = reference_gradient(m, b, [](double p, double y) { return std::clamp(p - y, -1.5, 1.5); });
        std::size_t inside = 0, outside = 0;  // the test must reach both branches
        t.step(b.x, b.y, b.valid);
        for (std::size_t r = 0; r + 3 < batch; ++r)
            for (std::size_t o = 0; o < outputs; ++o)
                (std::abs(double(m.output().data()[r * outputs + o]) - b.y.data()[r * outputs + o]) <= 1.5 ? inside
                                                                                                      : outside)++;
        CHECK(inside > 0);
        CHECK(outside > 0);
        CHECK(worst_gradient_error(m, want) < 1e-5);
    }
    SUBCASE("elementwise_loss of the squared difference is mean_squared_error")
    {
        linear_model<> a(7), c(7);
        train::trainer ta(a, train::sgd{}, train::constant_lr{1e-3f}, {}, train::mean_squared_error{});
        train::trainer tc(c, train::sgd{}, train::constant_lr{1e-3f}, {}, train::elementwise_loss{user::squared{}});
        ta.step(b.x, b.y, b.valid);
        tc.step(b.x, b.y, b.valid);
        CHECK(ta.mean_loss() == doctest::Approx(tc.mean_loss()).epsilon(1e-5));
        for (std::size_t i = 0; i < decltype(a)::flat_numel; ++i)
            CHECK(a.gradients()[i] == doctest::Approx(c.gradients()[i]).epsilon(1e-5).scale(1e-6));
    }
}

TEST_CASE("losses: regression models learn with MSE and Huber, in fp32 and bf16; evaluation_loss is the row mean")
{
    auto run = [&]<class P, class L>(P, L loss) {
        using M = nn::model<nn::Sequential<nn::Linear<features, 32>, nn::Tanh, nn::Linear<32, outputs>>, P,
                            Shape<batch, features>, Host>;
        M m(3);
        train::trainer t(m, train::adamw{}, train::constant_lr{1e-2f}, {}, loss);
        std::mt19937_64 rng(11), held_out(12);
        std::vector<regression_batch> test;
        for (int i = 0; i < 4; ++i) test.push_back(make_batch(held_out, i));
        auto evaluate = [&] {
            for (const auto& b : test) {
                Tensor<typename P::storage, Shape<batch, features>, Host> x;
                Tensor<typename P::storage, Shape<batch, outputs>, Host> y;
                x = b.x;
                y = b.y;
                t.evaluate(x, y, b.valid);
            }
            return t.end_epoch().evaluation_loss;
        };
        const double before = evaluate();
        for (int i = 0; i < 400; ++i) {
            const auto b = make_batch(rng, i % 4);
            Tensor<typename P::storage, Shape<batch, features>, Host> x;
            Tensor<typename P::storage, Shape<batch, outputs>, Host> y;
            x = b.x;
            y = b.y;
            t.step(x, y, b.valid);
        }
        const double after = evaluate();
        MESSAGE(std::string(element_name<typename P::storage>) << ": held-out loss " << before << " -> " << after);
        CHECK(std::isfinite(after));
        CHECK(after < 0.1 * before);
        CHECK(std::isnan(t.evaluation_loss()));  // ended by end_epoch(), nothing evaluated since
    };
    run(fp32{}, train::mean_squared_error{});
    run(bf16_mixed{}, train::mean_squared_error{});
    run(fp32{}, train::elementwise_loss{user::huber{1.0f}});

    // evaluation_loss against a float64 mean over the valid rows of two batches
    linear_model<> m(4);
    train::trainer t(m, train::sgd{}, train::constant_lr{1e-3f}, {}, train::mean_squared_error{});
    std::mt19937_64 rng(13);
    double total = 0, rows = 0;
    for (std::size_t padding : {0, 5}) {
        const auto b = make_batch(rng, padding);
        t.evaluate(b.x, b.y, b.valid);
        for (std::size_t r = 0; r + padding < batch; ++r, ++rows)
            for (std::size_t o = 0; o < outputs; ++o) {
                const double d = double(m.output().data()[r * outputs + o]) - b.y.data()[r * outputs + o];
                total += d * d / outputs;
            }
    }
    CHECK(t.evaluation_loss() == doctest::Approx(total / rows).epsilon(1e-5));
}

TEST_CASE("losses: a bad row mask is refused before anything changes")
{
    linear_model<> m(7);
    train::trainer t(m, train::adamw{}, train::constant_lr{1e-2f}, {}, train::mean_squared_error{});
    std::mt19937_64 rng(3);
    auto b = make_batch(rng, 2);
    b.valid.data()[4] = 2;
    const auto before = parameters_of(m);
    CHECK_THROWS_AS(t.step(b.x, b.y, b.valid), tenet::error);
    CHECK(parameters_of(m) == before);
    CHECK(t.state().iteration == 0);
}

TEST_CASE("losses: nn::model and train::optimizer save and load on their own; a resumed hand-written loop continues exactly")
{
    using P = bf16_mixed;  // master weights separate from the parameters
    using M = nn::model<nn::Sequential<nn::Linear<features, 8>, nn::ReLU, nn::Linear<8, outputs>>, P,
                        Shape<batch, features>, Host>;
    auto train_steps = [](M& m, auto& opt, std::mt19937_64& rng, int n) {
        for (int i = 0; i < n; ++i) {
            const auto b = make_batch(rng, 0);
            Tensor<bf16, Shape<batch, features>, Host> x;
            x = b.x;
            m.forward(x);
            Tensor<f32, Shape<batch, outputs>, Host> dy;
            mse_backward(dy, m.output(), b.y, b.valid, 1.0f);
            m.backward(dy);
            opt.step();
        }
    };
    const std::string model_path = temp_path("model.params"), optimizer_path = temp_path("optimizer.state");
    M a(1);
    train::optimizer opt_a(a, train::adamw{}, train::constant_lr{1e-2f});
    std::mt19937_64 rng(21);
    train_steps(a, opt_a, rng, 5);
    a.save(model_path);
    opt_a.save(optimizer_path);
    std::mt19937_64 rng_b = rng;
    train_steps(a, opt_a, rng, 4);

    M b(2);  // other parameters: load must replace all of them
    train::optimizer opt_b(b, train::adamw{}, train::constant_lr{1e-2f});
    REQUIRE(parameters_of(b) != parameters_of(a));
    b.load(model_path);
    opt_b.load(optimizer_path);
    CHECK(b.step() == 5);
    CHECK(opt_b.state().iteration == 5);
    train_steps(b, opt_b, rng_b, 4);
    CHECK(parameters_of(b) == parameters_of(a));

    // Damaged, truncated or mismatched files are refused whole: nothing changes.
    const auto params_before = parameters_of(b);
    const auto state_before = opt_b.state();
    const std::vector<float> master_before(opt_b.master(), opt_b.master() + M::flat_numel);
    damage(model_path, std::filesystem::file_size(model_path) / 2);
    CHECK_THROWS_AS(b.load(model_path), tenet::format_error);
    std::filesystem::resize_file(optimizer_path, std::filesystem::file_size(optimizer_path) - 9);
    CHECK_THROWS_AS(opt_b.load(optimizer_path), tenet::format_error);
    CHECK_THROWS_AS(b.load(optimizer_path), tenet::format_error);  // an optimizer file is not a model file
    CHECK(parameters_of(b) == params_before);
    CHECK(opt_b.state().iteration == state_before.iteration);
    CHECK(std::equal(master_before.begin(), master_before.end(), opt_b.master()));

    // Another rule's optimizer refuses the file by its signature; an fp32
    // model refuses a bf16 model's parameters.
    a.save(model_path);
    opt_a.save(optimizer_path);
    train::optimizer sgd_b(b, train::sgd{0.9f}, train::constant_lr{1e-2f});
    CHECK_THROWS_AS(sgd_b.load(optimizer_path), tenet::format_error);
    nn::model<nn::Sequential<nn::Linear<features, 8>, nn::ReLU, nn::Linear<8, outputs>>, fp32, Shape<batch, features>,
              Host>
        wide(3);
    CHECK_THROWS_AS(wide.load(model_path), tenet::format_error);
    CHECK_THROWS_AS(b.load(temp_path("missing")), tenet::io_error);
    std::remove(model_path.c_str());
    std::remove(optimizer_path.c_str());
}
