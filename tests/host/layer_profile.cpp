// profile::layer_profile on the host trainer: every top-level layer's
// forward and backward, the loss, the optimizer, the collectives and the
// data wait are rows with one call per measured step; their FLOPs are the
// hand counts (the first layer computes no input gradient; a frozen prefix
// no backward); the rows and the unattributed rest add up to the steps;
// profiling changes no result; the table, JSON and trace read back.
#include "scratch_dir.hpp"
#include "synthetic_task.hpp"
#include "trace_reader.hpp"

#include <doctest/doctest.h>
#include <tenet/dist/local_communicator.hpp>
#include <tenet/io/json_reader.hpp>
#include <tenet/nn/nn.hpp>
#include <tenet/profile/layer_profile.hpp>
#include <tenet/train/trainer.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

using namespace tenet;

namespace {

constexpr std::size_t batch = 32, features = 24, hidden = 48, classes = 6;
// Linear then ReLU group into one fused unit "0 Linear" (the ReLU in its epilogue); then a
// Linear, Tanh and a Linear.
using spec = nn::Sequential<nn::Linear<features, hidden>, nn::ReLU, nn::Linear<hidden, hidden>, nn::Tanh,
                            nn::Linear<hidden, classes>>;
using model_t = nn::model<spec, fp32, Shape<batch, features>, Host>;
using testing::task;

std::map<std::string, profile::profile_row> by_name(const profile::layer_profile& p)
{
    std::map<std::string, profile::profile_row> rows;
    for (const auto& r : p.rows()) rows[r.name + (r.pass.empty() ? "" : " " + r.pass)] = r;
    return rows;
}

// A user's layer as the protocol allows it: no input_shape, output_shape,
// kind or cost; y = 2x.
struct Doubled {
    template <class S>
    using output_shape = S;
    template <precision_policy P, class S, class Place>
    struct layer : nn::parameterless_layer {
        using nn::parameterless_layer::parameterless_layer;
        template <class X, class Y>
        void forward(const X& x, const Y& y, const nn::step_info&)
        {
            assign(nn::contiguous_as<S>(y), nn::contiguous_as<S>(x) * 2.0f);
        }
        template <class DY, class DX, class Prev>
        void backward(const DY& dy, const DX& dx, const nn::step_info&, Prev&)
        {
            if constexpr (!nn::is_no_input_gradient<DX>) assign(nn::contiguous_as<S>(dx), nn::contiguous_as<S>(dy) * 2.0f);
        }
    };
};

// `steps` SGD steps of a fresh model of Spec on one batch, observed by p.
template <class Spec>
void observe_steps(profile::layer_profile& p, int steps, train::trainer_options options = {})
{
    nn::model<Spec, fp32, Shape<batch, features>, Host> net(3);
    train::trainer t(net, train::sgd{}, train::constant_lr{1e-2f}, options);
    testing::task_batch<f32, batch, features> b;
    b.fill(testing::make_task(batch, features, classes, 9), 0);
    t.observe(&p);
    for (int s = 0; s < steps; ++s) t.step(b.x, b.labels, b.valid);
    t.observe(nullptr);
}

// A row's start in the table: "\n", the name in 28 columns, the pass.
std::string row_text(const profile::profile_row& r)
{
    std::string name = r.name;
    name.resize(std::max<std::size_t>(28, name.size()), ' ');
    return "\n" + name + " " + r.pass;
}

constexpr std::uint64_t gemm(std::uint64_t m, std::uint64_t k, std::uint64_t n) { return 2 * m * k * n; }

}  // namespace

TEST_CASE("layer_profile: one row per layer and pass, hand-counted FLOPs, parts adding up to the step")
{
    const task data = testing::make_task(batch * 8, features, classes, 5);
    testing::task_batch<f32, batch, features> b;
    model_t observed_model(7), plain_model(7);
    train::trainer observed(observed_model, train::adamw{}, train::constant_lr{1e-2f});
    train::trainer plain(plain_model, train::adamw{}, train::constant_lr{1e-2f});

    testing::scratch_dir dir("layer_profile");
    profile::trace_writer trace(dir.file("steps.trace.json"));
    profile::layer_profile p({.warmup_steps = 2, .peak = {1e11, 1e10, "a made-up machine"}, .trace = &trace});
    observed.observe(&p);
    constexpr std::size_t steps = 6;
    for (std::size_t s = 0; s < steps; ++s) {
        {
            const auto wait = p.data_wait();
            b.fill(data, s * batch);
        }
        observed.step(b.x, b.labels, b.valid);
        plain.step(b.x, b.labels, b.valid);
    }
    observed.observe(nullptr);
    observed.step(b.x, b.labels, b.valid);  // not seen
    plain.step(b.x, b.labels, b.valid);

    // Observing changes nothing.
    CHECK(std::memcmp(observed_model.parameters(), plain_model.parameters(), model_t::flat_numel * sizeof(f32)) == 0);

    CHECK(p.steps() == steps - 2);
    CHECK_FALSE(p.device_timed());
    CHECK(p.captured_steps() == 0);
    const auto rows = by_name(p);
    const std::vector<std::string> expected = {"0 Linear forward", "0 Linear backward", "2 Linear forward",
                                               "2 Linear backward", "3 tanh forward",
                                               "3 tanh backward", "4 Linear forward", "4 Linear backward",
                                               "loss forward", "loss backward", "optimizer", "data"};
    CHECK(rows.size() == expected.size());
    double parts = 0;
    for (const std::string& name : expected) {
        INFO(name);
        REQUIRE(rows.count(name) == 1);
        const auto& r = rows.at(name);
        CHECK(r.calls == p.steps());
        CHECK(r.seconds > 0);
        if (r.kind != profile::section_kind::data) parts += r.seconds;
    }
    // The parts and the rest are the steps (both from the same clock).
    CHECK(parts + p.unattributed_seconds() == doctest::Approx(p.step_seconds()).epsilon(1e-9));
    CHECK(p.total_seconds() == doctest::Approx(p.step_seconds() + rows.at("data").seconds));
    MESSAGE("host: unattributed " << 100 * p.unattributed_seconds() / p.step_seconds() << "% of the step");

    // FLOPs per call by hand: the first unit computes no input gradient (the
    // model's first layer): its backward is dW alone; the others' dW and dX.
    const std::uint64_t n = p.steps();
    CHECK(rows.at("0 Linear forward").flops == n * gemm(batch, features, hidden));
    CHECK(rows.at("0 Linear backward").flops == n * gemm(batch, features, hidden));
    CHECK(rows.at("2 Linear forward").flops == n * gemm(batch, hidden, hidden));
    CHECK(rows.at("2 Linear backward").flops == n * 2 * gemm(batch, hidden, hidden));
    CHECK(rows.at("4 Linear forward").flops == n * gemm(batch, hidden, classes));
    CHECK(rows.at("4 Linear backward").flops == n * 2 * gemm(batch, hidden, classes));
    CHECK(rows.at("3 tanh forward").flops == 0);
    CHECK(rows.at("3 tanh forward").bytes == n * 2 * batch * hidden * sizeof(f32));
    CHECK(rows.at("4 Linear forward").shape == "Shape<32,48> -> Shape<32,6>");
    CHECK(rows.at("loss backward").bytes == n * 2 * batch * classes * sizeof(f32));

    // The roofline: 1e11 FLOP/s over 1e10 B/s puts the ridge at 10 FLOP/byte.
    const auto& linear = rows.at("0 Linear forward");
    const double intensity = static_cast<double>(linear.flops) / linear.bytes;
    CHECK(std::string(linear.bound(p.peak())) == (intensity > 10 ? "compute" : "memory"));
    CHECK(linear.fraction_of_peak(p.peak()) ==
          doctest::Approx(intensity > 10 ? linear.flops / linear.seconds / 1e11 : linear.bytes / linear.seconds / 1e10));
    // AdamW on fp32: two moments read and written, the gradient read, the weight read and written.
    CHECK(rows.at("optimizer").bytes == n * model_t::trainable_numel * sizeof(f32) * (2 * 2 + 1 + 2));
    CHECK(rows.at("optimizer").flops == 0);
    CHECK(std::string(rows.at("optimizer").bound(p.peak())) == "memory");
    CHECK(std::string(rows.at("data").bound(p.peak())).empty());  // no work counted

    // The table: a heading, the rows longest first, the rest.
    const std::string table = p.table();
    MESSAGE(table);
    CHECK(table.find("4 steps after 2 warm-up, host wall clock") != std::string::npos);
    CHECK(table.find("a made-up machine") != std::string::npos);
    CHECK(table.find("unattributed") != std::string::npos);
    const auto sorted = p.rows();
    for (std::size_t i = 1; i < sorted.size(); ++i) CHECK(sorted[i - 1].seconds >= sorted[i].seconds);
    CHECK(table.find(row_text(sorted[0])) < table.find(row_text(sorted.back())));

    // At most N rows, the rest in one line.
    const std::string top = p.table(3);
    CHECK(top.find(row_text(sorted[2])) != std::string::npos);
    CHECK(top.find(row_text(sorted[3])) == std::string::npos);
    CHECK(top.find("(" + std::to_string(sorted.size() - 3) + " more rows)") != std::string::npos);

    // The JSON, read with the strict reader.
    const std::string json = p.json();
    io::detail::json_reader r("profile.json", json, "profile: ");
    r.start();
    std::size_t sections = 0;
    double step_ms = 0;
    r.object([&](const std::string& key) {
        if (key == "steps") CHECK(r.unsigned_integer() == n);
        else if (key == "step_ms") step_ms = r.number();
        else if (key == "sections") r.array([&] {
            ++sections;
            r.object([&](const std::string&) { r.skip_value(); });
        });
        else r.skip_value();
    });
    r.end('\n');
    CHECK(sections == expected.size());
    CHECK(step_ms == doctest::Approx(p.step_seconds() * 1e3).epsilon(1e-6));

    // The trace: every step's sections, warm-up included, nested in their step.
    const auto events = testing::read_trace(trace.path());
    std::size_t step_slices = 0, linear_forwards = 0;
    for (const auto& e : events) {
        step_slices += e.ph == "X" && e.name == "step";
        linear_forwards += e.ph == "X" && e.name == "4 Linear forward";
    }
    CHECK(step_slices == steps);
    CHECK(linear_forwards == steps);
    const auto& forward = testing::named(events, "4 Linear forward");
    CHECK(forward.cat == "layer");
    CHECK(forward.args.at("shape") == "Shape<32,48> -> Shape<32,6>");
    CHECK(forward.args.at("flops") == std::to_string(gemm(batch, hidden, classes)));
    CHECK(forward.args.at("warm-up") == "yes");  // the first is a warm-up step's
    const auto& step = testing::named(events, "step");
    CHECK(forward.ts >= step.ts);
    CHECK(forward.ts + forward.dur <= step.ts + step.dur + 1);  // (whole microseconds)
}

TEST_CASE("layer_profile: a frozen prefix has no backward row, collectives are rows, misuse is an error")
{
    using frozen_spec = nn::Sequential<nn::Frozen<nn::Linear<features, hidden>>, nn::ReLU, nn::Linear<hidden, classes>>;
    dist::local_communicator comm;
    profile::layer_profile p({.warmup_steps = 0});
    observe_steps<frozen_spec>(p, 3, {.communicator = &comm});
    const auto rows = by_name(p);
    CHECK(rows.count("0 Frozen forward") == 1);
    CHECK(rows.count("0 Frozen backward") == 0);  // never runs
    CHECK(rows.count("1 relu backward") == 0);  // nothing before it trains: not run either
    REQUIRE(rows.count("2 Linear backward") == 1);
    CHECK(rows.at("2 Linear backward").flops == 3 * gemm(batch, hidden, classes));  // dW alone
    CHECK(rows.at("gradient all-reduce").calls == 3);
    CHECK(rows.at("loss all-reduce").calls == 3);
    CHECK(rows.at("gradient all-reduce").kind == profile::section_kind::collective);
    MESSAGE(p.table());

    // Read while a section is open, or a section that never began: errors.
    profile::layer_profile q;
    {
        const auto wait = q.data_wait();
        CHECK_THROWS_AS(q.table(), tenet::error);
    }
    q.end(profile::section{.name = "stray"});
    CHECK_THROWS_WITH_AS(q.rows(), doctest::Contains("never began: stray"), tenet::error);
}

TEST_CASE("measure_peak: a GEMM and a copy probed once per run")
{
    const profile::machine_peak& peak = linalg::measure_peak<Host>();
    MESSAGE("host peak: " << peak.flops_per_second * 1e-9 << " GFLOP/s, " << peak.bytes_per_second * 1e-9 << " GB/s ("
                          << peak.source << ")");
    CHECK(peak.flops_per_second > 1e8);  // (a 2-core machine reaches tens of GFLOP/s: far above these floors)
    CHECK(peak.bytes_per_second > 1e8);
    CHECK(peak.source.find("1024^3 f32 GEMM") != std::string::npos);
    CHECK(&linalg::measure_peak<Host>() == &peak);  // cached: the same figures
}

TEST_CASE("step_profiler: watches the first warm-up + N steps of a loop, then lets go")
{
    const task data = testing::make_task(batch * 4, features, classes, 2);
    testing::task_batch<f32, batch, features> b;
    model_t net(1);
    train::trainer t(net, train::sgd{}, train::constant_lr{1e-2f});
    testing::scratch_dir dir("step_profiler");
    std::size_t done_at = 0;
    {
        train::step_profiler watch(t, {.warmup_steps = 1, .steps = 3, .trace_path = dir.file("loop.trace.json")});
        CHECK(watch.observer() == &watch.profile());
        for (std::size_t s = 1; s <= 8; ++s) {
            {
                const auto wait = watch.data_wait();
                b.fill(data, (s % 4) * batch);
            }
            t.step(b.x, b.labels, b.valid);
            if (watch.step_done()) done_at = s;
        }
        CHECK_FALSE(watch.watching());
        CHECK(watch.observer() == nullptr);
        CHECK(watch.profile().steps() == 3);
        CHECK(by_name(watch.profile()).at("data").calls == 3);  // the waits before the counted steps
        CHECK(by_name(watch.profile()).at("0 Linear forward").calls == 3);
        std::size_t step_slices = 0;
        for (const auto& e : testing::read_trace(watch.trace()->path())) step_slices += e.ph == "X" && e.name == "step";
        CHECK(step_slices == 4);  // the warm-up's too
    }
    CHECK(done_at == 4);
    CHECK_FALSE(t.capturing());  // (as it was: host trainers never capture)

    // A loop that ends early: finish() stops watching, with the steps counted so far.
    train::step_profiler short_loop(t, {.warmup_steps = 1, .steps = 10});
    for (int s = 0; s < 3; ++s) {
        t.step(b.x, b.labels, b.valid);
        CHECK_FALSE(short_loop.step_done());
    }
    CHECK(short_loop.finish());
    CHECK_FALSE(short_loop.watching());
    CHECK(short_loop.profile().steps() == 2);
    CHECK_FALSE(short_loop.finish());  // (once)
    t.step(b.x, b.labels, b.valid);
    CHECK(short_loop.profile().steps() == 2);  // no longer observed
    train::step_profiler warmup_only(t, {.warmup_steps = 5, .steps = 10});
    t.step(b.x, b.labels, b.valid);
    CHECK_FALSE(warmup_only.finish());  // nothing counted
}

TEST_CASE("layer_profile: a failure while timing is kept for the readers, and nothing more is observed")
{
    profile::layer_profile p({.warmup_steps = 0});
    p.end(profile::section{.name = "stray"});  // a failure: kept, not thrown into the step
    p.begin(profile::data_section());          // ignored from now on: no open section to complain of
    CHECK_THROWS_WITH_AS(p.table(), doctest::Contains("timing failed"), tenet::error);
    CHECK_THROWS_WITH_AS(p.json(), doctest::Contains("never began: stray"), tenet::error);
    p.end(profile::data_section());
    CHECK(p.steps() == 0);
    CHECK(p.data_seconds() == 0);
}

TEST_CASE("layer_profile: Sequentials and Residuals are opened by path, a Checkpointed segment is timed whole")
{
    using nested = nn::Sequential<nn::Linear<features, hidden>, nn::Residual<nn::Linear<hidden, hidden>, nn::Tanh>,
                                  nn::Checkpointed<nn::Linear<hidden, hidden>, nn::Tanh>, nn::Linear<hidden, classes>>;
    profile::layer_profile p({.warmup_steps = 1});
    observe_steps<nested>(p, 3);
    const auto rows = by_name(p);
    for (const char* name : {"0 Linear", "1.0 Linear", "1.1 tanh", "1 residual add", "2 Checkpointed", "3 Linear"}) {
        INFO(name);
        CHECK(rows.at(std::string(name) + " forward").calls == 2);
        CHECK(rows.at(std::string(name) + " backward").calls == 2);
    }
    CHECK(rows.count("1 Residual forward") == 0);  // opened: its parts instead
    CHECK(rows.count("2.0 Linear forward") == 0);  // timed whole
    CHECK(rows.at("1 residual add forward").bytes == 2 * 3 * batch * hidden * sizeof(f32));
    // The segment's backward runs its forward again.
    CHECK(rows.at("2 Checkpointed backward").flops == 2 * (gemm(batch, hidden, hidden) + 2 * gemm(batch, hidden, hidden)));
    double parts = 0;
    for (const auto& [name, r] : rows) parts += r.seconds;
    CHECK(parts + p.unattributed_seconds() == doctest::Approx(p.step_seconds()).epsilon(1e-9));
}

TEST_CASE("layer_profile: a loader's batch fills are sections inside the loop's data wait, traced on its thread")
{
    using set = data::array_dataset<f32, i32, Shape<features>>;
    std::vector<f32> x(batch * 3 * features);
    std::vector<i32> y(batch * 3);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<f32>((i * 7919) % 23) * 0.1f - 1.0f;
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<i32>((i * 31) % classes);
    const set samples(std::move(x), std::move(y));
    data::array_loader<f32, batch, set, Host> loader(samples);
    model_t net(2);
    train::trainer t(net, train::sgd{}, train::constant_lr{1e-2f});
    testing::scratch_dir dir("loader_profile");
    profile::trace_writer trace(dir.file("loader.trace.json"));
    profile::layer_profile p({.warmup_steps = 0, .trace = &trace});
    t.observe(&p);
    loader.observe(&p);
    loader.start_epoch(1, 0);
    decltype(loader)::batch b;
    for (;;) {
        {
            const auto wait = p.data_wait();
            if (!loader.next(b)) break;
        }
        t.step(b.x(), b.targets(), b.valid());
    }
    loader.observe(nullptr);
    t.observe(nullptr);
    const auto rows = by_name(p);
    CHECK(p.steps() == 3);
    CHECK(rows.at("batch fill").calls == 3);
    CHECK(rows.at("batch fill").kind == profile::section_kind::data);
    CHECK(rows.at("batch fill").seconds <= rows.at("data").seconds);  // a part of the wait
    CHECK(rows.at("data").calls == 4);  // the last finds the epoch's end
    CHECK(p.data_seconds() == doctest::Approx(rows.at("data").seconds));  // the waits alone, not their parts again
    const auto events = testing::read_trace(trace.path());
    const auto& fill = testing::named(events, "batch fill");
    const auto& wait = testing::named(events, "data");
    CHECK(fill.tid == wait.tid);
    CHECK(fill.ts >= wait.ts);
}

TEST_CASE("layer_profile: a model observed by hand, outside any trainer step: rows, and no step or data time")
{
    model_t net(6);
    Tensor<f32, Shape<batch, features>, Host> x;
    for (std::size_t i = 0; i < x.numel; ++i) x.data()[i] = static_cast<f32>((i * 37) % 11) * 0.2f - 1.0f;
    profile::layer_profile p({.warmup_steps = 0});
    net.observe(&p);
    CHECK(net.observer() == &p);
    net.forward(x);
    net.observe(nullptr);
    net.forward(x);  // not seen
    const auto rows = by_name(p);
    CHECK(rows.at("0 Linear forward").calls == 1);
    CHECK(rows.at("4 Linear forward").calls == 1);
    CHECK(rows.count("0 Linear backward") == 0);
    CHECK(p.steps() == 0);
    CHECK(p.data_seconds() == 0);
    CHECK(p.step_seconds() == 0);
}

TEST_CASE("layer_profile: a user's layer without shapes, kind or cost is an elementwise layer of its container's shapes")
{
    using spec = nn::Sequential<nn::Linear<features, hidden>, Doubled, nn::Frozen<Doubled>, nn::Linear<hidden, classes>>;
    profile::layer_profile p({.warmup_steps = 0});
    observe_steps<spec>(p, 2);
    const auto rows = by_name(p);
    constexpr std::uint64_t n = batch * hidden * sizeof(f32);
    CHECK(rows.at("1 layer forward").bytes == 2 * 2 * n);  // x read, y written; two steps
    CHECK(rows.at("1 layer backward").bytes == 2 * 3 * n);
    CHECK(rows.at("2 Frozen forward").bytes == 2 * 2 * n);
    CHECK(rows.at("1 layer forward").shape == "Shape<32,48> -> Shape<32,48>");
}
