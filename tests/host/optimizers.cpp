// The fused optimizer step on the host: SGD (momentum, Nesterov, weight
// decay), AdamW and LAMB against float64 re-implementations of PyTorch's /
// apex's formulas over several steps; master weights and storage rounding for
// bf16; the loss-scaler state machine with injected inf and NaN; global-norm
// clipping; the accumulation divisor; the LR schedule read from the step count;
// parameter groups (per-parameter rates and decay) against float64 and
// against torch.optim's param_groups (tests/fixtures/pytorch).
#include "scratch_dir.hpp"
#include "tensor_testing.hpp"

#include <tenet/nn/nn.hpp>
#include <tenet/io/safetensors.hpp>
#include <tenet/train/optimizer.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;
namespace train = tenet::train;

namespace {

using spec = nn::Sequential<nn::Linear<5, 7>, nn::ReLU, nn::Linear<7, 3>>;
using f64_policy = training_precision<f64, f64, f64, f64>;

template <class P>
using host_model = nn::model<spec, P, Shape<4, 5>, Host>;

// (offset, numel) of every parameter.
template <class M>
std::vector<std::pair<std::size_t, std::size_t>> segments_of(M& m)
{
    std::vector<std::pair<std::size_t, std::size_t>> out;
    m.for_each_parameter([&](const std::string&, auto value, auto) {
        out.emplace_back(static_cast<std::size_t>(value.data() - m.parameters()), decltype(value)::shape::numel);
    });
    return out;
}

// Random gradients on the parameters (padding stays 0), scaled by `scale`.
template <class M>
std::vector<double> fill_gradients(M& m, std::uint64_t seed, double scale = 1.0)
{
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::vector<double> g(M::flat_numel, 0.0);
    for (auto [begin, n] : segments_of(m))
        for (std::size_t i = begin; i < begin + n; ++i) g[i] = normal(rng);
    for (std::size_t i = 0; i < M::flat_numel; ++i) m.gradients()[i] = convert<typename M::gradient_type>(g[i] * scale);
    return g;
}

template <class M>
std::vector<double> parameters_of(M& m)
{
    std::vector<double> w(M::flat_numel);
    for (std::size_t i = 0; i < M::flat_numel; ++i) w[i] = convert<f64>(m.parameters()[i]);
    return w;
}

// float64 references, one parameter vector at a time (t is 1-based).
struct sgd_reference {
    double lr, momentum, dampening, decay;
    bool nesterov;
    std::vector<double> buf;
    void step(std::vector<double>& w, std::vector<double> g, int t)
    {
        if (buf.empty()) buf.assign(w.size(), 0.0);
        for (std::size_t i = 0; i < w.size(); ++i) {
            g[i] += decay * w[i];
            if (momentum != 0) {
                buf[i] = t == 1 ? g[i] : momentum * buf[i] + (1 - dampening) * g[i];
                g[i] = nesterov ? g[i] + momentum * buf[i] : buf[i];
            }
            w[i] -= lr * g[i];
        }
    }
};

struct adamw_reference {
    double lr, b1, b2, eps, decay;
    std::vector<double> m, v;
    void step(std::vector<double>& w, const std::vector<double>& g, int t)
    {
        if (m.empty()) m.assign(w.size(), 0.0), v.assign(w.size(), 0.0);
        for (std::size_t i = 0; i < w.size(); ++i) {
            w[i] *= 1 - lr * decay;
            m[i] = b1 * m[i] + (1 - b1) * g[i];
            v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
            const double mhat = m[i] / (1 - std::pow(b1, t));
            const double vhat = v[i] / (1 - std::pow(b2, t));
            w[i] -= lr * mhat / (std::sqrt(vhat) + eps);
        }
    }
};

struct lamb_reference {
    double lr, b1, b2, eps, decay;
    std::vector<std::pair<std::size_t, std::size_t>> segments;
    std::vector<double> m, v;
    void step(std::vector<double>& w, const std::vector<double>& g, int t)
    {
        if (m.empty()) m.assign(w.size(), 0.0), v.assign(w.size(), 0.0);
        for (auto [begin, n] : segments) {
            std::vector<double> r(n);
            double wn = 0, rn = 0;
            for (std::size_t j = 0; j < n; ++j) {
                const std::size_t i = begin + j;
                m[i] = b1 * m[i] + (1 - b1) * g[i];
                v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
                r[j] = (m[i] / (1 - std::pow(b1, t))) / (std::sqrt(v[i] / (1 - std::pow(b2, t))) + eps) + decay * w[i];
                wn += w[i] * w[i];
                rn += r[j] * r[j];
            }
            const double trust = wn > 0 && rn > 0 ? std::sqrt(wn) / std::sqrt(rn) : 1.0;
            for (std::size_t j = 0; j < n; ++j) w[begin + j] -= lr * trust * r[j];
        }
    }
};

void check_close(const std::vector<double>& got, const std::vector<double>& want, double tolerance)
{
    REQUIRE(got.size() == want.size());
    std::size_t bad = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
        if (!(std::abs(got[i] - want[i]) <= tolerance * (1 + std::abs(want[i])))) {
            if (bad++ < 5) MESSAGE("element " << i << ": got " << got[i] << " want " << want[i]);
        }
    CHECK(bad == 0);
}

// Runs `steps` fused steps and the reference side by side.
template <class P, class Rule, class Reference>
void compare_rule(Rule rule, Reference reference, int steps, double tolerance)
{
    host_model<P> m(7);
    train::optimizer opt(m, rule, train::constant_lr{static_cast<float>(reference.lr)});
    if constexpr (requires { reference.segments; }) reference.segments = segments_of(m);
    std::vector<double> w = parameters_of(m);
    for (int t = 1; t <= steps; ++t) {
        const auto g = fill_gradients(m, 100 + t);
        opt.step();
        reference.step(w, g, t);
        check_close(parameters_of(m), w, tolerance);
    }
    const auto s = opt.state();
    CHECK(s.iteration == static_cast<std::uint64_t>(steps));
    CHECK(s.applied == static_cast<std::uint64_t>(steps));
    CHECK(s.skipped == 0);
    CHECK(s.loss_scale == 1.0f);
}

}  // namespace

TEST_CASE("optimizers: SGD matches torch.optim.SGD's formula")
{
    SUBCASE("plain") { compare_rule<f64_policy>(train::sgd{}, sgd_reference{0.125, 0, 0, 0, false, {}}, 4, 1e-12); }
    SUBCASE("momentum, dampening, weight decay")
    {
        compare_rule<f64_policy>(train::sgd{0.9f, 0.1f, 0.01f, false}, sgd_reference{0.05, 0.9, 0.1, 0.01, false, {}}, 6,
                                 1e-6);
    }
    SUBCASE("nesterov")
    {
        compare_rule<f64_policy>(train::sgd{0.9f, 0.0f, 0.001f, true}, sgd_reference{0.05, 0.9, 0, 0.001, true, {}}, 6,
                                 1e-6);
    }
    SUBCASE("f32") { compare_rule<fp32>(train::sgd{0.9f}, sgd_reference{0.05, 0.9, 0, 0, false, {}}, 5, 1e-5); }
}

TEST_CASE("optimizers: AdamW matches torch.optim.AdamW's formula")
{
    SUBCASE("f64") { compare_rule<f64_policy>(train::adamw{}, adamw_reference{1e-2, 0.9, 0.999, 1e-8, 1e-2, {}, {}}, 6, 1e-6); }
    SUBCASE("f32, strong decay")
    {
        compare_rule<fp32>(train::adamw{0.8f, 0.99f, 1e-6f, 0.3f}, adamw_reference{3e-2, 0.8, 0.99, 1e-6, 0.3, {}, {}}, 6, 1e-5);
    }
}

TEST_CASE("optimizers: LAMB's per-tensor trust ratio")
{
    compare_rule<f64_policy>(train::lamb{}, lamb_reference{1e-2, 0.9, 0.999, 1e-6, 1e-2, {}, {}, {}}, 5, 1e-6);
    compare_rule<fp32>(train::lamb{0.9f, 0.99f, 1e-6f, 0.1f}, lamb_reference{2e-2, 0.9, 0.99, 1e-6, 0.1, {}, {}, {}}, 5,
                       1e-5);
}

TEST_CASE("optimizers: bf16 storage keeps f32 master weights and writes rounded parameters")
{
    host_model<bf16_mixed> m(3);
    train::optimizer opt(m, train::adamw{}, train::constant_lr{1e-3f});
    std::vector<double> w = parameters_of(m);  // the master starts as the bf16 parameters
    adamw_reference reference{1e-3, 0.9, 0.999, 1e-8, 1e-2, {}, {}};
    for (int t = 1; t <= 5; ++t) {
        const auto g = fill_gradients(m, 40 + t);
        opt.step();
        reference.step(w, g, t);
    }
    std::vector<double> master(decltype(m)::flat_numel);
    for (std::size_t i = 0; i < master.size(); ++i) master[i] = opt.master()[i];
    check_close(master, w, 1e-5);
    // Updates of 1e-3 are below a bf16 ulp for most weights: the master moved,
    // and the parameters are exactly its rounding.
    std::size_t moved = 0;
    for (std::size_t i = 0; i < master.size(); ++i) {
        CHECK(convert<f64>(m.parameters()[i]) == convert<f64>(convert<bf16>(opt.master()[i])));
        moved += master[i] != convert<f64>(m.parameters()[i]);
    }
    CHECK(moved > decltype(m)::parameter_count / 2);
    static_assert(decltype(opt)::state_bytes == 3 * decltype(m)::flat_numel * sizeof(f32));
}

TEST_CASE("optimizers: dynamic loss scaling skips non-finite steps and adjusts the scale")
{
    host_model<fp16_mixed> m(5);
    train::optimizer_options options;
    options.scaler.initial_scale = 1024.0f;
    options.scaler.growth_interval = 3;
    train::optimizer opt(m, train::sgd{}, train::constant_lr{0.1f}, options);
    REQUIRE(opt.state().loss_scale == 1024.0f);
    CHECK(opt.loss_scale().data()[0] == 1024.0f);

    // Finite scaled gradients: the update uses g / scale.
    std::vector<double> w = parameters_of(m);
    std::vector<double> master(w);
    auto g = fill_gradients(m, 1, 1024.0);
    opt.step();
    for (std::size_t i = 0; i < w.size(); ++i) master[i] -= 0.1 * g[i];
    std::vector<double> got(w.size());
    for (std::size_t i = 0; i < w.size(); ++i) got[i] = opt.master()[i];
    check_close(got, master, 1e-6);
    auto s = opt.state();
    CHECK(s.good_steps == 1);
    CHECK(s.applied == 1);

    for (const float poison : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::quiet_NaN()}) {
        CAPTURE(poison);
        const float scale_before = opt.state().loss_scale;
        fill_gradients(m, 2, scale_before);
        m.gradients()[segments_of(m)[2].first + 3] = poison;
        const std::vector<double> before = parameters_of(m);
        std::vector<float> master_before(opt.master(), opt.master() + decltype(m)::flat_numel);
        opt.step();
        CHECK(parameters_of(m) == before);
        CHECK(std::equal(master_before.begin(), master_before.end(), opt.master()));
        s = opt.state();
        CHECK(s.last_skipped == 1);
        CHECK(s.loss_scale == scale_before * 0.5f);
        CHECK(s.good_steps == 0);
    }
    CHECK(s.skipped == 3);
    CHECK(s.applied == 1);
    CHECK(s.iteration == 4);

    // growth_interval finite steps in a row double the scale.
    const float scale = s.loss_scale;
    for (int i = 0; i < 3; ++i) {
        fill_gradients(m, 10 + i, scale);
        opt.step();
    }
    s = opt.state();
    CHECK(s.loss_scale == scale * 2);
    CHECK(s.good_steps == 0);
    CHECK(s.applied == 4);
    CHECK(s.last_skipped == 0);
}

TEST_CASE("optimizers: a policy without loss scaling keeps the scale at 1")
{
    host_model<bf16_mixed> m(5);
    train::optimizer opt(m, train::sgd{}, train::constant_lr{0.1f});
    fill_gradients(m, 1, 1000.0);
    opt.step();
    CHECK(opt.state().loss_scale == 1.0f);
    CHECK(opt.state().applied == 1);
    static_assert(!decltype(opt)::dynamic_loss_scaling);
}

TEST_CASE("optimizers: global-norm clipping and the accumulation divisor")
{
    host_model<f64_policy> m(9);
    train::optimizer_options options;
    options.clip_norm = 0.5f;
    train::optimizer opt(m, train::sgd{}, train::constant_lr{1.0f}, options);
    std::vector<double> w = parameters_of(m);
    const auto g = fill_gradients(m, 3, 3.0);  // three micro-batches summed
    opt.step(m.gradients(), 3.0f);
    double norm = 0;
    for (double x : g) norm += x * x;  // the mean gradient is g
    norm = std::sqrt(norm);
    REQUIRE(norm > 0.5);
    const double clip = 0.5 / (norm + 1e-6);
    for (std::size_t i = 0; i < w.size(); ++i) w[i] -= clip * g[i];
    check_close(parameters_of(m), w, 1e-6);
    CHECK(opt.state().last_grad_norm == doctest::Approx(norm).epsilon(1e-5));

    // Below the threshold nothing is clipped.
    std::vector<double> w2 = parameters_of(m);
    const auto small = fill_gradients(m, 4, 0.01);
    opt.step();
    for (std::size_t i = 0; i < w2.size(); ++i) w2[i] -= 0.01 * (small[i]);
    check_close(parameters_of(m), w2, 1e-9);
}

TEST_CASE("optimizers: the LR schedule is evaluated from the step count")
{
    host_model<f64_policy> m(2);
    train::optimizer opt(m, train::sgd{}, train::step_lr{0.5f, 2, 0.1f});
    for (int t = 0; t < 5; ++t) {
        std::vector<double> w = parameters_of(m);
        const auto g = fill_gradients(m, 60 + t);
        opt.step();
        const double lr = 0.5 * std::pow(0.1, t / 2);
        for (std::size_t i = 0; i < w.size(); ++i) w[i] -= lr * g[i];
        check_close(parameters_of(m), w, 1e-6);
        CHECK(opt.state().last_lr == doctest::Approx(lr));
    }
}

TEST_CASE("optimizers: no schedule means the rule's conventional rate; bad rates and rules are rejected")
{
    // AdamW given no schedule trains at 1e-3, as torch.optim.AdamW: exactly
    // constant_lr{1e-3f}, and the parameters move.
    host_model<fp32> a(5), b(5);
    train::optimizer defaulted(a, train::adamw{});
    train::optimizer given(b, train::adamw{}, train::constant_lr{1e-3f});
    CHECK(defaulted.schedule().lr == 1e-3f);
    const auto w0 = parameters_of(a);
    fill_gradients(a, 80);
    fill_gradients(b, 80);
    defaulted.step();
    given.step();
    CHECK(parameters_of(a) == parameters_of(b));
    CHECK(parameters_of(a) != w0);
    CHECK(defaulted.state().last_lr == 1e-3f);
    host_model<fp32> lamb_net(5);
    CHECK(train::optimizer(lamb_net, train::lamb{}).schedule().lr == 1e-3f);

    // A rate that is negative, not finite or zero for the whole schedule: at construction.
    host_model<fp32> m(6);
    for (const float lr : {0.0f, -1e-3f, NAN, INFINITY})
        CHECK_THROWS_AS((train::optimizer(m, train::adamw{}, train::constant_lr{lr})), tenet::error);
    CHECK_THROWS_AS((train::optimizer(m, train::adamw{}, train::warmup_cosine_lr{0.0f, 10, 100})), tenet::error);
    CHECK_THROWS_AS((train::optimizer(m, train::sgd{}, train::step_lr{NAN, 10, 0.5f})), tenet::error);
    CHECK_THROWS_AS((train::optimizer(m, train::lamb{}, train::one_cycle_lr{0.0f, 100})), tenet::error);

    // What torch.optim rejects.
    CHECK_THROWS_WITH_AS((train::optimizer(m, train::sgd{0.9f, 0.1f, 0.0f, true}, train::constant_lr{0.1f})),
                         "tenet: sgd: Nesterov momentum requires a momentum and zero dampening", tenet::error);
    CHECK_THROWS_AS((train::optimizer(m, train::sgd{0.0f, 0.0f, 0.0f, true}, train::constant_lr{0.1f})), tenet::error);
    CHECK_THROWS_AS((train::optimizer(m, train::sgd{-0.5f}, train::constant_lr{0.1f})), tenet::error);
    CHECK_THROWS_AS((train::optimizer(m, train::sgd{0.9f, 1.5f}, train::constant_lr{0.1f})), tenet::error);
    CHECK_THROWS_AS((train::optimizer(m, train::adamw{1.0f}, train::constant_lr{0.1f})), tenet::error);
    CHECK_THROWS_AS((train::optimizer(m, train::lamb{0.9f, 0.999f, -1.0f}, train::constant_lr{0.1f})), tenet::error);
    CHECK_NOTHROW((train::optimizer(m, train::sgd{0.9f, 0.0f, 0.0f, true}, train::constant_lr{0.1f})));

    // Settings that would switch clipping off unseen, or give states the
    // optimizer's own checkpoint loader refuses (a growth interval of 0
    // leaves good_steps at or past it for good).
    using change = void (*)(train::optimizer_options&);
    const change bad[] = {
        [](train::optimizer_options& o) { o.clip_norm = -1.0f; },
        [](train::optimizer_options& o) { o.clip_norm = NAN; },
        [](train::optimizer_options& o) { o.clip_norm = INFINITY; },
        [](train::optimizer_options& o) { o.scaler.initial_scale = 0.0f; },
        [](train::optimizer_options& o) { o.scaler.initial_scale = INFINITY; },
        [](train::optimizer_options& o) { o.scaler.growth_factor = 0.5f; },
        [](train::optimizer_options& o) { o.scaler.growth_factor = NAN; },
        [](train::optimizer_options& o) { o.scaler.backoff_factor = 0.0f; },
        [](train::optimizer_options& o) { o.scaler.backoff_factor = 1.5f; },
        [](train::optimizer_options& o) { o.scaler.growth_interval = 0; },
    };
    for (std::size_t i = 0; i < std::size(bad); ++i) {
        CAPTURE(i);
        train::optimizer_options o;
        bad[i](o);
        CHECK_THROWS_AS((train::optimizer(m, train::adamw{}, train::constant_lr{0.1f}, o)), tenet::error);
        host_model<fp16_mixed> scaled(6);
        CHECK_THROWS_AS((train::optimizer(scaled, train::adamw{}, train::constant_lr{0.1f}, o)), tenet::error);
    }
    // The edges: a constant scale (growth and backoff 1), and the largest finite clip norm.
    train::optimizer_options edges;
    edges.clip_norm = std::numeric_limits<float>::max();
    edges.scaler.growth_factor = edges.scaler.backoff_factor = 1.0f;
    edges.scaler.growth_interval = 1;
    CHECK_NOTHROW((train::optimizer(m, train::adamw{}, train::constant_lr{0.1f}, edges)));
}

namespace {

// ZeRO-1 in one process: `ranks` copies of a model, each with an optimizer
// keeping one parameter_shard, stepped as the trainer steps them (the
// shards' totals summed by hand, every shard's parameters copied to every
// copy), against one whole optimizer on the same gradients.
template <class P, class Rule>
void check_shards_step_as_one(std::size_t ranks, Rule rule, train::optimizer_options options)
{
    using M = host_model<P>;
    using G = typename M::gradient_type;
    using optimizer_t = train::optimizer<M, Rule>;
    constexpr std::size_t n = M::flat_numel;
    M whole_model(7);
    optimizer_t whole(whole_model, rule, train::constant_lr{1e-2f}, options);
    std::vector<std::unique_ptr<M>> copies;
    std::vector<std::unique_ptr<optimizer_t>> shards;
    std::size_t covered = 0;
    for (std::size_t r = 0; r < ranks; ++r) {
        copies.push_back(std::make_unique<M>(7));
        shards.push_back(std::make_unique<optimizer_t>(*copies[r], rule, train::constant_lr{1e-2f}, options,
                                                       train::parameter_shard::of(n, r, ranks)));
        CHECK(shards[r]->shard().begin == covered);
        covered = shards[r]->shard().end;
        CHECK(shards[r]->sharded() == (ranks > 1));
    }
    CHECK(covered == n);
    std::vector<char> keep(n, 1);  // masked: every third weight pruned
    if (options.masked) {
        for (std::size_t i = 0; i < n; i += 3) keep[i] = 0;
        whole.masks().from_host(keep);
        whole.apply_masks();
        for (auto& s : shards) s->masks().from_host(keep), s->apply_masks();
    }
    const float scale = whole.state().loss_scale;
    for (std::uint64_t t = 0; t < 6; ++t) {
        CAPTURE(t);
        const double size = t % 2 ? 4.0 : 0.05;  // above and below a clip norm of 1
        fill_gradients(whole_model, 90 + t, size * scale);
        for (auto& c : copies) fill_gradients(*c, 90 + t, size * scale);
        if (t == 3) {  // inf in one shard only, in a kept weight's gradient
            const auto [begin, count] = segments_of(whole_model).back();
            const std::size_t at = begin + count - (keep[begin + count - 1] ? 1 : 2);
            whole_model.gradients()[at] = std::numeric_limits<G>::infinity();
            for (auto& c : copies) c->gradients()[at] = std::numeric_limits<G>::infinity();
        }
        whole.step(whole_model.gradients(), 2.0f);
        G sum[2] = {G(0), G(0)};
        for (std::size_t r = 0; r < ranks; ++r) {
            G totals[2] = {G(-1), G(-1)};  // poisoned
            shards[r]->measure(copies[r]->gradients(), 2.0f, totals);
            sum[0] += totals[0];
            sum[1] += totals[1];
        }
        for (std::size_t r = 0; r < ranks; ++r) shards[r]->step(copies[r]->gradients(), 2.0f, sum);
        for (std::size_t r = 0; r < ranks; ++r)  // the all-gather
            for (std::size_t i = shards[r]->shard().begin; i < shards[r]->shard().end; ++i)
                for (auto& c : copies) c->parameters()[i] = copies[r]->parameters()[i];
        const auto expected = parameters_of(whole_model);
        for (std::size_t r = 0; r < ranks; ++r) {
            CAPTURE(r);
            // the shards' norm sums in another order: a clip coefficient ulps
            // apart; (without a global pass the inf reaches the weights: NaN alike)
            const auto got = parameters_of(*copies[r]);
            for (std::size_t i = 0; i < n; ++i)
                if (std::isnan(expected[i])) CHECK(std::isnan(got[i]));
                else CHECK(got[i] == doctest::Approx(expected[i]).epsilon(1e-6).scale(1));
            const auto a = shards[r]->state(), b = whole.state();
            CHECK(a.applied == b.applied);
            CHECK(a.skipped == b.skipped);
            CHECK(a.nonfinite == b.nonfinite);
            CHECK(a.loss_scale == b.loss_scale);
            CHECK(a.last_grad_norm == doctest::Approx(b.last_grad_norm).epsilon(1e-5));
            for (std::size_t i = shards[r]->shard().begin; i < shards[r]->shard().end; ++i) {
                const std::size_t at = i - shards[r]->shard().begin;
                for (std::size_t j = 0; j < Rule::slots; ++j) {
                    const double want = whole.slot(j)[i];
                    if (std::isfinite(want)) CHECK(shards[r]->slot(j)[at] == doctest::Approx(want).epsilon(1e-5));
                    else CHECK(std::memcmp(&shards[r]->slot(j)[at], &whole.slot(j)[i], sizeof(G)) == 0);
                }
                if (options.average) {
                    const double want = whole.average()[i];
                    if (std::isfinite(want)) CHECK(shards[r]->average()[at] == doctest::Approx(want).epsilon(1e-5));
                    else CHECK(std::isnan(shards[r]->average()[at]) == std::isnan(want));
                }
                if (!keep[i]) CHECK(convert<f64>(copies[r]->parameters()[i]) == 0.0);
            }
        }
    }
    CHECK(whole.state().nonfinite == 1);
}

}  // namespace

TEST_CASE("optimizers: sharded (ZeRO-1) optimizers step as one whole optimizer")
{
    train::optimizer_options clipped;
    clipped.clip_norm = 1.0f;
    train::optimizer_options masked = clipped;
    masked.masked = true;
    train::optimizer_options plain;
    train::optimizer_options grouped = clipped;  // the shards cut the groups' ranges
    grouped.groups = train::parameter_groups{{{"0.*", 0.25f, {}}, {"2.weight", 1.0f, 0.3f}}};
    train::optimizer_options masked_grouped = masked;
    masked_grouped.groups = grouped.groups;
    masked_grouped.average = train::ema{.decay = 0.7f};
    for (std::size_t ranks : {1u, 2u, 3u, 4u, 5u}) {
        CAPTURE(ranks);
        check_shards_step_as_one<fp32>(ranks, train::adamw{}, clipped);
        check_shards_step_as_one<bf16_mixed>(ranks, train::sgd{0.9f}, masked);
        check_shards_step_as_one<fp16_mixed>(ranks, train::adamw{}, plain);
        check_shards_step_as_one<fp32>(ranks, train::adamw{}, plain);  // no global pass: inf reaches the weights
        check_shards_step_as_one<fp32>(ranks, train::adamw{}, grouped);
        check_shards_step_as_one<bf16_mixed>(ranks, train::sgd{0.9f, 0.0f, 0.01f}, masked_grouped);
    }
}

TEST_CASE("optimizers: a shard's state bytes, its checkpoint slice, and what a shard refuses")
{
    using M = host_model<bf16_mixed>;
    using optimizer_t = train::optimizer<M, train::adamw>;
    constexpr std::size_t n = M::flat_numel;
    static_assert(optimizer_t::sharded_state_bytes(1) == optimizer_t::state_bytes);
    static_assert(optimizer_t::sharded_state_bytes(4) == 3 * (n / 4 + n % 4) * sizeof(f32));
    static_assert(train::parameter_shard::of(10, 2, 3) == train::parameter_shard{6, 10});

    M whole_model(3), part_model(3);
    optimizer_t whole(whole_model, train::adamw{}, train::constant_lr{1e-2f});
    for (std::uint64_t t = 0; t < 3; ++t) {
        fill_gradients(whole_model, 70 + t);
        whole.step();
    }
    const std::string path = (std::filesystem::temp_directory_path() / "tenet_optimizers_sharded.ckpt").string();
    whole.save(path);
    const auto shard = train::parameter_shard::of(n, 1, 3);
    optimizer_t part(part_model, train::adamw{}, train::constant_lr{1e-2f}, {}, shard);
    part.load(path);  // its slice of the whole file
    for (std::size_t i = shard.begin; i < shard.end; ++i) {
        CHECK(part.master()[i - shard.begin] == whole.master()[i]);
        CHECK(part.slot(1)[i - shard.begin] == whole.slot(1)[i]);
    }
    CHECK(part.state().applied == 3);
    CHECK_THROWS_AS(part.save(path), tenet::error);  // the trainer gathers shards into a file
    CHECK_THROWS_AS(part.step(), tenet::error);      // a shard's step needs the ranks' totals
    std::remove(path.c_str());

    CHECK_THROWS_AS((optimizer_t(part_model, train::adamw{}, train::constant_lr{1e-2f}, {}, {3, 2})), tenet::error);
    CHECK_THROWS_AS((optimizer_t(part_model, train::adamw{}, train::constant_lr{1e-2f}, {}, {0, n + 1})), tenet::error);
    // LAMB's trust ratio needs whole tensors
    CHECK_THROWS_AS((train::optimizer<M, train::lamb>(part_model, train::lamb{}, train::constant_lr{1e-2f}, {}, shard)),
                    tenet::error);
    CHECK_NOTHROW((train::optimizer<M, train::lamb>(part_model, train::lamb{}, train::constant_lr{1e-2f}, {},
                                                    train::parameter_shard::whole(n))));
}

// ---- parameter groups ------------------------------------------------------

namespace {

// The settings the groups below give spec's parameters.
train::parameter_groups example_groups()
{
    return train::parameter_groups{{{"0.*", 0.25f, std::nullopt}, {"2.weight", 1.0f, 0.3f}}};
}

// Steps `rule` with `groups` beside its float64 reference run on each
// parameter alone, with that parameter's rate and decay.
template <class P, class Rule, class Reference>
void compare_grouped(Rule rule, Reference base, const train::parameter_groups& groups, int steps, double tolerance)
{
    host_model<P> m(7);
    train::optimizer_options options;
    options.groups = groups;
    train::optimizer opt(m, rule, train::constant_lr{static_cast<float>(base.lr)}, options);
    const auto settings = opt.parameter_settings();
    const auto segments = segments_of(m);
    REQUIRE(settings.size() == segments.size());
    std::vector<Reference> references;
    for (const auto& [name, s] : settings) {
        Reference r = base;
        r.lr = base.lr * s.lr_scale;
        r.decay = s.weight_decay;
        references.push_back(r);
    }
    std::vector<double> w = parameters_of(m);
    for (int t = 1; t <= steps; ++t) {
        const auto g = fill_gradients(m, 300 + t);
        opt.step();
        for (std::size_t p = 0; p < segments.size(); ++p) {
            const auto [begin, n] = segments[p];
            std::vector<double> wp(w.begin() + begin, w.begin() + begin + n), gp(g.begin() + begin, g.begin() + begin + n);
            if constexpr (requires { references[p].segments; }) references[p].segments = {{0, n}};
            references[p].step(wp, gp, t);
            std::copy(wp.begin(), wp.end(), w.begin() + begin);
        }
        check_close(parameters_of(m), w, tolerance);
    }
}

// Each parameter of the model, read from the fixture under prefix + name.
template <class M>
void load_prefixed(M& m, const std::string& path, const std::string& prefix, std::vector<double>* into = nullptr)
{
    m.for_each_parameter([&](const std::string& name, auto value, auto) {
        constexpr auto extents = decltype(value)::shape::extents;
        std::vector<double> values(decltype(value)::shape::numel);
        io::load_tensor(path, prefix + name, values.data(), std::vector<std::size_t>(extents.begin(), extents.end()));
        const std::size_t begin = static_cast<std::size_t>(value.data() - m.parameters());
        for (std::size_t i = 0; i < values.size(); ++i) {
            if (into) (*into)[begin + i] = values[i];
            else value.data()[i] = convert<typename M::storage_type>(values[i]);
        }
    });
}

}  // namespace

TEST_CASE("optimizers: parameter groups resolve by name and rank; bad groups are refused")
{
    using train::detail::glob_match;
    CHECK(glob_match("0.*", "0.weight"));
    CHECK_FALSE(glob_match("0.*", "10.weight"));
    CHECK(glob_match("*.bias", "3.1.bias"));
    CHECK_FALSE(glob_match("*.bias", "3.1.bias_x"));
    CHECK(glob_match("?.weight", "4.weight"));
    CHECK_FALSE(glob_match("?.weight", "14.weight"));
    CHECK(glob_match("*", "anything"));
    CHECK(glob_match("a*b*c", "aXbYbc"));
    CHECK_FALSE(glob_match("", "x"));

    const std::vector<train::parameter_identity> params{
        {"0.weight", 2, "Linear"}, {"0.bias", 1, "Linear"}, {"2.weight", 2, "Linear"}, {"2.bias", 1, "Linear"}};
    auto s = train::resolve_groups(example_groups(), params, 0.1f);
    const std::vector<std::pair<float, float>> want{{0.25f, 0.1f}, {0.25f, 0.0f}, {1.0f, 0.3f}, {1.0f, 0.0f}};
    for (std::size_t p = 0; p < params.size(); ++p) {
        CAPTURE(params[p].name);
        CHECK(s[p].lr_scale == want[p].first);
        CHECK(s[p].weight_decay == want[p].second);
    }
    auto decay_all = example_groups();
    decay_all.decay_biases_and_norms = true;
    s = train::resolve_groups(decay_all, params, 0.1f);
    CHECK(s[1].weight_decay == 0.1f);
    CHECK(s[3].weight_decay == 0.1f);

    const auto layers = train::layer_rate_decay(0.5f, {"0.*", "2.*"});
    REQUIRE(layers.size() == 2);
    CHECK(layers[0].lr_scale == 0.25f);
    CHECK(layers[1].lr_scale == 0.5f);
    CHECK_THROWS_AS(train::layer_rate_decay(0.0f, {"0.*"}), error);
    CHECK_THROWS_AS(train::layer_rate_decay(1.5f, {"0.*"}), error);

    // A group that matches nothing names the parameters there are; one
    // shadowed by an earlier group matches nothing either.
    try {
        train::resolve_groups(train::parameter_groups{{{"1.*", 0.5f, {}}}}, params, 0.1f);
        FAIL("no error");
    } catch (const error& e) {
        CHECK(std::string(e.what()).find("'1.*' selects no parameter") != std::string::npos);
        CHECK(std::string(e.what()).find("0.weight (Linear), 0.bias (Linear), 2.weight (Linear), 2.bias (Linear)") !=
              std::string::npos);
    }
    try {
        train::resolve_groups(train::parameter_groups{{{.lr_scale = 2.0f, .layer = "LayerNorm"}}}, params, 0.1f);
        FAIL("no error");
    } catch (const error& e) {
        CHECK(std::string(e.what()).find("'*' (layer LayerNorm) selects no parameter") != std::string::npos);
    }
    CHECK_THROWS_AS(train::resolve_groups(train::parameter_groups{{{.lr_scale = 2.0f}}}, params, 0.1f), error);

    // By layer kind, alone or with a name: the first group that selects wins.
    const std::vector<train::parameter_identity> mixed{{"0.weight", 4, "Conv2d"},  {"0.bias", 1, "Conv2d"},
                                                       {"1.weight", 1, "BatchNorm2d"}, {"1.bias", 1, "BatchNorm2d"},
                                                       {"3.weight", 1, "LayerNorm"}, {"4.weight", 2, "Linear"},
                                                       {"5.scale", 1, ""}};
    s = train::resolve_groups(train::parameter_groups{{{.pattern = "0.bias", .lr_scale = 3.0f, .layer = "Conv2d"},
                                                       {.lr_scale = 0.5f, .weight_decay = 0.2f, .layer = "*Norm*"},
                                                       {.pattern = "*.weight", .lr_scale = 4.0f, .layer = "Conv2d"},
                                                       {.pattern = "5.*", .lr_scale = 6.0f}},
                                                      true},
                              mixed, 0.1f);
    const std::vector<std::pair<float, float>> by_kind{{4.0f, 0.1f}, {3.0f, 0.1f}, {0.5f, 0.2f}, {0.5f, 0.2f},
                                                       {0.5f, 0.2f}, {1.0f, 0.1f}, {6.0f, 0.1f}};
    CHECK_THROWS_AS(train::resolve_groups(train::parameter_groups{{{.pattern = "1.*", .layer = "Conv2d"}}}, mixed, 0.1f),
                    error);  // (the name and the kind must both select)
    for (std::size_t p = 0; p < mixed.size(); ++p) {
        CAPTURE(mixed[p].name);
        CHECK(s[p].lr_scale == by_kind[p].first);
        CHECK(s[p].weight_decay == by_kind[p].second);
    }
    CHECK_THROWS_AS(train::resolve_groups(train::parameter_groups{{{"*", 1.0f, {}}, {"0.*", 2.0f, {}}}}, params,
                                          0.1f),
                    error);
    CHECK_THROWS_AS(train::resolve_groups(train::parameter_groups{{{"0.*", -1.0f, {}}}}, params, 0.1f), error);
    CHECK_THROWS_AS(train::resolve_groups(train::parameter_groups{{{"0.*", NAN, {}}}}, params, 0.1f), error);
    CHECK_THROWS_AS(train::resolve_groups(train::parameter_groups{{{"0.*", 1.0f, -0.5f}}}, params, 0.1f), error);

    host_model<fp32> m(1);
    train::optimizer_options options;
    options.groups = train::parameter_groups{{{"7.*", 1.0f, {}}}};
    CHECK_THROWS_AS(train::optimizer(m, train::adamw{}, train::constant_lr{1e-3f}, options), error);
}

TEST_CASE("optimizers: parameter groups give each parameter its rate and decay (float64 references)")
{
    const auto groups = example_groups();
    compare_grouped<f64_policy>(train::sgd{0.9f, 0.0f, 0.05f, false}, sgd_reference{0.05, 0.9, 0, 0.05, false, {}},
                                groups, 5, 1e-6);
    compare_grouped<f64_policy>(train::adamw{0.9f, 0.99f, 1e-8f, 0.1f},
                                adamw_reference{1e-2, 0.9, 0.99, 1e-8, 0.1, {}, {}}, groups, 5, 1e-6);
    compare_grouped<f64_policy>(train::lamb{0.9f, 0.99f, 1e-6f, 0.1f},
                                lamb_reference{2e-2, 0.9, 0.99, 1e-6, 0.1, {}, {}, {}}, groups, 5, 1e-6);
    compare_grouped<fp32>(train::adamw{0.9f, 0.99f, 1e-8f, 0.1f}, adamw_reference{1e-2, 0.9, 0.99, 1e-8, 0.1, {}, {}},
                          groups, 5, 1e-5);
    auto layerwise = train::parameter_groups{train::layer_rate_decay(0.5f, {"0.*"})};
    layerwise.decay_biases_and_norms = true;
    compare_grouped<fp32>(train::sgd{0.5f, 0.0f, 0.01f, true}, sgd_reference{0.1, 0.5, 0, 0.01, true, {}}, layerwise, 4,
                          1e-5);
}

TEST_CASE("optimizers: parameter groups and the weights' average match torch.optim and timm (PyTorch fixture)")
{
    // tests/fixtures/pytorch/make_recipes_fixture.py: torch.optim's update of
    // the same net from the same gradients, in float64, stored as float32.
    const std::string path = std::string(TENET_TEST_FIXTURES) + "/pytorch/recipes.safetensors";
    const auto run = [&]<class P, class Rule>(P, Rule rule, float lr, const train::parameter_groups& groups,
                                              const std::string& expected, double tolerance, bool average = false) {
        CAPTURE(expected);
        host_model<P> m(1);
        load_prefixed(m, path, "init.");
        train::optimizer_options options;
        options.groups = groups;
        if (average) options.average = train::ema{.decay = 0.9f, .warmup = true};  // timm's ModelEmaV3 warm-up
        train::optimizer opt(m, rule, train::constant_lr{lr}, options);
        const std::vector<double> start = parameters_of(m);
        for (int t = 1; t <= 4; ++t) {
            std::vector<double> g(host_model<P>::flat_numel, 0.0);
            load_prefixed(m, path, "grad" + std::to_string(t) + ".", &g);
            for (std::size_t i = 0; i < g.size(); ++i) m.gradients()[i] = convert<typename host_model<P>::gradient_type>(g[i]);
            opt.step();
        }
        std::vector<double> want(host_model<P>::flat_numel, 0.0);
        load_prefixed(m, path, expected + ".", &want);
        check_close(parameters_of(m), want, tolerance);
        if (average) {
            std::vector<double> want_average(want.size(), 0.0), got(want.size());
            load_prefixed(m, path, "ema.", &want_average);
            for (std::size_t i = 0; i < got.size(); ++i) got[i] = opt.average()[i];
            check_close(got, want_average, tolerance);
        }
        return std::pair{start, parameters_of(m)};
    };
    // AdamW: layer 0 at a quarter of the rate, 2.weight decaying by 0.3, biases not at all
    run(f64_policy{}, train::adamw{0.9f, 0.999f, 1e-8f, 0.1f}, 0.01f, example_groups(), "adamw", 1e-6, true);
    run(fp32{}, train::adamw{0.9f, 0.999f, 1e-8f, 0.1f}, 0.01f, example_groups(), "adamw", 1e-5, true);
    run(bf16_mixed{}, train::adamw{0.9f, 0.999f, 1e-8f, 0.1f}, 0.01f, example_groups(), "adamw", 1e-2, true);
    // SGD with momentum: layer 0 frozen by a rate of 0 -- its weights unchanged bit for bit
    const train::parameter_groups frozen{{{"0.*", 0.0f, {}}}};
    const auto [start, end] = run(fp32{}, train::sgd{0.9f, 0.0f, 0.02f, false}, 0.05f, frozen, "sgd", 1e-5);
    host_model<fp32> probe(1);
    const auto segments = segments_of(probe);
    for (std::size_t p = 0; p < 2; ++p)  // 0.weight, 0.bias
        for (std::size_t i = segments[p].first; i < segments[p].first + segments[p].second; ++i)
            CHECK(std::memcmp(&start[i], &end[i], sizeof(double)) == 0);
}

TEST_CASE("optimizers: set_groups changes rates in place (gradual unfreezing); what it refuses")
{
    host_model<fp32> m(4);
    train::optimizer_options options;
    options.groups = train::parameter_groups{{{"0.*", 0.0f, {}}}};
    train::optimizer opt(m, train::adamw{}, train::constant_lr{1e-2f}, options);
    const auto segments = segments_of(m);
    const auto frozen_part = [&] {
        std::vector<float> v;
        for (std::size_t p = 0; p < 2; ++p)
            for (std::size_t i = segments[p].first; i < segments[p].first + segments[p].second; ++i)
                v.push_back(m.parameters()[i]);
        return v;
    };
    const auto before = frozen_part();
    const auto head_before = m.parameters()[segments[2].first];
    for (int t = 0; t < 3; ++t) {
        fill_gradients(m, 500 + t);
        opt.step();
    }
    CHECK(std::memcmp(frozen_part().data(), before.data(), before.size() * sizeof(float)) == 0);
    CHECK(m.parameters()[segments[2].first] != head_before);

    // A bad group changes nothing; a good one unfreezes layer 0.
    CHECK_THROWS_AS(opt.set_groups(train::parameter_groups{{{"9.*", 1.0f, {}}}}), error);
    CHECK(opt.parameter_settings()[0].second.lr_scale == 0.0f);
    opt.set_groups(train::parameter_groups{{{"0.*", 0.5f, {}}}});
    CHECK(opt.parameter_settings()[0].first == "0.weight");
    CHECK(opt.parameter_settings()[0].second.lr_scale == 0.5f);
    CHECK(opt.parameter_settings()[1].second.weight_decay == 0.0f);  // a bias
    CHECK(opt.parameter_settings()[2].second.weight_decay == train::adamw{}.weight_decay);
    fill_gradients(m, 510);
    opt.step();
    const auto after = frozen_part();
    std::size_t moved = 0;
    for (std::size_t i = 0; i < before.size(); ++i) moved += after[i] != before[i];
    CHECK(moved == before.size());

    // Without groups the update reads no table: set_groups says so.
    host_model<fp32> plain(4);
    train::optimizer plain_opt(plain, train::adamw{}, train::constant_lr{1e-2f});
    CHECK(plain_opt.parameter_settings()[1].second.weight_decay == train::adamw{}.weight_decay);  // torch's default
    CHECK_THROWS_AS(plain_opt.set_groups(train::parameter_groups{}), error);
}

TEST_CASE_TEMPLATE("optimizers: the weights' moving average, swapped in and out exactly", P, f64_policy, fp32, bf16_mixed)
{
    using M = host_model<P>;
    using S = typename M::storage_type;
    for (const bool warmup : {false, true}) {
        CAPTURE(warmup);
        M m(8);
        train::optimizer_options options;
        options.average = train::ema{.decay = 0.8f, .warmup = warmup, .warmup_gamma = 2.0f, .warmup_power = 0.75f};
        train::optimizer opt(m, train::adamw{}, train::constant_lr{5e-2f}, options);
        testing::scratch_dir dir("average");
        std::vector<double> average(M::flat_numel);
        for (std::size_t i = 0; i < average.size(); ++i) average[i] = opt.master()[i];  // starts at the weights
        for (int t = 1; t <= 6; ++t) {
            fill_gradients(m, 700 + t);
            opt.step();
            const double decay = 0.8f;  // (as the float the rule holds)
            const double d = warmup ? std::max(std::min(1 - std::pow(1 + t / 2.0, -0.75), decay), 0.0) : decay;
            for (std::size_t i = 0; i < average.size(); ++i) average[i] += (1 - d) * (opt.master()[i] - average[i]);
        }
        std::vector<double> got(M::flat_numel);
        for (std::size_t i = 0; i < got.size(); ++i) got[i] = opt.average()[i];
        check_close(got, average, std::is_same_v<S, f64> ? 1e-12 : 1e-6);

        // In: the model holds the average (rounded to the storage type); out: the same bits as before.
        const std::vector<S> trained(m.parameters(), m.parameters() + M::flat_numel);
        {
            train::average_scope use(opt);
            CHECK(opt.average_swapped_in());
            for (std::size_t i = 0; i < got.size(); ++i) CHECK(m.parameters()[i] == convert<S>(got[i]));
            CHECK_THROWS_AS(opt.step(), error);
            CHECK_THROWS_AS(opt.save(dir.file("swapped.opt")), error);
        }
        CHECK_FALSE(opt.average_swapped_in());
        CHECK(std::memcmp(trained.data(), m.parameters(), trained.size() * sizeof(S)) == 0);
    }
}

TEST_CASE("optimizers: the average in checkpoints; skipped steps and pruned weights leave it as it should be")
{
    host_model<fp16_mixed> m(3);
    train::optimizer_options options;
    options.average = train::ema{.decay = 0.5f};
    options.masked = true;
    train::optimizer opt(m, train::adamw{}, train::constant_lr{1e-2f}, options);
    const float scale = opt.state().loss_scale;
    fill_gradients(m, 800, scale);
    opt.step();
    std::vector<char> keep(host_model<fp16_mixed>::flat_numel, 1);
    for (std::size_t i = 0; i < keep.size(); i += 4) keep[i] = 0;
    opt.masks().from_host(keep);
    opt.apply_masks();
    const std::size_t n = host_model<fp16_mixed>::flat_numel;
    for (std::size_t i = 0; i < n; i += 4) CHECK(opt.average()[i] == 0.0f);
    const std::vector<float> before(opt.average(), opt.average() + n);
    m.gradients()[5] = std::numeric_limits<float>::infinity();  // a skipped step does not move it
    opt.step();
    CHECK(opt.state().skipped == 1);
    CHECK(std::memcmp(before.data(), opt.average(), n * sizeof(float)) == 0);

    testing::scratch_dir dir("average");
    const std::string path = dir.file("average.opt");
    opt.save(path);
    fill_gradients(m, 801, scale);
    opt.step();
    REQUIRE(std::memcmp(before.data(), opt.average(), n * sizeof(float)) != 0);
    opt.load(path);
    CHECK(std::memcmp(before.data(), opt.average(), n * sizeof(float)) == 0);
    // an optimizer that keeps no average refuses the file (and has no average to swap)
    host_model<fp16_mixed> twin(3);
    train::optimizer_options masked_only;
    masked_only.masked = true;
    train::optimizer plain(twin, train::adamw{}, train::constant_lr{1e-2f}, masked_only);
    CHECK_THROWS_AS(plain.load(path), format_error);
    CHECK_THROWS_AS(plain.swap_average(), error);
    CHECK_THROWS_AS(plain.average(), error);
    train::optimizer_options bad;
    bad.average = train::ema{.decay = 1.5f};
    CHECK_THROWS_AS(train::optimizer(twin, train::adamw{}, train::constant_lr{1e-2f}, bad), error);
}
