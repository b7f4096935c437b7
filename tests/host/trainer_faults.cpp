// The trainer on bad input: a rejected batch changes nothing, padding rows
// contribute nothing whatever they hold, non-finite gradients are counted
// (and skipped on request), and a checkpoint whose values (not bytes) are
// impossible is refused with the trainer unchanged.
#include "synthetic_task.hpp"
#include "tensor_testing.hpp"

#include <tenet/nn/nn.hpp>
#include <tenet/train/trainer.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;
namespace train = tenet::train;

namespace {

constexpr std::size_t features = 12, classes = 4, batch = 16;
using spec = nn::Sequential<nn::Linear<features, 32>, nn::ReLU, nn::Linear<32, classes>>;
template <class P>
using model_t = nn::model<spec, P, Shape<batch, features>, Host>;
using host_batch = testing::task_batch<f32, batch, features>;

const testing::task& task_data()
{
    static const testing::task t = testing::make_task(128, features, classes, 31);
    return t;
}

// The parameters' bits, for exact comparisons (NaN == NaN too).
template <class M>
std::vector<unsigned char> bits_of(const M& m)
{
    std::vector<unsigned char> out(M::flat_numel * sizeof(typename M::storage_type));
    std::memcpy(out.data(), m.parameters(), out.size());
    return out;
}

template <class M>
bool any_nonfinite(const M& m)
{
    for (std::size_t i = 0; i < M::flat_numel; ++i)
        if (!std::isfinite(convert<f64>(m.parameters()[i]))) return true;
    return false;
}

bool same(const train::step_state& a, const train::step_state& b)
{
    auto bits = [](float f) {
        std::uint32_t u;
        std::memcpy(&u, &f, sizeof u);
        return u;
    };
    return bits(a.loss_scale) == bits(b.loss_scale) && a.good_steps == b.good_steps && a.iteration == b.iteration &&
           a.applied == b.applied && a.skipped == b.skipped && bits(a.last_lr) == bits(b.last_lr) &&
           bits(a.last_grad_norm) == bits(b.last_grad_norm) && a.last_skipped == b.last_skipped &&
           a.nonfinite == b.nonfinite;
}

template <class T>
struct batch_of {
    Tensor<T, Shape<batch, features>, Host> x;
    Tensor<std::int32_t, Shape<batch>, Host> labels, valid;

    explicit batch_of(std::size_t first)
    {
        host_batch b;
        b.fill(task_data(), first);
        for (std::size_t i = 0; i < batch * features; ++i) x.data()[i] = convert<T>(b.x.data()[i]);
        std::memcpy(labels.data(), b.labels.data(), sizeof(std::int32_t) * batch);
        std::memcpy(valid.data(), b.valid.data(), sizeof(std::int32_t) * batch);
    }
};

std::string temp_path(const char* name)
{
    return (std::filesystem::temp_directory_path() / (std::string("tenet_trainer_faults_") + name)).string();
}

}  // namespace

TEST_CASE("trainer: a rejected batch changes nothing (step, loss sum, accumulation phase, parameters)")
{
    model_t<fp32> seen(7), clean(7);
    train::trainer_options options;
    options.accumulation_steps = 2;
    train::trainer a(seen, train::adamw{}, train::constant_lr{1e-2f}, options);
    train::trainer b(clean, train::adamw{}, train::constant_lr{1e-2f}, options);
    auto good = [&](std::size_t first) {
        batch_of<f32> g(first);
        a.step(g.x, g.labels, g.valid);
        b.step(g.x, g.labels, g.valid);
    };
    good(0);  // mid-accumulation: the bad step must not move the phase
    batch_of<f32> bad(16);
    bad.labels.data()[5] = static_cast<std::int32_t>(classes);  // a valid row's label out of range
    CHECK_THROWS_AS(a.step(bad.x, bad.labels, bad.valid), tenet::index_error);
    bad.labels.data()[5] = -1;
    CHECK_THROWS_AS(a.step(bad.x, bad.labels, bad.valid), tenet::index_error);
    batch_of<f32> two(16);
    two.valid.data()[3] = 2;  // neither a real row nor padding
    CHECK_THROWS_AS(a.step(two.x, two.labels, two.valid), tenet::error);
    bad.labels.data()[5] = 99;
    bad.valid.data()[5] = 0;  // the same label on a padding row is fine
    CHECK(seen.step() == clean.step());
    CHECK(bits_of(seen) == bits_of(clean));
    for (std::size_t first = 16; first < 96; first += 16) good(first);
    CHECK(seen.step() == clean.step());
    CHECK(same(a.state(), b.state()));
    CHECK(bits_of(seen) == bits_of(clean));
    CHECK(a.mean_loss() == b.mean_loss());
    CHECK_NOTHROW(a.step(bad.x, bad.labels, bad.valid));
    b.step(bad.x, bad.labels, bad.valid);

    // A bool mask works as the i32 one; a fractional float entry is refused.
    batch_of<f32> g(96);
    Tensor<bool, Shape<batch>, Host> as_bool;
    Tensor<f32, Shape<batch>, Host> half;
    for (std::size_t r = 0; r < batch; ++r) {
        as_bool.data()[r] = g.valid.data()[r] != 0;
        half.data()[r] = r == 9 ? 0.5f : 1.0f;
    }
    CHECK_THROWS_AS(a.step(g.x, g.labels, half), tenet::error);
    a.step(g.x, g.labels, as_bool);
    b.step(g.x, g.labels, g.valid);
    CHECK(bits_of(seen) == bits_of(clean));
}

TEST_CASE("trainer: padding rows holding NaN, inf or huge values contribute exactly nothing")
{
    const float poison[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), 3e38f};
    auto run = [&]<class P>(P) {
        using T = typename P::storage;
        model_t<P> dirty_net(3), zero_net(3);
        train::trainer dirty(dirty_net, train::adamw{}, train::constant_lr{1e-2f});
        train::trainer zero(zero_net, train::adamw{}, train::constant_lr{1e-2f});
        for (std::size_t step = 0; step < 4; ++step) {
            batch_of<T> clean(step * 16), padded(step * 16);
            for (std::size_t r : {1u, 6u, 10u, 15u}) {
                clean.valid.data()[r] = padded.valid.data()[r] = 0;
                padded.labels.data()[r] = 1000;  // padding rows may hold any label
                for (std::size_t f = 0; f < features; ++f) {
                    clean.x.data()[r * features + f] = convert<T>(0.0f);
                    padded.x.data()[r * features + f] = convert<T>(poison[(r + f + step) % 4]);
                }
            }
            dirty.step(padded.x, padded.labels, padded.valid);
            zero.step(clean.x, clean.labels, clean.valid);
        }
        CAPTURE(tenet::element_name<T>);
        CHECK(!any_nonfinite(dirty_net));
        CHECK(bits_of(dirty_net) == bits_of(zero_net));
        CHECK(same(dirty.state(), zero.state()));
        const double dirty_loss = dirty.mean_loss(), zero_loss = zero.mean_loss();
        CHECK(std::isfinite(dirty_loss));
        CHECK(dirty_loss == zero_loss);
        CHECK(dirty.nonfinite_steps() == 0);
    };
    run(fp32{});
    run(bf16_mixed{});
    run(fp16_mixed{});
}

TEST_CASE("trainer: non-finite gradients are counted under fp32, and skipped on request")
{
    batch_of<f32> nan_batch(32);
    nan_batch.x.data()[2 * features + 3] = std::numeric_limits<float>::quiet_NaN();  // a valid row

    SUBCASE("without skipping: the update is applied (NaN weights) and counted")
    {
        model_t<fp32> net(5);
        train::trainer t(net, train::adamw{}, train::constant_lr{1e-2f});
        batch_of<f32> g(0);
        t.step(g.x, g.labels, g.valid);
        CHECK(t.nonfinite_steps() == 0);
        t.step(nan_batch.x, nan_batch.labels, nan_batch.valid);
        CHECK(t.nonfinite_steps() == 1);
        const auto s = t.state();
        CHECK(s.applied == 2);
        CHECK(s.skipped == 0);
        CHECK(any_nonfinite(net));
    }
    SUBCASE("skip_nonfinite: the step leaves the parameters alone and training goes on")
    {
        model_t<fp32> net(5), reference_net(5);
        train::trainer_options options;
        options.optimizer.skip_nonfinite = true;
        train::trainer t(net, train::adamw{}, train::constant_lr{1e-2f}, options);
        train::trainer reference(reference_net, train::adamw{}, train::constant_lr{1e-2f}, options);
        for (std::size_t first : {0u, 16u}) {
            batch_of<f32> g(first);
            t.step(g.x, g.labels, g.valid);
            reference.step(g.x, g.labels, g.valid);
        }
        const auto before = bits_of(net);
        t.step(nan_batch.x, nan_batch.labels, nan_batch.valid);
        CHECK(bits_of(net) == before);
        CHECK(t.nonfinite_steps() == 1);
        CHECK(t.state().skipped == 1);
        CHECK(t.state().last_skipped == 1);
        for (std::size_t first : {48u, 64u}) {
            batch_of<f32> g(first);
            t.step(g.x, g.labels, g.valid);
            reference.step(g.x, g.labels, g.valid);
        }
        CHECK(!any_nonfinite(net));
        CHECK(bits_of(net) == bits_of(reference_net));  // constant lr: the skipped step left no trace
        CHECK(t.state().applied == 4);
    }
    SUBCASE("clipping detects and skips as before, and counts")
    {
        model_t<bf16_mixed> net(5);
        train::trainer_options options;
        options.optimizer.clip_norm = 1.0f;
        train::trainer t(net, train::adamw{}, train::constant_lr{1e-2f}, options);
        const auto before = bits_of(net);
        batch_of<bf16> nan16(32);
        nan16.x.data()[2 * features + 3] = convert<bf16>(std::numeric_limits<float>::quiet_NaN());
        t.step(nan16.x, nan16.labels, nan16.valid);
        CHECK(bits_of(net) == before);
        CHECK(t.nonfinite_steps() == 1);
        CHECK(t.state().skipped == 1);
    }
}

TEST_CASE("trainer: load refuses checksum-valid nonsense and applies masks")
{
    model_t<fp16_mixed> net(9);
    train::trainer t(net, train::adamw{}, train::constant_lr{1e-3f});
    for (std::size_t first = 0; first < 64; first += 16) {
        batch_of<f16> g(first);
        t.step(g.x, g.labels, g.valid);
    }
    const std::string path = temp_path("good.ckpt"), bad_path = temp_path("bad.ckpt");
    t.save(path);
    const io::checkpoint_contents good = io::read_checkpoint_file(path, t.signature());
    const auto parameters = bits_of(net);
    const auto state = t.state();
    const auto step = net.step();
    {
        batch_of<f16> g(64);  // move on, so that a wrong load would show
        t.step(g.x, g.labels, g.valid);
    }
    const auto moved = bits_of(net);
    const auto moved_state = t.state();

    auto with_state = [&](auto change) {
        io::checkpoint_contents c = good;
        for (auto& section : c.sections)
            if (section.name == "step_state") {
                train::step_state s;
                std::memcpy(&s, section.bytes.data(), sizeof s);
                change(s);
                std::memcpy(section.bytes.data(), &s, sizeof s);
            }
        return c;
    };
    auto with_value = [&](const char* name, std::size_t element, float value) {
        io::checkpoint_contents c = good;
        for (auto& section : c.sections)
            if (section.name == name) std::memcpy(section.bytes.data() + element * sizeof(float), &value, sizeof value);
        return c;
    };
    constexpr float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    const std::vector<io::checkpoint_contents> bad = {
        with_state([](train::step_state& s) { s.loss_scale = nan; }),
        with_state([](train::step_state& s) { s.loss_scale = inf; }),
        with_state([](train::step_state& s) { s.loss_scale = 0.0f; }),
        with_state([](train::step_state& s) { s.loss_scale = -2.0f; }),
        with_state([](train::step_state& s) { s.applied = ~std::uint64_t{0}; }),
        with_state([](train::step_state& s) { s.applied = s.iteration = ~std::uint64_t{0}; }),
        with_state([](train::step_state& s) { s.skipped = s.iteration + 1; }),
        with_state([](train::step_state& s) { s.good_steps = 1u << 30; }),
        with_state([](train::step_state& s) { s.last_lr = nan; }),
        with_state([](train::step_state& s) { s.last_lr = -inf; }),
        with_state([](train::step_state& s) { s.last_grad_norm = inf; }),
        with_value("master", 17, nan),
        with_value("state0", 3, inf),
        with_value("state1", 40, -inf),
    };
    for (std::size_t i = 0; i < bad.size(); ++i) {
        CAPTURE(i);
        io::write_checkpoint_file(bad_path, bad[i]);  // a correct checksum
        CHECK_THROWS_AS(t.load(bad_path), tenet::format_error);
        CHECK(bits_of(net) == moved);
        CHECK(same(t.state(), moved_state));
    }
    // Finite values at the edge of the float range are accepted (the bounds are inclusive).
    constexpr float largest = std::numeric_limits<float>::max();
    const auto edge = with_state([](train::step_state& s) {
        s.loss_scale = s.last_lr = s.last_grad_norm = largest;
    });
    io::write_checkpoint_file(bad_path, edge);
    t.load(bad_path);
    CHECK(t.state().last_lr == largest);
    CHECK(t.state().last_grad_norm == largest);
    CHECK(t.state().loss_scale == largest);
    io::write_checkpoint_file(bad_path, with_state([](train::step_state& s) { s.last_lr = -largest; }));
    t.load(bad_path);
    CHECK(t.state().last_lr == -largest);
    t.load(path);
    CHECK(bits_of(net) == parameters);
    CHECK(same(t.state(), state));
    CHECK(net.step() == step);

    // A masked checkpoint whose file holds a pruned weight as nonzero.
    model_t<fp32> pruned_net(4);
    train::trainer_options options;
    options.optimizer.masked = true;
    train::trainer p(pruned_net, train::adamw{}, train::constant_lr{1e-3f}, options);
    const std::size_t at = p.optimizer().masks().prunable()[0].offset + 5;
    std::vector<char> keep(model_t<fp32>::flat_numel, 1);
    keep[at] = 0;
    p.optimizer().masks().from_host(keep);
    p.optimizer().apply_masks();
    batch_of<f32> g(0);
    p.step(g.x, g.labels, g.valid);
    REQUIRE(pruned_net.parameters()[at] == 0.0f);
    p.save(path);
    io::checkpoint_contents c = io::read_checkpoint_file(path, p.signature());
    for (auto& section : c.sections)
        if (section.name == "parameters" || section.name == "state0") {
            const float value = 0.75f;
            std::memcpy(section.bytes.data() + at * sizeof(float), &value, sizeof value);
        }
    io::write_checkpoint_file(bad_path, c);
    p.load(bad_path);
    CHECK(pruned_net.parameters()[at] == 0.0f);
    CHECK(p.optimizer().slot(0)[at] == 0.0f);
    std::remove(path.c_str());
    std::remove(bad_path.c_str());
}
