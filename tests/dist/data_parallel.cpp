// Data-parallel training on the host, run as every rank of an mpirun job:
// N ranks, each stepping on its share of a global batch, against one
// process training that global batch (the same model, started from rank 0's
// weights); every rank bitwise equal to the others; metrics over the global
// batch; an fp16 overflow on one rank skipped by all; checkpoints written by
// rank 0 that resume at this world size and at world size 1; the sharded
// loader covering every sample once per epoch.
#include "synthetic_task.hpp"
#include "world.hpp"

#include <tenet/data/batches.hpp>
#include <tenet/nn/nn.hpp>
#include <tenet/train/trainer.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;
namespace train = tenet::train;

namespace {

constexpr std::size_t features = 12, classes = 4, per_rank = 8;
using spec = nn::Sequential<nn::Linear<features, 32>, nn::ReLU, nn::Linear<32, classes>>;
template <class P, std::size_t Batch>
using model_t = nn::model<spec, P, Shape<Batch, features>, Host>;
template <std::size_t Batch>
using batch_t = testing::task_batch<f32, Batch, features>;

dist::mpi_communicator& world() { return dist_testing::world(); }

template <class M>
std::vector<double> parameters_of(const M& m)
{
    std::vector<double> w(M::flat_numel);
    for (std::size_t i = 0; i < M::flat_numel; ++i) w[i] = convert<f64>(m.parameters()[i]);
    return w;
}

double max_difference(const std::vector<double>& a, const std::vector<double>& b)
{
    double worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
    return worst;
}

// Whether every rank holds exactly rank 0's parameter bits.
template <class M>
bool same_on_every_rank(const M& m)
{
    constexpr std::size_t bytes = M::flat_numel * sizeof(typename M::storage_type);
    std::vector<std::byte> all(bytes * static_cast<std::size_t>(world().size()));
    world().all_gather(m.parameters(), all.data(), bytes, {});
    for (int r = 1; r < world().size(); ++r)
        if (std::memcmp(all.data(), all.data() + bytes * static_cast<std::size_t>(r), bytes) != 0) return false;
    return true;
}

// A global batch of World * per_rank rows, step s: rows [s * global, (s + 1) * global)
// of the task; this rank's share is its per_rank rows of it, in rank order
// (what data::shard gives). Rows past the task's end are padding.
template <std::size_t World>
struct global_batches {
    static constexpr std::size_t global = World * per_rank;
    const testing::task& task;
    batch_t<per_rank> mine;
    batch_t<global> whole;

    std::size_t count() const { return (task.y.size() + global - 1) / global; }
    void fill(std::size_t step)
    {
        mine.fill(task, step * global + static_cast<std::size_t>(world().rank()) * per_rank);
        whole.fill(task, step * global);
    }
};

// Steps [from, to) of a trainer: this rank's share of each global batch, or
// the whole global batch for a trainer of the global batch's size.
template <std::size_t World, class Trainer>
void run_steps(global_batches<World>& batches, Trainer& t, std::size_t from, std::size_t to)
{
    for (std::size_t s = from; s < to; ++s) {
        batches.fill(s);
        if constexpr (Trainer::model_type::input_shape::extents[0] == per_rank)
            t.step(batches.mine.x, batches.mine.labels, batches.mine.valid);
        else
            t.step(batches.whole.x, batches.whole.labels, batches.whole.valid);
    }
}

// The task's size: full global batches, then one whose first rank is full,
// whose second has 3 real rows and whose others have none.
template <std::size_t World>
constexpr std::size_t uneven_task_size = 3 * World * per_rank + per_rank + (World > 1 ? 3 : 0);

template <std::size_t World, class P>
void check_against_one_process(std::size_t accumulation)
{
    const testing::task task = testing::make_task(uneven_task_size<World>, features, classes, 5);
    global_batches<World> batches{task, {}, {}};
    const train::trainer_options one{.accumulation_steps = accumulation, .optimizer{.clip_norm = 0.5f}};
    train::trainer_options parallel = one;
    parallel.communicator = &world();
    parallel.bucket_bytes = 256;  // several buckets for this small model

    // rank 0's seed for the reference; every rank another for its own model,
    // which the trainer replaces with rank 0's
    model_t<P, per_rank> mine(100 + 7 * static_cast<std::uint64_t>(world().rank()));
    model_t<P, global_batches<World>::global> reference(100);
    train::trainer dp(mine, train::adamw{}, train::constant_lr{1e-2f}, parallel);
    train::trainer ref(reference, train::adamw{}, train::constant_lr{1e-2f}, one);
    CHECK(dp.world_size() == world().size());
    CHECK(same_on_every_rank(mine));
    CHECK(parameters_of(mine) == parameters_of(reference));

    for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
        for (std::size_t s = 0; s < batches.count(); ++s) {
            batches.fill(s);
            dp.step(batches.mine.x, batches.mine.labels, batches.mine.valid);
            ref.step(batches.whole.x, batches.whole.labels, batches.whole.valid);
        }
        const double dp_loss = dp.end_epoch().mean_loss, ref_loss = ref.end_epoch().mean_loss;
        CAPTURE(epoch);
        CHECK(dp_loss == doctest::Approx(ref_loss).epsilon(1e-5));
    }
    // Summation order differs (a GEMM over the global batch against per-rank
    // GEMMs summed across ranks), so not bitwise: within float rounding,
    // grown by Adam over the steps.
    const double difference = max_difference(parameters_of(mine), parameters_of(reference));
    if (world().rank() == 0) MESSAGE("largest parameter difference from one process: " << difference);
    CHECK(difference < 1e-6);
    CHECK(dp.state().applied == ref.state().applied);
    CHECK(same_on_every_rank(mine));
}

// The same run twice: bit for bit the same (the reduction order is fixed).
template <std::size_t World>
std::vector<double> short_run()
{
    const testing::task task = testing::make_task(uneven_task_size<World>, features, classes, 6);
    global_batches<World> batches{task, {}, {}};
    model_t<fp32, per_rank> mine(3 + static_cast<std::uint64_t>(world().rank()));
    train::trainer dp(mine, train::adamw{}, train::constant_lr{1e-2f}, {.communicator = &world()});
    for (std::size_t s = 0; s < batches.count(); ++s) {
        batches.fill(s);
        dp.step(batches.mine.x, batches.mine.labels, batches.mine.valid);
    }
    return parameters_of(mine);
}

template <std::size_t World>
void check_world()
{
    SUBCASE("f32, one micro-batch per update") { check_against_one_process<World, fp32>(1); }
    SUBCASE("f32, two micro-batches per update") { check_against_one_process<World, fp32>(2); }
    SUBCASE("bf16 storage, f32 master weights") { check_against_one_process<World, bf16_mixed>(1); }
    SUBCASE("reproducible bit for bit") { CHECK(short_run<World>() == short_run<World>()); }
}

template <class F>
void for_world(F&& f)
{
    switch (world().size()) {
    case 1: f(std::integral_constant<std::size_t, 1>{}); break;
    case 2: f(std::integral_constant<std::size_t, 2>{}); break;
    case 3: f(std::integral_constant<std::size_t, 3>{}); break;
    case 4: f(std::integral_constant<std::size_t, 4>{}); break;
    default: MESSAGE("these tests are written for 1 to 4 ranks"); break;
    }
}

// A path every rank agrees on (rank 0's choice).
std::string shared_path(const char* name)
{
    float token = static_cast<float>(std::random_device{}() % 1000000);
    world().broadcast(&token, sizeof token, 0, {});
    return (std::filesystem::temp_directory_path() / (std::string("tenet_dist_") + std::to_string(int(token)) + name))
        .string();
}

}  // namespace

TEST_CASE("data parallel: N ranks train as one process trains the global batch")
{
    for_world([](auto w) { check_world<decltype(w)::value>(); });
}

TEST_CASE("data parallel: metrics are the global batch's")
{
    for_world([](auto w) {
        constexpr std::size_t World = decltype(w)::value;
        const testing::task task = testing::make_task(uneven_task_size<World>, features, classes, 8);
        global_batches<World> batches{task, {}, {}};
        model_t<fp32, per_rank> mine(4);
        train::trainer dp(mine, train::adamw{}, train::constant_lr{1e-2f}, {.communicator = &world()});
        for (std::size_t s = 0; s < batches.count(); ++s) {
            batches.fill(s);
            dp.step(batches.mine.x, batches.mine.labels, batches.mine.valid);
        }
        dp.reset_metrics();
        model_t<fp32, global_batches<World>::global> whole(0);
        nn::copy_parameters(whole, mine);
        train::trainer one(whole, train::adamw{});
        for (std::size_t s = 0; s < batches.count(); ++s) {
            batches.fill(s);
            dp.evaluate(batches.mine.x, batches.mine.labels, batches.mine.valid);
            one.evaluate(batches.whole.x, batches.whole.labels, batches.whole.valid);
        }
        const double accuracy = dp.accuracy();
        CHECK(accuracy == one.accuracy());  // the same counts, divided alike
        CHECK(dp.accuracy() == accuracy);   // a second read (summed over ranks again) changes nothing
        CHECK(accuracy > 0.4);              // (4 classes: it learned something)
        CHECK(dp.evaluation_loss() == doctest::Approx(one.evaluation_loss()).epsilon(1e-6));
    });
}

TEST_CASE("data parallel: an fp16 overflow on one rank makes every rank skip the step and lower the scale")
{
    for_world([](auto w) {
        constexpr std::size_t World = decltype(w)::value;
        const testing::task task = testing::make_task(8 * World * per_rank, features, classes, 9);
        global_batches<World> batches{task, {}, {}};
        model_t<fp16_mixed, per_rank> mine(11 + static_cast<std::uint64_t>(world().rank()));
        train::trainer dp(mine, train::adamw{}, train::constant_lr{1e-3f}, {.communicator = &world()});
        for (std::size_t s = 0; s < 3; ++s) {
            batches.fill(s);
            dp.step(batches.mine.x, batches.mine.labels, batches.mine.valid);
        }
        const train::step_state before = dp.state();
        const auto weights = parameters_of(mine);
        REQUIRE(before.skipped == 0);

        batches.fill(3);
        if (world().rank() == world().size() - 1)  // overflows fp16 in the first layer's output
            for (std::size_t i = 0; i < per_rank * features; ++i) batches.mine.x.data()[i] = 6e4f;
        dp.reset_metrics();
        dp.step(batches.mine.x, batches.mine.labels, batches.mine.valid);
        const train::step_state after = dp.state();
        CHECK(after.skipped == 1);
        CHECK(after.last_skipped == 1);
        CHECK(after.loss_scale < before.loss_scale);
        CHECK(parameters_of(mine) == weights);
        CHECK_FALSE(std::isfinite(dp.mean_loss()));  // the global loss, on every rank

        batches.fill(4);
        dp.step(batches.mine.x, batches.mine.labels, batches.mine.valid);
        CHECK(dp.state().applied == before.applied + 1);
        CHECK(dp.state().loss_scale == after.loss_scale);
        CHECK(same_on_every_rank(mine));
    });
}

TEST_CASE("data parallel: rank 0 writes the checkpoint; it resumes at this world size and at world size 1")
{
    for_world([](auto w) {
        constexpr std::size_t World = decltype(w)::value;
        const testing::task task = testing::make_task(6 * World * per_rank, features, classes, 10);
        global_batches<World> batches{task, {}, {}};
        const std::string path = shared_path("_resume.ckpt");
        const auto steps = [&](auto& t, std::size_t from, std::size_t to) { run_steps(batches, t, from, to); };
        model_t<bf16_mixed, per_rank> mine(12);
        train::trainer dp(mine, train::adamw{}, train::constant_lr{1e-2f}, {.communicator = &world()});
        steps(dp, 0, 3);
        // rank 0 cannot write: every rank hears of it, and nothing has changed
        const auto before = parameters_of(mine);
        CHECK_THROWS_AS(dp.save("/nonexistent-tenet-directory/x.ckpt"), tenet::io_error);
        CHECK(parameters_of(mine) == before);
        dp.save(path);
        CHECK(std::filesystem::exists(path));
        steps(dp, 3, 6);

        // every rank loads the file into a fresh data-parallel trainer: the same bits
        model_t<bf16_mixed, per_rank> resumed(99);
        train::trainer again(resumed, train::adamw{}, train::constant_lr{1e-2f}, {.communicator = &world()});
        again.load(path);
        steps(again, 3, 6);
        CHECK(parameters_of(resumed) == parameters_of(mine));

        // one process (world size 1, the global batch) continues the same trajectory
        model_t<bf16_mixed, global_batches<World>::global> alone(98);
        train::trainer one(alone, train::adamw{}, train::constant_lr{1e-2f});
        one.load(path);
        steps(one, 3, 6);
        const auto a = parameters_of(alone), b = parameters_of(mine);
        std::size_t apart = 0;  // bf16 weights: at most a rounding step apart
        for (std::size_t i = 0; i < a.size(); ++i) apart += std::abs(a[i] - b[i]) > 1e-2 * std::abs(b[i]) + 1e-6;
        CHECK(apart == 0);

        float read_by_all = 0;  // a collective: every rank has read the file
        world().allreduce_sum(&read_by_all, 1, {});
        if (world().rank() == 0) std::filesystem::remove(path);
    });
}

TEST_CASE("data parallel: BatchNorm's running statistics are rank 0's on every rank after each step")
{
    using images = nn::Sequential<nn::BatchNorm2d<3>, nn::Flatten, nn::Linear<12, classes>>;
    using model = nn::model<images, fp32, Shape<per_rank, 2, 2, 3>, Host>;
    model mine(21 + static_cast<std::uint64_t>(world().rank()));
    train::trainer dp(mine, train::sgd{}, train::constant_lr{1e-2f}, {.communicator = &world()});
    Tensor<f32, Shape<per_rank, 2, 2, 3>, Host> x;
    Tensor<i32, Shape<per_rank>, Host> labels, valid;
    std::mt19937_64 rng(5 + static_cast<std::uint64_t>(world().rank()));  // each rank its own batches
    std::normal_distribution<float> normal(1.0f, 2.0f);
    const auto same_buffers = [&] {
        constexpr std::size_t bytes = model::buffer_numel * sizeof(f32);
        std::vector<std::byte> all(bytes * static_cast<std::size_t>(world().size()));
        world().all_gather(mine.buffers(), all.data(), bytes, {});
        for (int r = 1; r < world().size(); ++r)
            if (std::memcmp(all.data(), all.data() + bytes * static_cast<std::size_t>(r), bytes) != 0) return false;
        return true;
    };
    CHECK(same_buffers());
    for (int step = 0; step < 3; ++step) {
        for (std::size_t i = 0; i < per_rank * 12; ++i) x.data()[i] = normal(rng) * static_cast<float>(1 + world().rank());
        for (std::size_t r = 0; r < per_rank; ++r) labels.data()[r] = static_cast<i32>(rng() % classes), valid.data()[r] = 1;
        dp.step(x, labels, valid);
        CHECK(same_buffers());
        CHECK(same_on_every_rank(mine));
    }
}

TEST_CASE("data parallel: the sharded loader gives every sample to exactly one rank once per epoch")
{
    constexpr std::size_t feats = 6, batch_rows = 16, count = 203;
    data::mnist_split split;
    split.count = count;
    split.images.assign(count * feats, 0);
    split.labels.assign(count, 0);
    for (std::size_t i = 0; i < count; ++i) {  // each sample's number in its first two pixels
        split.images[i * feats] = static_cast<std::uint8_t>(i % 256);
        split.images[i * feats + 1] = static_cast<std::uint8_t>(i / 256);
    }
    const auto identity = [](std::uint8_t p) { return static_cast<f32>(p); };
    const data::shard part{static_cast<std::size_t>(world().rank()), static_cast<std::size_t>(world().size())};
    data::batch_loader<f32, batch_rows, feats, Host> loader(split, identity, current_stream(), part);
    for (std::uint64_t epoch : {0u, 1u}) {
        CAPTURE(epoch);
        std::vector<float> seen(count, 0.0f);
        typename decltype(loader)::batch b;
        loader.start_epoch(17, epoch);
        std::size_t batches = 0;
        while (loader.next(b)) {
            ++batches;
            for (std::size_t r = 0; r < batch_rows; ++r)
                if (b.valid().data()[r] == 1) {
                    const f32* row = b.x().data() + r * feats;
                    seen[static_cast<std::size_t>(row[0] + 256 * row[1])] += 1.0f;
                }
        }
        world().allreduce_sum(seen.data(), count, {});
        CHECK(std::count(seen.begin(), seen.end(), 1.0f) == static_cast<std::ptrdiff_t>(count));
        std::vector<std::size_t> per_rank_batches(static_cast<std::size_t>(world().size()));
        world().all_gather(&batches, per_rank_batches.data(), sizeof batches, {});
        CHECK(std::count(per_rank_batches.begin(), per_rank_batches.end(), batches) == world().size());
    }
}

namespace {

// ZeRO-1 against plain data parallelism: the same ranks, seeds and batches.
template <std::size_t World, class P>
void check_zero_against_plain(train::trainer_options options, bool bitwise)
{
    const testing::task task = testing::make_task(uneven_task_size<World>, features, classes, 13);
    global_batches<World> batches{task, {}, {}};
    options.communicator = &world();
    train::trainer_options zero = options;
    zero.zero = true;
    model_t<P, per_rank> plain_model(30 + static_cast<std::uint64_t>(world().rank()));
    model_t<P, per_rank> zero_model(30 + 3 * static_cast<std::uint64_t>(world().rank()));  // rank 0: the same weights
    train::trainer plain(plain_model, train::adamw{}, train::constant_lr{1e-2f}, options);
    train::trainer sharded(zero_model, train::adamw{}, train::constant_lr{1e-2f}, zero);
    // Each rank keeps one shard of the optimizer state: together, all of it once.
    using optimizer_t = typename decltype(sharded)::optimizer_type;
    constexpr std::size_t n = decltype(zero_model)::flat_numel;
    const auto shard = sharded.optimizer().shard();
    float covered = static_cast<float>(shard.size());
    world().allreduce_sum(&covered, 1, {});
    CHECK(covered == static_cast<float>(n));
    CHECK(shard == train::parameter_shard::of(n, static_cast<std::size_t>(world().rank()), World));
    CHECK(shard.size() <= n / World + n % World);
    CHECK(optimizer_t::sharded_state_bytes(World) == optimizer_t::state_bytes_for(n / World + n % World));
    CHECK_FALSE(plain.optimizer().sharded());

    for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
        for (std::size_t s = 0; s < batches.count(); ++s) {
            batches.fill(s);
            plain.step(batches.mine.x, batches.mine.labels, batches.mine.valid);
            sharded.step(batches.mine.x, batches.mine.labels, batches.mine.valid);
        }
        const double zero_loss = sharded.end_epoch().mean_loss, plain_loss = plain.end_epoch().mean_loss;
        if (bitwise) CHECK(zero_loss == plain_loss);
        // (bf16: master weights ulps apart may round to neighbouring bf16 weights)
        CHECK(zero_loss == doctest::Approx(plain_loss).epsilon(1e-4));
    }
    const auto a = parameters_of(zero_model), b = parameters_of(plain_model);
    const double difference = max_difference(a, b);
    if (world().rank() == 0) MESSAGE("ZeRO-1 against plain data parallel, largest parameter difference: " << difference);
    if (bitwise) CHECK(a == b);
    CHECK(difference < 1e-6);
    CHECK(sharded.state().applied == plain.state().applied);
    CHECK(same_on_every_rank(zero_model));
}

}  // namespace

TEST_CASE("ZeRO-1: sharded optimizer state trains as plain data parallelism")
{
    for_world([](auto w) {
        constexpr std::size_t World = decltype(w)::value;
        // The gradient sums are the allreduce's bits (the same rank-order
        // sum), and AdamW updates element by element: bit for bit the same.
        SUBCASE("f32, no clipping: bitwise") { check_zero_against_plain<World, fp32>({}, true); }
        // The global norm sums each shard, then the shards: ulps apart.
        SUBCASE("f32, global-norm clipping")
        {
            check_zero_against_plain<World, fp32>({.optimizer{.clip_norm = 0.5f}}, false);
        }
        SUBCASE("bf16 storage, two micro-batches, clipping")
        {
            check_zero_against_plain<World, bf16_mixed>({.accumulation_steps = 2, .optimizer{.clip_norm = 0.5f}}, false);
        }
    });
}

TEST_CASE("ZeRO-1: an fp16 overflow on one rank makes every rank skip the step")
{
    for_world([](auto w) {
        constexpr std::size_t World = decltype(w)::value;
        const testing::task task = testing::make_task(8 * World * per_rank, features, classes, 14);
        global_batches<World> batches{task, {}, {}};
        model_t<fp16_mixed, per_rank> mine(15 + static_cast<std::uint64_t>(world().rank()));
        train::trainer dp(mine, train::adamw{}, train::constant_lr{1e-3f}, {.communicator = &world(), .zero = true});
        for (std::size_t s = 0; s < 2; ++s) {
            batches.fill(s);
            dp.step(batches.mine.x, batches.mine.labels, batches.mine.valid);
        }
        const train::step_state before = dp.state();
        const auto weights = parameters_of(mine);
        batches.fill(2);
        if (world().rank() == 0)  // not the last rank's shard this time
            for (std::size_t i = 0; i < per_rank * features; ++i) batches.mine.x.data()[i] = 6e4f;
        dp.step(batches.mine.x, batches.mine.labels, batches.mine.valid);
        const train::step_state after = dp.state();
        CHECK(after.skipped == before.skipped + 1);
        CHECK(after.loss_scale < before.loss_scale);
        CHECK(parameters_of(mine) == weights);
        batches.fill(3);
        dp.step(batches.mine.x, batches.mine.labels, batches.mine.valid);
        CHECK(dp.state().applied == before.applied + 1);
        CHECK(same_on_every_rank(mine));
    });
}

TEST_CASE("ZeRO-1: the shards gather into one checkpoint that resumes with or without zero, at any world size")
{
    for_world([](auto w) {
        constexpr std::size_t World = decltype(w)::value;
        const testing::task task = testing::make_task(6 * World * per_rank, features, classes, 16);
        global_batches<World> batches{task, {}, {}};
        const std::string path = shared_path("_zero.ckpt");
        const auto steps = [&](auto& t, std::size_t from, std::size_t to) { run_steps(batches, t, from, to); };
        const train::trainer_options zero{.communicator = &world(), .zero = true};
        model_t<bf16_mixed, per_rank> mine(17);
        train::trainer dp(mine, train::adamw{}, train::constant_lr{1e-2f}, zero);
        steps(dp, 0, 3);
        const auto before = parameters_of(mine);
        CHECK_THROWS_AS(dp.save("/nonexistent-tenet-directory/x.ckpt"), tenet::io_error);
        CHECK(parameters_of(mine) == before);
        dp.save(path);
        steps(dp, 3, 6);

        // ZeRO-1 again, and plain data parallel, at this world size: the same bits
        model_t<bf16_mixed, per_rank> again_model(91), plain_model(92);
        train::trainer again(again_model, train::adamw{}, train::constant_lr{1e-2f}, zero);
        train::trainer plain(plain_model, train::adamw{}, train::constant_lr{1e-2f}, {.communicator = &world()});
        again.load(path);
        plain.load(path);
        steps(again, 3, 6);
        steps(plain, 3, 6);
        CHECK(parameters_of(again_model) == parameters_of(mine));
        CHECK(parameters_of(plain_model) == parameters_of(mine));

        // one process (world size 1, the global batch) continues the same trajectory
        model_t<bf16_mixed, global_batches<World>::global> alone(93);
        train::trainer one(alone, train::adamw{}, train::constant_lr{1e-2f});
        one.load(path);
        steps(one, 3, 6);
        const auto a = parameters_of(alone), b = parameters_of(mine);
        std::size_t apart = 0;  // bf16 weights: at most a rounding step apart
        for (std::size_t i = 0; i < a.size(); ++i) apart += std::abs(a[i] - b[i]) > 1e-2 * std::abs(b[i]) + 1e-6;
        CHECK(apart == 0);

        float read_by_all = 0;
        world().allreduce_sum(&read_by_all, 1, {});
        if (world().rank() == 0) std::filesystem::remove(path);
    });
}
