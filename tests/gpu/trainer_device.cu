// The training stack on the device: the cooperative fused optimizer against
// the host's (SGD, AdamW, LAMB; scaled fp16 gradients with an injected inf),
// and graph-replayed trainer steps against eager ones: the same kernels in
// the same order, so the parameters must be identical, bit for bit. Bad
// batches: padding rows holding NaN/inf change nothing; NaN gradients, bad
// labels and bad masks are counted and skipped on request. A frozen block
// after a trainable layer gives the host's input gradient.
#include "device_testing.hpp"
#include "user_losses.hpp"

#include <tenet/train/train.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;
namespace train = tenet::train;

namespace {

using spec = nn::Sequential<nn::Linear<40, 64>, nn::ReLU, nn::Linear<64, 10>>;
template <class P, class Place>
using model_t = nn::model<spec, P, Shape<32, 40>, Place>;

template <class T>
std::vector<double> to_doubles(const T* p, std::size_t n, bool device)
{
    std::vector<T> host(n);
    if (device) {
        TENET_CUDA_CHECK(cudaMemcpy(host.data(), p, n * sizeof(T), cudaMemcpyDefault));
    } else {
        std::copy(p, p + n, host.begin());
    }
    std::vector<double> out(n);
    for (std::size_t i = 0; i < n; ++i) out[i] = convert<f64>(host[i]);
    return out;
}

// The same gradients in both models' flat buffers (padding 0).
template <class M>
void set_gradients(M& m, const std::vector<float>& g, bool device)
{
    if (device) TENET_CUDA_CHECK(cudaMemcpy(m.gradients(), g.data(), g.size() * sizeof(float), cudaMemcpyDefault));
    else std::copy(g.begin(), g.end(), m.gradients());
}

template <class P, class Rule>
void check_optimizer(Rule rule, float grad_scale, bool inject_inf, train::optimizer_options options = {.clip_norm = 5.0f})
{
    model_t<P, Host> host(3);
    model_t<P, Device> device(3);
    current_stream().synchronize();
    constexpr std::size_t n = model_t<P, Host>::flat_numel;
    REQUIRE(to_doubles(host.parameters(), n, false) == to_doubles(device.parameters(), n, true));
    train::optimizer host_opt(host, rule, train::warmup_cosine_lr{1e-2f, 2, 8, 0.0f}, options);
    train::optimizer device_opt(device, rule, train::warmup_cosine_lr{1e-2f, 2, 8, 0.0f}, options);
    std::mt19937_64 rng(9);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int step = 0; step < 6; ++step) {
        std::vector<float> g(n, 0.0f);
        host.for_each_parameter([&](const std::string&, auto value, auto) {
            const std::size_t begin = static_cast<std::size_t>(value.data() - host.parameters());
            for (std::size_t i = 0; i < decltype(value)::shape::numel; ++i) g[begin + i] = normal(rng) * grad_scale;
        });
        if (inject_inf && step == 3) g[70] = std::numeric_limits<float>::infinity();
        set_gradients(host, g, false);
        set_gradients(device, g, true);
        host_opt.step();
        device_opt.step();
        const auto a = to_doubles(host.parameters(), n, false), b = to_doubles(device.parameters(), n, true);
        double worst = 0;
        for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(a[i] - b[i]) / (1e-3 + std::abs(a[i])));
        CHECK(worst < 1e-4);
        const auto hs = host_opt.state(), ds = device_opt.state();
        CHECK(hs.applied == ds.applied);
        CHECK(hs.skipped == ds.skipped);
        CHECK(hs.loss_scale == ds.loss_scale);
        CHECK(ds.last_grad_norm == doctest::Approx(hs.last_grad_norm).epsilon(1e-4));
        if (options.average) {
            const auto ha = to_doubles(host_opt.average(), n, false), da = to_doubles(device_opt.average(), n, true);
            double far = 0;
            for (std::size_t i = 0; i < n; ++i) far = std::max(far, std::abs(ha[i] - da[i]) / (1e-3 + std::abs(ha[i])));
            CHECK(far < 1e-4);
        }
    }
    if (inject_inf) CHECK(device_opt.state().skipped == 1);
}

// Step `step`'s random batch (drawn on the graphed trainer's stream), then
// one step of each trainer, waited for.
template <class Eager, class Graphed, class X>
void step_both(Eager& eager, Graphed& graphed, int step, X& x, Tensor<std::int32_t, Shape<32>, Device>& labels,
               Tensor<std::int32_t, Shape<32>, Device>& valid)
{
    {
        stream_scope on(graphed.stream());
        x = cast<typename X::element_type>(random_normal<Shape<32, 40>>(100 + step));
        labels = cast<std::int32_t>(random_uniform<Shape<32>>(200 + step, 0, 0.0f, 9.99f));
        valid = cast<std::int32_t>(random_uniform<Shape<32>>(300 + step, 0, 0.0f, 1.0f) < 0.9f);
        graphed.stream().synchronize();
    }
    eager.step(x, labels, valid);
    graphed.step(x, labels, valid);
    eager.stream().synchronize();
    graphed.stream().synchronize();
}

}  // namespace

TEST_CASE("gpu trainer: the fused optimizer matches the host's")
{
    check_optimizer<fp32>(train::sgd{0.9f, 0.0f, 1e-3f, true}, 1.0f, false);
    check_optimizer<fp32>(train::adamw{}, 1.0f, false);
    check_optimizer<bf16_mixed>(train::lamb{}, 1.0f, false);
    check_optimizer<fp16_mixed>(train::adamw{}, 65536.0f, true);
}

TEST_CASE("gpu trainer: parameter groups and the weights' average in the fused optimizer match the host's")
{
    train::optimizer_options o{.clip_norm = 5.0f};
    o.groups = train::parameter_groups{{{"0.*", 0.25f, {}}, {"2.weight", 1.0f, 0.3f}}};
    o.average = train::ema{.decay = 0.9f, .warmup = true};
    check_optimizer<fp32>(train::adamw{}, 1.0f, false, o);
    check_optimizer<fp32>(train::sgd{0.9f, 0.0f, 1e-2f, false}, 1.0f, false, o);
    check_optimizer<bf16_mixed>(train::lamb{}, 1.0f, false, o);
    check_optimizer<fp16_mixed>(train::adamw{}, 65536.0f, true, o);
}

TEST_CASE("gpu trainer: a frozen first layer, groups rewritten between replays and a weight average: graph = eager")
{
    using frozen_spec = nn::Sequential<nn::Frozen<nn::Linear<40, 64>>, nn::ReLU, nn::Linear<64, 10>>;
    using M = nn::model<frozen_spec, bf16_mixed, Shape<32, 40>, Device>;
    M eager_net(5), graph_net(5);
    train::trainer_options options;
    options.optimizer.groups = train::parameter_groups{{{"2.*", 0.0f, {}}}};  // starts with the head stopped too
    options.optimizer.average = train::ema{.decay = 0.8f};
    train::trainer eager(eager_net, train::adamw{}, train::constant_lr{1e-3f}, options);
    train::trainer graphed(graph_net, train::adamw{}, train::constant_lr{1e-3f}, options);
    graphed.capture();
    constexpr std::size_t n = M::flat_numel;
    const auto start = to_doubles(graph_net.parameters(), n, true);
    Tensor<bf16, Shape<32, 40>, Device> x;
    Tensor<std::int32_t, Shape<32>, Device> labels, valid;
    for (int step = 0; step < 8; ++step) {
        if (step == 3) {  // unfreeze the head: the captured step reads the rewritten table
            eager.optimizer().set_groups(train::parameter_groups{{{"2.*", 1.0f, {}}}});
            graphed.optimizer().set_groups(train::parameter_groups{{{"2.*", 1.0f, {}}}});
        }
        step_both(eager, graphed, step, x, labels, valid);
        const auto now = to_doubles(graph_net.parameters(), n, true);
        CHECK(to_doubles(eager_net.parameters(), n, true) == now);
        CHECK((now == start) == (step < 3));  // stopped, then training
        for (std::size_t i = M::trainable_numel; i < n; ++i) CHECK(now[i] == start[i]);  // frozen: bit for bit
    }
    const auto trained = to_doubles(graph_net.parameters(), n, true);
    {
        train::average_scope in(graphed);
        CHECK(to_doubles(graph_net.parameters(), n, true) != trained);
    }
    CHECK(to_doubles(graph_net.parameters(), n, true) == trained);
}

// One forward and backward of a host and a device model from the same
// random input and output gradient; the trainable gradients must agree.
template <class Spec, class P, class In>
void check_frozen_after_trainable(double tolerance)
{
    nn::model<Spec, P, In, Host> host(4);
    nn::model<Spec, P, In, Device> device(4);
    using M = decltype(host);
    using S = typename M::storage_type;
    std::mt19937_64 rng(31);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::vector<S> x(In::numel), dy(M::output_shape::numel);
    for (auto& v : x) v = convert<S>(normal(rng));
    for (auto& v : dy) v = convert<S>(normal(rng));
    Tensor<S, In, Host> hx;
    Tensor<S, typename M::output_shape, Host> hdy;
    Tensor<S, In, Device> dx;
    Tensor<S, typename M::output_shape, Device> ddy;
    std::copy(x.begin(), x.end(), hx.data());
    std::copy(dy.begin(), dy.end(), hdy.data());
    TENET_CUDA_CHECK(cudaMemcpy(dx.data(), x.data(), x.size() * sizeof(S), cudaMemcpyDefault));
    TENET_CUDA_CHECK(cudaMemcpy(ddy.data(), dy.data(), dy.size() * sizeof(S), cudaMemcpyDefault));
    host.forward(hx);
    host.backward(hdy);
    device.forward(dx);
    device.backward(ddy);
    current_stream().synchronize();
    const auto want = to_doubles(host.gradients(), M::trainable_numel, false);
    const auto got = to_doubles(device.gradients(), M::trainable_numel, true);
    double scale = 0;
    for (double w : want) scale = std::max(scale, std::abs(w));
    REQUIRE(scale > 0);
    for (std::size_t i = 0; i < want.size(); ++i) CHECK(std::abs(got[i] - want[i]) <= tolerance * scale);
}

TEST_CASE("gpu Frozen after a trainable layer: the input gradient alone, as the host computes it")
{
    // fused Linear units inside the frozen block (the input gradient through
    // ReLU's mask without a bias gradient); Conv2d and BatchNorm (cuDNN in f32)
    using mlp = nn::Sequential<nn::Linear<40, 64>, nn::ReLU,
                               nn::Frozen<nn::Sequential<nn::Linear<64, 48>, nn::ReLU, nn::Linear<48, 32>>>, nn::ReLU,
                               nn::Linear<32, 10>>;
    using cnn = nn::Sequential<nn::Conv2d<3, 4, 3, 1, 1>, nn::ReLU,
                               nn::Frozen<nn::Sequential<nn::Conv2d<4, 4, 3, 1, 1>, nn::ReLU, nn::BatchNorm2d<4>>>,
                               nn::Flatten, nn::Linear<256, 10>>;
    check_frozen_after_trainable<mlp, fp32, Shape<32, 40>>(1e-4);
    check_frozen_after_trainable<mlp, bf16_mixed, Shape<32, 40>>(3e-2);
    check_frozen_after_trainable<cnn, fp32, Shape<4, 8, 8, 3>>(1e-4);
    check_frozen_after_trainable<cnn, bf16_mixed, Shape<4, 8, 8, 3>>(3e-2);
}

TEST_CASE("gpu trainer: graph-replayed steps give the same parameters as eager steps")
{
    using P = fp16_mixed;
    model_t<P, Device> eager_net(5), graph_net(5);
    train::trainer eager(eager_net, train::adamw{}, train::constant_lr{1e-3f});
    train::trainer graphed(graph_net, train::adamw{}, train::constant_lr{1e-3f});
    graphed.capture();
    Tensor<f16, Shape<32, 40>, Device> x;
    Tensor<std::int32_t, Shape<32>, Device> labels, valid;
    for (int step = 0; step < 8; ++step) {
        step_both(eager, graphed, step, x, labels, valid);
        constexpr std::size_t n = model_t<P, Device>::flat_numel;
        CHECK(to_doubles(eager_net.parameters(), n, true) == to_doubles(graph_net.parameters(), n, true));
    }
    CHECK(eager.state().applied == graphed.state().applied);
    CHECK(eager.mean_loss() == graphed.mean_loss());
}

TEST_CASE("gpu layer_profile: eager steps timed by CUDA events layer by layer, captured steps whole; nothing changes")
{
    model_t<fp32, Device> observed_net(5), plain_net(5);
    train::trainer observed(observed_net, train::adamw{}, train::constant_lr{1e-3f});
    train::trainer plain(plain_net, train::adamw{}, train::constant_lr{1e-3f});
    Tensor<f32, Shape<32, 40>, Device> x;
    Tensor<std::int32_t, Shape<32>, Device> labels, valid;
    const profile::machine_peak& peak = linalg::measure_peak<Device>();
    MESSAGE("device peak: " << peak.flops_per_second * 1e-9 << " GFLOP/s, " << peak.bytes_per_second * 1e-9 << " GB/s");
    CHECK(peak.flops_per_second > 1e9);
    profile::layer_profile p({.warmup_steps = 1, .peak = peak});
    observed.observe(&p);
    for (int step = 0; step < 4; ++step) step_both(plain, observed, step, x, labels, valid);
    observed.observe(nullptr);
    constexpr std::size_t n = model_t<fp32, Device>::flat_numel;
    CHECK(to_doubles(observed_net.parameters(), n, true) == to_doubles(plain_net.parameters(), n, true));
    CHECK(p.device_timed());
    CHECK(p.steps() == 3);
    CHECK(p.captured_steps() == 0);
    double parts = 0;
    std::size_t layers = 0;
    for (const auto& r : p.rows()) {
        INFO(r.name << " " << r.pass);
        CHECK(r.calls == 3);
        CHECK(r.seconds > 0);
        parts += r.seconds;
        layers += r.kind == profile::section_kind::layer;
    }
    CHECK(layers == 4);  // the fused Linear + ReLU and the last Linear, each way
    CHECK(parts + p.unattributed_seconds() == doctest::Approx(p.step_seconds()).epsilon(1e-6));
    CHECK(parts <= p.step_seconds() * (1 + 1e-6));
    MESSAGE(p.table());

    // Captured: each step timed whole, no rows, and the table says why.
    profile::layer_profile whole({.warmup_steps = 1});
    observed.capture();
    observed.observe(&whole);
    for (int step = 4; step < 8; ++step) step_both(plain, observed, step, x, labels, valid);
    observed.observe(nullptr);
    CHECK(to_doubles(observed_net.parameters(), n, true) == to_doubles(plain_net.parameters(), n, true));
    CHECK(whole.captured_steps() == 3);
    CHECK(whole.rows().empty());
    CHECK(whole.step_seconds() > 0);
    CHECK(whole.table().find("CUDA Graph replays") != std::string::npos);
}

TEST_CASE("gpu trainer: replayed steps of a Dropout model draw new masks, the eager steps' ones")
{
    // Were a replay to reuse the captured step's masks, the parameters would
    // part from the eager run's from the third step on.
    using dropout_spec = nn::Sequential<nn::Linear<40, 64>, nn::ReLU, nn::Dropout<std::ratio<1, 2>>, nn::Linear<64, 10>>;
    using M = nn::model<dropout_spec, fp32, Shape<32, 40>, Device>;
    M eager_net(6), graph_net(6);
    train::trainer eager(eager_net, train::sgd{}, train::constant_lr{0.05f});
    train::trainer graphed(graph_net, train::sgd{}, train::constant_lr{0.05f});
    graphed.capture();
    Tensor<f32, Shape<32, 40>, Device> x;
    Tensor<std::int32_t, Shape<32>, Device> labels, valid;
    {
        stream_scope on(graphed.stream());
        x = random_normal<Shape<32, 40>>(7);
        labels = cast<std::int32_t>(random_uniform<Shape<32>>(8, 0, 0.0f, 9.99f));
        valid = cast<std::int32_t>(random_uniform<Shape<32>>(9) < 2.0f);
        graphed.stream().synchronize();
    }
    for (int step = 0; step < 6; ++step) {
        eager.step(x, labels, valid);   // the same batch each step: only the masks change
        graphed.step(x, labels, valid);
        eager.stream().synchronize();
        graphed.stream().synchronize();
        constexpr std::size_t n = M::flat_numel;
        const auto now = to_doubles(graph_net.parameters(), n, true);
        CHECK(to_doubles(eager_net.parameters(), n, true) == now);
        CHECK(eager_net.step() == graph_net.step());
    }
    CHECK(eager.mean_loss() == graphed.mean_loss());
}

namespace {

// A random batch built on the host, every fourth row padding (whose x holds
// `pad`, label 1000), copied to the device on `stream`.
template <class T>
struct device_batch {
    Tensor<T, Shape<32, 40>, Device> x;
    Tensor<std::int32_t, Shape<32>, Device> labels, valid;

    device_batch(std::uint64_t seed, float pad, stream_ref stream)
    {
        std::mt19937_64 rng(seed);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        Tensor<T, Shape<32, 40>, Host> hx;
        Tensor<std::int32_t, Shape<32>, Host> hl, hv;
        for (std::size_t r = 0; r < 32; ++r) {
            const bool real = r % 4 != 1;
            for (std::size_t f = 0; f < 40; ++f) hx.data()[r * 40 + f] = convert<T>(real ? normal(rng) : pad);
            hl.data()[r] = real ? static_cast<std::int32_t>(rng() % 10) : 1000;
            hv.data()[r] = real ? 1 : 0;
        }
        copy(x, hx, stream);
        copy(labels, hl, stream);
        copy(valid, hv, stream);
        stream.synchronize();
    }
};

template <class M>
bool any_nonfinite(M& m)
{
    for (double v : to_doubles(m.parameters(), M::flat_numel, true))
        if (!std::isfinite(v)) return true;
    return false;
}

}  // namespace

TEST_CASE("gpu trainer: padding rows holding NaN or inf contribute exactly nothing")
{
    auto run = [&]<class P>(P) {
        using T = typename P::storage;
        model_t<P, Device> dirty_net(5), zero_net(5);
        train::trainer dirty(dirty_net, train::adamw{}, train::constant_lr{1e-2f});
        train::trainer zero(zero_net, train::adamw{}, train::constant_lr{1e-2f});
        const float poison[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                                -std::numeric_limits<float>::infinity()};
        for (int step = 0; step < 3; ++step) {
            device_batch<T> padded(40 + step, poison[step], dirty.stream()), clean(40 + step, 0.0f, zero.stream());
            dirty.step(padded.x, padded.labels, padded.valid);
            zero.step(clean.x, clean.labels, clean.valid);
            dirty.stream().synchronize();
            zero.stream().synchronize();
        }
        constexpr std::size_t n = model_t<P, Device>::flat_numel;
        CHECK(!any_nonfinite(dirty_net));
        CHECK(to_doubles(dirty_net.parameters(), n, true) == to_doubles(zero_net.parameters(), n, true));
        CHECK(dirty.mean_loss() == zero.mean_loss());
        CHECK(dirty.nonfinite_steps() == 0);
    };
    run(fp32{});
    run(bf16_mixed{});
}

TEST_CASE("gpu trainer: non-finite gradients and bad labels are counted, and skipped on request")
{
    constexpr std::size_t n = model_t<fp32, Device>::flat_numel;
    train::trainer_options options;
    options.optimizer.skip_nonfinite = true;
    model_t<fp32, Device> net(6), plain_net(6);
    train::trainer t(net, train::adamw{}, train::constant_lr{1e-2f}, options);
    train::trainer plain(plain_net, train::adamw{}, train::constant_lr{1e-2f});
    device_batch<f32> good(50, 0.0f, t.stream()), nan_row(51, 0.0f, t.stream()), bad_label(52, 0.0f, t.stream());
    const float nan = std::numeric_limits<float>::quiet_NaN();
    TENET_CUDA_CHECK(cudaMemcpy(nan_row.x.data() + 2 * 40 + 7, &nan, sizeof nan, cudaMemcpyDefault));
    const std::int32_t ten = 10;  // a valid row's label out of range: the device cannot throw
    TENET_CUDA_CHECK(cudaMemcpy(bad_label.labels.data() + 3, &ten, sizeof ten, cudaMemcpyDefault));
    device_batch<f32> bad_mask(53, 0.0f, t.stream());
    const std::int32_t two = 2;  // neither a real row nor padding
    TENET_CUDA_CHECK(cudaMemcpy(bad_mask.valid.data() + 5, &two, sizeof two, cudaMemcpyDefault));

    t.step(good.x, good.labels, good.valid);
    t.stream().synchronize();
    const auto before = to_doubles(net.parameters(), n, true);
    t.step(nan_row.x, nan_row.labels, nan_row.valid);
    t.stream().synchronize();
    CHECK(to_doubles(net.parameters(), n, true) == before);
    CHECK(t.nonfinite_steps() == 1);
    t.step(bad_label.x, bad_label.labels, bad_label.valid);
    t.stream().synchronize();
    CHECK(to_doubles(net.parameters(), n, true) == before);
    CHECK(t.nonfinite_steps() == 2);
    t.step(bad_mask.x, bad_mask.labels, bad_mask.valid);
    t.stream().synchronize();
    CHECK(to_doubles(net.parameters(), n, true) == before);
    CHECK(t.nonfinite_steps() == 3);
    CHECK(t.state().skipped == 3);
    t.step(good.x, good.labels, good.valid);
    t.stream().synchronize();
    CHECK(!any_nonfinite(net));
    CHECK(to_doubles(net.parameters(), n, true) != before);

    // Without skipping the update is applied (NaN weights), and counted.
    plain.step(nan_row.x, nan_row.labels, nan_row.valid);
    plain.stream().synchronize();
    CHECK(plain.nonfinite_steps() == 1);
    CHECK(any_nonfinite(plain_net));
}

TEST_CASE("gpu trainer: check_batches rejects a bad batch before anything changes")
{
    constexpr std::size_t n = model_t<fp32, Device>::flat_numel;
    train::trainer_options options;
    options.accumulation_steps = 2;
    options.check_batches = true;
    model_t<fp32, Device> seen_net(8), clean_net(8);
    train::trainer seen(seen_net, train::adamw{}, train::constant_lr{1e-2f}, options);
    train::trainer clean(clean_net, train::adamw{}, train::constant_lr{1e-2f}, options);
    device_batch<f32> first(60, 0.0f, seen.stream()), second(61, 0.0f, seen.stream());
    device_batch<f32> bad_label(62, 0.0f, seen.stream()), bad_mask(63, 0.0f, seen.stream());
    const std::int32_t label_ten = 10, label_minus = -1, mask_two = 2;
    TENET_CUDA_CHECK(cudaMemcpy(bad_label.labels.data() + 3, &label_ten, sizeof label_ten, cudaMemcpyDefault));
    TENET_CUDA_CHECK(cudaMemcpy(bad_mask.valid.data() + 5, &mask_two, sizeof mask_two, cudaMemcpyDefault));

    seen.step(first.x, first.labels, first.valid);  // mid-accumulation: a rejected step must not end it
    clean.step(first.x, first.labels, first.valid);
    CHECK_THROWS_AS(seen.step(bad_label.x, bad_label.labels, bad_label.valid), tenet::index_error);
    TENET_CUDA_CHECK(cudaMemcpy(bad_label.labels.data() + 3, &label_minus, sizeof label_minus, cudaMemcpyDefault));
    CHECK_THROWS_AS(seen.step(bad_label.x, bad_label.labels, bad_label.valid), tenet::index_error);
    CHECK_THROWS_AS(seen.step(bad_mask.x, bad_mask.labels, bad_mask.valid), tenet::error);
    CHECK(seen_net.step() == clean_net.step());
    seen.step(second.x, second.labels, second.valid);
    clean.step(second.x, second.labels, second.valid);
    seen.stream().synchronize();
    clean.stream().synchronize();
    CHECK(seen_net.step() == clean_net.step());
    CHECK(to_doubles(seen_net.parameters(), n, true) == to_doubles(clean_net.parameters(), n, true));
    CHECK(seen.mean_loss() == clean.mean_loss());
    CHECK(seen.nonfinite_steps() == 0);
}

namespace {

template <class Place>
using regressor_t = nn::model<nn::Sequential<nn::Linear<40, 64>, nn::Tanh, nn::Linear<64, 3>>, fp32, Shape<32, 40>, Place>;

// The same regression steps on a host and a device model (padding rows hold
// NaN targets): parameters and losses agree after every step.
template <class Loss>
void check_regression(Loss loss)
{
    regressor_t<Host> host_net(4);
    regressor_t<Device> device_net(4);
    train::trainer host(host_net, train::adamw{}, train::constant_lr{1e-2f}, {}, loss);
    train::trainer device(device_net, train::adamw{}, train::constant_lr{1e-2f}, {}, loss);
    std::mt19937_64 rng(17);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    constexpr std::size_t n = regressor_t<Host>::flat_numel;
    for (int step = 0; step < 5; ++step) {
        Tensor<f32, Shape<32, 40>, Host> x;
        Tensor<f32, Shape<32, 3>, Host> y;
        Tensor<i32, Shape<32>, Host> valid;
        for (std::size_t r = 0; r < 32; ++r) {
            valid.data()[r] = r < 28 ? 1 : 0;
            for (std::size_t f = 0; f < 40; ++f) x.data()[r * 40 + f] = normal(rng);
            for (std::size_t o = 0; o < 3; ++o)
                y.data()[r * 3 + o] = r < 28 ? 2.0f * normal(rng) : std::numeric_limits<float>::quiet_NaN();
        }
        const auto dx = testing::to_device(x);
        const auto dy = testing::to_device(y);
        const auto dvalid = testing::to_device(valid);
        host.step(x, y, valid);
        device.step(dx, dy, dvalid);
        device.stream().synchronize();
        const auto a = to_doubles(host_net.parameters(), n, false), b = to_doubles(device_net.parameters(), n, true);
        double worst = 0;
        for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(a[i] - b[i]) / (1e-3 + std::abs(a[i])));
        CHECK(worst < 1e-4);
        const double host_loss = host.mean_loss(), device_loss = device.mean_loss();
        CHECK(std::isfinite(device_loss));
        CHECK(device_loss == doctest::Approx(host_loss).epsilon(1e-4));
    }
}

}  // namespace

TEST_CASE("gpu trainer: mean squared error and a user's elementwise loss train as on the host")
{
    check_regression(train::mean_squared_error{});
    check_regression(train::elementwise_loss{user::huber{1.0f}});
}
