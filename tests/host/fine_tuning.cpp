// nn::Frozen on the host: where frozen parameters live (no gradient, no
// optimizer state), that they start, load and save as the unfrozen layer's,
// that the trainable layers' gradients are those of the unfrozen model (a
// frozen layer in the middle passes the input gradient on, computing no
// weight gradient, for every built-in layer kind), that a frozen prefix's
// backward never runs, and that an optimizer leaves frozen weights
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

#include <algorithm>
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

// A Linear that counts its backward calls (to see a frozen prefix skipped),
// by whether it was handed weight gradients to fill.
inline int weight_gradients_wanted = 0, weight_gradients_skipped = 0;
int backwards_run() { return weight_gradients_wanted + weight_gradients_skipped; }
struct ProbedLinear {
    template <class In>
    using output_shape = nn::Linear<7, 7>::output_shape<In>;
    template <precision_policy P, class In, class Place>
    struct layer : nn::Linear<7, 7>::layer<P, In, Place> {
        using nn::Linear<7, 7>::layer<P, In, Place>::layer;
        template <class DY, class DX, class Prev>
        void backward(const DY& dy, const DX& dx, const nn::step_info& step, Prev& prev)
        {
            bool wanted = false;
            this->for_each_parameter([&](const std::string&, auto, auto g) { wanted |= nn::gradient_wanted(g); }, "");
            ++(wanted ? weight_gradients_wanted : weight_gradients_skipped);
            nn::Linear<7, 7>::layer<P, In, Place>::backward(dy, dx, step, prev);
        }
    };
};

// A user's layer that does not declare skips_null_gradients: nn::Frozen
// gives it a scratch for the gradients it writes.
template <std::size_t N>
struct user_scale {
    using scale = nn::parameter<"scale", Shape<N>, nn::init_ones>;
    template <class S>
    using output_shape = S;
    template <precision_policy P, class S, class Place>
    struct layer : nn::parameterised_layer<P, Place, scale> {
        using layer::parameterised_layer::parameterised_layer;
        using matrix = nn::matrix_shape_t<S>;
        template <class X, class Y>
        void forward(const X& x, const Y& y, const nn::step_info&)
        {
            input_ = nn::contiguous_as<matrix>(x).data();
            assign(nn::contiguous_as<matrix>(y), nn::contiguous_as<matrix>(x) * this->value(scale{}));
        }
        template <class DY, class DX, class Prev>
        void backward(const DY& dy, const DX& dx, const nn::step_info&, Prev&)
        {
            const auto g = nn::contiguous_as<matrix>(dy);
            assign(this->gradient(scale{}), sum<0>(g * make_view<matrix, Place>(input_)));  // (no null check)
            if constexpr (!nn::is_no_input_gradient<DX>) assign(nn::contiguous_as<matrix>(dx), g * this->value(scale{}));
        }
        const typename P::storage* input_ = nullptr;
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
    Tensor<S, typename M::input_shape, Host> x;
    Tensor<S, typename M::output_shape, Host> dy;
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
    using counted = nn::Sequential<nn::Linear<5, 7>, nn::ReLU, ProbedLinear, nn::ReLU, nn::Linear<7, 3>>;
    using counted_prefix =
        nn::Sequential<nn::Frozen<nn::Linear<5, 7>>, nn::ReLU, nn::Frozen<ProbedLinear>, nn::ReLU, nn::Linear<7, 3>>;
    weight_gradients_wanted = weight_gradients_skipped = 0;
    model_of<counted> a(2);
    forward_backward(a, 3);
    CHECK(backwards_run() == 1);
    model_of<counted_prefix> b(2);
    forward_backward(b, 3);
    CHECK(backwards_run() == 1);  // skipped
}

// Each built-in layer kind frozen after a trainable layer, and the same
// spec with nothing frozen: the trainable gradients (which need the input
// gradient through the frozen part) must agree bit for bit.
namespace after_trainable {
template <class... L>
using seq = nn::Sequential<L...>;
// Linear units fused inside (the input gradient through ReLU's mask with no bias gradient)
template <template <class> class F>
using mlp = seq<nn::Linear<5, 7>, nn::ReLU, F<seq<nn::Linear<7, 9>, nn::ReLU, nn::Linear<9, 6>>>, nn::ReLU, nn::Linear<6, 3>>;
// Conv2d (with a fused ReLU), BatchNorm with batch statistics, a bias-free Conv2d
template <template <class> class F>
using cnn = seq<nn::Conv2d<3, 4, 3, 1, 1>, nn::ReLU,
                F<seq<nn::Conv2d<4, 5, 3, 1, 1>, nn::ReLU, nn::BatchNorm2d<5>, nn::Conv2dNoBias<5, 4, 1>>>, nn::Flatten,
                nn::Linear<256, 3>>;
// PatchEmbed, a positional embedding, a transformer block (attention, LayerNorm, Residual)
template <template <class> class F>
using vit = seq<nn::Conv2d<3, 4, 3, 1, 1>, F<nn::PatchEmbed<4, 4, 8>>, F<nn::PositionalEmbedding<4, 8>>,
                F<nn::TransformerEncoderLayer<8, 2, 16>>, nn::LayerNorm<8>, nn::MeanPool<1>, nn::Linear<8, 3>>;
// a user's layer without skips_null_gradients
template <template <class> class F>
using user = seq<nn::Linear<5, 6>, F<user_scale<6>>, nn::ReLU, nn::Linear<6, 3>>;

template <class L>
using same = L;
template <class L>
using frozen = nn::Frozen<L>;
}  // namespace after_trainable

TEST_CASE_TEMPLATE("Frozen after a trainable layer: the input gradient alone, and the unfrozen model's gradients", P,
                   fp32, bf16_mixed)
{
    namespace at = after_trainable;
    const auto check = [&]<template <template <class> class> class Spec, class In>(In) {
        nn::model<Spec<at::same>, P, In, Host> plain(21);
        nn::model<Spec<at::frozen>, P, In, Host> frozen(21);
        CHECK(frozen.frozen_numel > 0);
        forward_backward(plain, 8);
        forward_backward(frozen, 8);
        const auto want = gradients_by_name(plain);
        const auto got = gradients_by_name(frozen);
        REQUIRE(!got.empty());
        CHECK(got.size() < want.size());
        for (const auto& [name, g] : got) {
            CAPTURE(name);
            REQUIRE(want.count(name) == 1);
            CHECK(g == want.at(name));
        }
    };
    check.template operator()<at::mlp>(Shape<8, 5>{});
    check.template operator()<at::cnn>(Shape<2, 8, 8, 3>{});
    check.template operator()<at::vit>(Shape<2, 8, 8, 3>{});
    check.template operator()<at::user>(Shape<8, 5>{});

    // Every built-in layer skips gradients bound null; containers when their children do.
    using at::vit, at::cnn, at::mlp, at::user, at::same;
    static_assert(nn::skips_null_gradients_v<typename nn::model<vit<same>, P, Shape<2, 8, 8, 3>, Host>::layer_type>);
    static_assert(nn::skips_null_gradients_v<typename nn::model<cnn<same>, P, Shape<2, 8, 8, 3>, Host>::layer_type>);
    static_assert(nn::skips_null_gradients_v<typename nn::model<mlp<same>, P, Shape<8, 5>, Host>::layer_type>);
    static_assert(!nn::skips_null_gradients_v<typename nn::model<user<same>, P, Shape<8, 5>, Host>::layer_type>);
}

TEST_CASE("Frozen after a trainable layer: its backward runs, handed no weight gradients")
{
    using probed = nn::Sequential<nn::Linear<5, 7>, nn::ReLU, ProbedLinear, nn::ReLU, nn::Linear<7, 3>>;
    using probed_middle = nn::Sequential<nn::Linear<5, 7>, nn::ReLU, nn::Frozen<ProbedLinear>, nn::ReLU, nn::Linear<7, 3>>;
    weight_gradients_wanted = weight_gradients_skipped = 0;
    model_of<probed> a(2);
    forward_backward(a, 3);
    CHECK(weight_gradients_wanted == 1);
    model_of<probed_middle> b(2);
    forward_backward(b, 3);
    CHECK(weight_gradients_wanted == 1);
    CHECK(weight_gradients_skipped == 1);  // it ran, for the input gradient only
    const auto want = gradients_by_name(a), got = gradients_by_name(b);
    CHECK(got.at("0.weight") == want.at("0.weight"));
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

// ---- parameter groups by layer kind ------------------------------------------

TEST_CASE("parameter groups by layer kind: each parameter's kind from its layer, and a step that follows them")
{
    using spec = nn::Sequential<nn::Conv2d<3, 4, 3, 1, 1>, nn::ReLU, nn::BatchNorm2d<4>, nn::Frozen<nn::Conv2d<4, 4, 1>>,
                                nn::PatchEmbed<4, 4, 8>, nn::TransformerEncoderLayer<8, 2, 16>, nn::LayerNorm<8>,
                                nn::MeanPool<1>, user_scale<8>, nn::Linear<8, 3>>;
    using M = nn::model<spec, fp32, Shape<2, 8, 8, 3>, Host>;
    M m(5);
    const auto parameters = train::detail::trainable_parameters(m);
    std::map<std::string, int> kinds;
    for (const auto& p : parameters) {
        CAPTURE(p.name);
        ++kinds[p.kind];
        const std::string layer = p.name.substr(0, p.name.find('.'));
        CHECK(layer != "3");  // frozen: no group sees it
        if (layer == "0") CHECK(p.kind == "Conv2d");
        if (layer == "2") CHECK(p.kind == "BatchNorm2d");
        if (layer == "4") CHECK(p.kind == "PatchEmbed");
        if (layer == "6") CHECK(p.kind == "LayerNorm");
        if (layer == "8") CHECK(p.kind == "");  // a user's layer that names no kind
        if (layer == "9") CHECK(p.kind == "Linear");
    }
    // the encoder layer: attention's four, two LayerNorms' four, two Linears' four
    CHECK(kinds["MultiHeadAttention"] == 4);
    CHECK(kinds["LayerNorm"] == 4 + 2);
    CHECK(kinds["Linear"] == 4 + 2);

    // SGD without momentum: each parameter moves by lr * its kind's scale * its gradient.
    train::optimizer_options options;
    options.groups = train::parameter_groups{{{.lr_scale = 0.0f, .layer = "*Norm*"},
                                              {.lr_scale = 2.0f, .layer = "MultiHeadAttention"},
                                              {.pattern = "9.*", .lr_scale = 0.5f, .layer = "Linear"}}};
    train::optimizer opt(m, train::sgd{}, train::constant_lr{0.1f}, options);
    forward_backward(m, 12);
    const std::vector<f32> before(m.parameters(), m.parameters() + M::trainable_numel);
    const std::vector<f32> gradient(m.gradients(), m.gradients() + M::trainable_numel);
    opt.step();
    std::size_t moved = 0;
    for (std::size_t i = 0; i < parameters.size(); ++i) {
        const auto& p = parameters[i];
        const float scale = p.kind.find("Norm") != std::string::npos ? 0.0f
                            : p.kind == "MultiHeadAttention"          ? 2.0f
                            : p.name.rfind("9.", 0) == 0              ? 0.5f
                                                                      : 1.0f;
        CHECK(opt.parameter_settings()[i].second.lr_scale == scale);
    }
    m.for_each_parameter([&](const std::string& name, auto value, auto) {
        if (m.is_frozen(value.data())) return;
        CAPTURE(name);
        const auto at = std::find_if(parameters.begin(), parameters.end(), [&](const auto& p) { return p.name == name; });
        REQUIRE(at != parameters.end());
        const float scale = opt.parameter_settings()[static_cast<std::size_t>(at - parameters.begin())].second.lr_scale;
        const std::size_t begin = static_cast<std::size_t>(value.data() - m.parameters());
        for (std::size_t k = 0; k < decltype(value)::shape::numel; ++k) {
            const double want = before[begin + k] - 0.1 * scale * gradient[begin + k];
            CHECK(value.data()[k] == doctest::Approx(want).epsilon(1e-6));
            if (scale == 0.0f) CHECK(value.data()[k] == before[begin + k]);
            moved += value.data()[k] != before[begin + k];
        }
    });
    CHECK(moved > M::trainable_numel / 4);
}
