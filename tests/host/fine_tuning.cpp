// nn::Frozen on the host: where frozen parameters live (no gradient, no
// optimizer state), that they start, load and save as the unfrozen layer's,
// that the trainable layers' gradients are those of the unfrozen model (a
// frozen layer in the middle passes the input gradient on), that a frozen
// prefix's backward never runs, and that an optimizer leaves frozen weights
// unchanged bit for bit under every policy. The learning-rate range test:
// its sweep, a model left unchanged, divergence, the suggested rate.
#include "scratch_dir.hpp"
#include "synthetic_task.hpp"
#include "tensor_testing.hpp"

#include <tenet/data/data.hpp>
#include <tenet/io/model_safetensors.hpp>
#include <tenet/nn/nn.hpp>
#include <tenet/train/lr_range_test.hpp>
#include <tenet/train/optimizer.hpp>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;
namespace train = tenet::train;

namespace {

// A Linear that counts its backward calls (to see a frozen prefix skipped).
inline int counted_backwards = 0;
struct CountedLinear {
    template <class In>
    using output_shape = nn::Linear<7, 7>::output_shape<In>;
    template <precision_policy P, class In, class Place>
    struct layer : nn::Linear<7, 7>::layer<P, In, Place> {
        using nn::Linear<7, 7>::layer<P, In, Place>::layer;
        template <class DY, class DX, class Prev>
        void backward(const DY& dy, const DX& dx, const nn::step_info& step, Prev& prev)
        {
            ++counted_backwards;
            nn::Linear<7, 7>::layer<P, In, Place>::backward(dy, dx, step, prev);
        }
    };
};

using plain_spec = nn::Sequential<nn::Linear<5, 7>, nn::ReLU, nn::Linear<7, 6>, nn::ReLU, nn::Linear<6, 3>>;
using prefix_spec = nn::Sequential<nn::Frozen<nn::Linear<5, 7>>, nn::ReLU, nn::Linear<7, 6>, nn::ReLU, nn::Linear<6, 3>>;
using middle_spec = nn::Sequential<nn::Linear<5, 7>, nn::ReLU, nn::Frozen<nn::Linear<7, 6>>, nn::ReLU, nn::Linear<6, 3>>;
using nested_spec =
    nn::Sequential<nn::Frozen<nn::Sequential<nn::Linear<5, 7>, nn::ReLU, nn::Linear<7, 6>>>, nn::ReLU, nn::Linear<6, 3>>;

template <class Spec, class P = fp32>
using model_of = nn::model<Spec, P, Shape<8, 5>, Host>;

template <class M>
std::map<std::string, std::vector<double>> values_by_name(M& m)
{
    std::map<std::string, std::vector<double>> out;
    m.for_each_parameter([&](const std::string& name, auto value, auto) {
        auto& v = out[name];
        for (std::size_t i = 0; i < decltype(value)::shape::numel; ++i) v.push_back(convert<f64>(value.data()[i]));
    });
    return out;
}

// Each trainable parameter's gradient, by name.
template <class M>
std::map<std::string, std::vector<double>> gradients_by_name(M& m)
{
    std::map<std::string, std::vector<double>> out;
    m.for_each_parameter([&](const std::string& name, auto value, auto gradient) {
        if (m.is_frozen(value.data())) return;
        auto& v = out[name];
        for (std::size_t i = 0; i < decltype(value)::shape::numel; ++i) v.push_back(convert<f64>(gradient.data()[i]));
    });
    return out;
}

// One forward and backward on a fixed random batch and output gradient.
template <class M>
void forward_backward(M& m, std::uint64_t seed)
{
    using S = typename M::storage_type;
    Tensor<S, Shape<8, 5>, Host> x;
    Tensor<S, Shape<8, 3>, Host> dy;
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (std::size_t i = 0; i < x.numel; ++i) x.data()[i] = convert<S>(normal(rng));
    for (std::size_t i = 0; i < dy.numel; ++i) dy.data()[i] = convert<S>(normal(rng));
    m.forward(x);
    m.backward(dy);
}

}  // namespace

TEST_CASE("Frozen: parameters in the frozen block, no gradients or optimizer state, the unfrozen model's start")
{
    using P = model_of<plain_spec>;
    using F = model_of<prefix_spec>;
    static_assert(F::flat_numel == P::flat_numel);
    static_assert(F::frozen_numel == 2 * 64);  // 0.weight [7, 5], 0.bias [7]: 64 f32 each, padded
    static_assert(F::trainable_numel == P::trainable_numel - F::frozen_numel);
    static_assert(F::parameter_count == P::parameter_count);
    static_assert(F::gradient_bytes == P::gradient_bytes - (35 + 7) * sizeof(f32));
    static_assert(train::optimizer<F, train::adamw>::numel == F::trainable_numel);
    static_assert(train::optimizer<F, train::adamw>::state_bytes == 2 * F::trainable_numel * sizeof(f32));
    static_assert(model_of<nested_spec>::trainable_numel == 2 * 64);

    P plain(9);
    F frozen(9);
    CHECK(values_by_name(plain) == values_by_name(frozen));  // same names, same draws
    CHECK(plain.parameter_list() != frozen.parameter_list());  // the layouts differ
    CHECK(frozen.parameter_list().find("0.weight[7,5]frozen") != std::string::npos);
    int frozen_seen = 0;
    frozen.for_each_parameter([&](const std::string& name, auto value, auto) {
        if (frozen.is_frozen(value.data())) {
            ++frozen_seen;
            CHECK(name.rfind("0.", 0) == 0);
        }
    });
    CHECK(frozen_seen == 2);
}

TEST_CASE("Frozen: trainable gradients are the unfrozen model's; a frozen prefix's backward never runs")
{
    const auto check = [&]<class Spec>(Spec) {
        model_of<plain_spec> plain(4);
        model_of<Spec> frozen(4);
        forward_backward(plain, 17);
        forward_backward(frozen, 17);
        const auto want = gradients_by_name(plain);
        const auto got = gradients_by_name(frozen);
        CHECK(got.size() == 4);  // the six parameters less the frozen two
        for (const auto& [name, g] : got) {
            CAPTURE(name);
            REQUIRE(want.count(name) == 1);
            CHECK(g == want.at(name));  // the same arithmetic: the same bits
        }
    };
    check(prefix_spec{});
    check(middle_spec{});  // 0.*'s gradients need the input gradient through the frozen 2.*

    // A frozen layer first, and ReLU after it: only the trainable layers run their backward.
    using counted = nn::Sequential<nn::Linear<5, 7>, nn::ReLU, CountedLinear, nn::ReLU, nn::Linear<7, 3>>;
    using counted_prefix =
        nn::Sequential<nn::Frozen<nn::Linear<5, 7>>, nn::ReLU, nn::Frozen<CountedLinear>, nn::ReLU, nn::Linear<7, 3>>;
    using counted_middle = nn::Sequential<nn::Linear<5, 7>, nn::ReLU, nn::Frozen<CountedLinear>, nn::ReLU, nn::Linear<7, 3>>;
    counted_backwards = 0;
    model_of<counted> a(2);
    forward_backward(a, 3);
    CHECK(counted_backwards == 1);
    model_of<counted_prefix> b(2);
    forward_backward(b, 3);
    CHECK(counted_backwards == 1);  // skipped
    model_of<counted_middle> c(2);
    forward_backward(c, 3);
    CHECK(counted_backwards == 2);  // in the middle it passes the gradient on
}

TEST_CASE_TEMPLATE("Frozen: an optimizer leaves frozen weights unchanged bit for bit and trains the rest", P, fp32,
                   bf16_mixed, fp16_mixed)
{
    const auto check = [&]<class Spec>(Spec) {
        model_of<Spec, P> m(6);
        train::optimizer opt(m, train::adamw{}, train::constant_lr{1e-2f});
        const std::vector<typename model_of<Spec, P>::storage_type> before(m.parameters(),
                                                                           m.parameters() + m.flat_numel);
        for (int t = 0; t < 4; ++t) {
            forward_backward(m, 40 + t);
            // (fp16_mixed: the gradients are unscaled: dy stands for a scaled loss's)
            opt.step();
        }
        std::size_t frozen_changed = 0, trainable_changed = 0;
        for (std::size_t i = 0; i < m.flat_numel; ++i) {
            const bool same = std::memcmp(&before[i], &m.parameters()[i], sizeof before[i]) == 0;
            if (i >= m.trainable_numel) frozen_changed += !same;
            else trainable_changed += !same;
        }
        CHECK(frozen_changed == 0);
        // (padding stays; a 16-bit weight may round back to where it was)
        constexpr std::size_t trainable = model_of<Spec, P>::parameter_count - nn::frozen_count_v<typename model_of<Spec, P>::layer_type>;
        CHECK(trainable_changed > trainable / 2);
    };
    check(prefix_spec{});
    check(middle_spec{});
    check(nested_spec{});
}

TEST_CASE("Frozen: safetensors by the unfrozen names both ways; a checkpoint of another layout is refused")
{
    testing::scratch_dir dir("frozen");
    model_of<plain_spec> trained(11), fresh(12);
    model_of<prefix_spec> frozen(13);
    forward_backward(trained, 5);
    io::save_safetensors(trained, dir.file("pretrained.safetensors"));
    CHECK(io::load_safetensors(frozen, dir.file("pretrained.safetensors")).complete());
    CHECK(values_by_name(frozen) == values_by_name(trained));
    io::save_safetensors(frozen, dir.file("frozen.safetensors"));
    CHECK(io::load_safetensors(fresh, dir.file("frozen.safetensors")).complete());
    CHECK(values_by_name(fresh) == values_by_name(trained));

    trained.save(dir.file("plain.ckpt"));
    const auto kept = values_by_name(frozen);
    CHECK_THROWS_AS(frozen.load(dir.file("plain.ckpt")), format_error);
    CHECK(values_by_name(frozen) == kept);
    frozen.save(dir.file("frozen.ckpt"));
    model_of<prefix_spec> again(99);
    again.load(dir.file("frozen.ckpt"));
    CHECK(values_by_name(again) == kept);
}

// ---- the learning-rate range test -------------------------------------------

TEST_CASE("lr_range_test: an exponential sweep on a copy; the model is unchanged; divergence stops it")
{
    constexpr std::size_t features = 12, classes = 4;
    const testing::task data = testing::make_task(512, features, classes, 5);
    using set = data::array_dataset<f32, i32, Shape<features>>;
    const set train_set(data.x, std::vector<i32>(data.y.begin(), data.y.end()));
    data::array_loader<f32, 32, set, Host> loader(train_set);
    using spec = nn::Sequential<nn::Linear<features, 32>, nn::ReLU, nn::Linear<32, classes>>;
    nn::model<spec, fp32, Shape<32, features>, Host> net(3);
    const std::vector<f32> before(net.parameters(), net.parameters() + net.flat_numel);

    const auto r = train::lr_range_test(net, loader, train::adamw{}, {.start = 1e-5f, .end = 10.0f, .steps = 60});
    CHECK(std::memcmp(before.data(), net.parameters(), before.size() * sizeof(f32)) == 0);
    CHECK(net.step() == 0);
    REQUIRE(r.curve.size() >= 20);
    CHECK(r.curve.front().lr == doctest::Approx(1e-5f));
    for (std::size_t i = 1; i < r.curve.size(); ++i) {  // evenly spaced in log(lr)
        CHECK(std::log(r.curve[i].lr / r.curve[i - 1].lr) == doctest::Approx(std::log(1e6) / 59).epsilon(1e-3));
        CHECK(std::isfinite(r.curve[i].smoothed));
    }
    CHECK(r.diverged);  // AdamW at rates near 10 blows the loss up
    CHECK(r.curve.size() < 60);
    MESSAGE("suggested " << r.suggested_lr << " from " << r.curve.size() << " points");
    CHECK(r.suggested_lr > 1e-4f);
    CHECK(r.suggested_lr < 1.0f);

    // The suggestion trains: a few epochs at it reach a lower loss than the start.
    train::trainer t(net, train::adamw{}, train::constant_lr{r.suggested_lr});
    decltype(loader)::batch b;
    double first = 0, last = 0;
    for (std::uint64_t epoch = 0; epoch < 4; ++epoch) {
        loader.start_epoch(1, epoch);
        while (loader.next(b)) t.step(b.x(), b.targets(), b.valid());
        last = t.end_epoch().mean_loss;
        if (epoch == 0) first = last;
    }
    CHECK(last < first);

    CHECK_THROWS_AS(train::lr_range_test(net, loader, train::adamw{}, {.start = 1.0f, .end = 0.1f}), error);
    CHECK_THROWS_AS(train::lr_range_test(net, loader, train::adamw{}, {.steps = 1}), error);
    CHECK_THROWS_AS(train::lr_range_test(net, loader, train::adamw{}, {.beta = 1.0f}), error);
}

TEST_CASE("lr_range_test: the steepest descent of a known curve")
{
    // smoothed loss 2 - tanh(log10(lr) + 3): falls fastest at lr = 1e-3
    std::vector<train::lr_range_point> curve;
    for (int i = 0; i <= 40; ++i) {
        const double e = -6 + 0.15 * i;
        curve.push_back({static_cast<float>(std::pow(10.0, e)), 0.0, 2 - std::tanh(e + 3)});
    }
    CHECK(train::detail::steepest(curve) == doctest::Approx(1e-3f).epsilon(0.2));
    // past the minimum the loss climbs; a fall between spikes there is not the answer
    for (int i = 1; i <= 10; ++i) curve.push_back({static_cast<float>(std::pow(10.0, 0.15 * i)), 0.0, 5.0 + (i % 2 ? 4.0 : 0.0)});
    CHECK(train::detail::steepest(curve) == doctest::Approx(1e-3f).epsilon(0.2));
    curve.resize(2);
    CHECK(std::isnan(train::detail::steepest(curve)));
}
