// The trainer on the host: a model learns a synthetic task; k micro-batches
// give the same update as one batch k times as big; checkpoints round-trip
// (parameters, master weights, optimizer and scaler state, step) and a
// corrupted, truncated or mismatched file is rejected with the model unchanged.
#include "synthetic_task.hpp"
#include "tensor_testing.hpp"

#include <tenet/nn/nn.hpp>
#include <tenet/train/trainer.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;
namespace train = tenet::train;

namespace {

constexpr std::size_t features = 12, classes = 4;
using spec = nn::Sequential<nn::Linear<features, 32>, nn::ReLU, nn::Linear<32, classes>>;

using testing::task;
template <class T, std::size_t Batch>
using host_batch = testing::task_batch<T, Batch, features>;

task make_task(std::size_t n, std::uint64_t seed) { return testing::make_task(n, features, classes, seed); }

template <class P, std::size_t Batch>
using model_t = nn::model<spec, P, Shape<Batch, features>, Host>;

template <class M>
std::vector<double> parameters_of(M& m)
{
    std::vector<double> w(M::flat_numel);
    for (std::size_t i = 0; i < M::flat_numel; ++i) w[i] = convert<f64>(m.parameters()[i]);
    return w;
}

template <class Trainer, std::size_t Batch, class T>
double test_accuracy(Trainer& t, const task& data, host_batch<T, Batch>& b)
{
    for (std::size_t first = 0; first < data.y.size(); first += Batch) {
        b.fill(data, first);
        t.evaluate(b.x, b.labels, b.valid);
    }
    return t.end_epoch().accuracy;
}

std::string temp_path(const char* name)
{
    return (std::filesystem::temp_directory_path() / (std::string("tenet_trainer_") + name)).string();
}

}  // namespace

TEST_CASE("trainer: an MLP learns a synthetic task (fp32, bf16, fp16 with loss scaling)")
{
    const task train_set = make_task(2048, 1), test_set = make_task(500, 2);
    auto run = [&]<class P>(P, double want) {
        model_t<P, 64> m(3);
        train::trainer t(m, train::adamw{}, train::warmup_cosine_lr{3e-3f, 20, 300, 0.0f});
        host_batch<typename P::storage, 64> b;
        const double before = test_accuracy(t, test_set, b);
        double first_loss = 0;
        for (int epoch = 0; epoch < 9; ++epoch) {
            for (std::size_t first = 0; first < train_set.y.size(); first += 64) {
                b.fill(train_set, first);
                t.step(b.x, b.labels, b.valid);
            }
            const double loss = t.end_epoch().mean_loss;
            if (epoch == 0) first_loss = loss;
        }
        const double after = test_accuracy(t, test_set, b);
        MESSAGE(std::string(tenet::element_name<typename P::storage>) << ": accuracy " << before << " -> " << after);
        CHECK(after > want);
        CHECK(std::isnan(t.mean_loss()));  // an empty window: the last end_epoch(), no steps since
        CHECK(first_loss > 0.0);
        const auto s = t.state();
        CHECK(s.iteration == 9 * 32);
        CHECK(s.applied + s.skipped == 9 * 32);
        if constexpr (P::dynamic_loss_scaling) CHECK(s.loss_scale >= 1.0f);
        else CHECK(s.loss_scale == 1.0f);
    };
    run(fp32{}, 0.9);
    run(bf16_mixed{}, 0.9);
    run(fp16_mixed{}, 0.9);
}

TEST_CASE("trainer: k micro-batches update like one batch k times as big")
{
    using P = training_precision<f64, f64, f64, f64>;
    const task data = make_task(96, 5);
    model_t<P, 24> big(11);
    model_t<P, 8> small(11);
    REQUIRE(parameters_of(big) == parameters_of(small));  // same seed, same parameters
    // SGD: its update is linear in the gradient, so rounding differences in
    // the sums stay at rounding size (Adam's g / sqrt(v) would magnify them
    // where gradients are near zero).
    train::trainer whole(big, train::sgd{0.9f}, train::constant_lr{0.25f});
    train::trainer_options options;
    options.accumulation_steps = 3;
    train::trainer parts(small, train::sgd{0.9f}, train::constant_lr{0.25f}, options);
    host_batch<f64, 24> b24;
    host_batch<f64, 8> b8;
    for (std::size_t first = 0; first < data.y.size(); first += 24) {
        b24.fill(data, first);
        whole.step(b24.x, b24.labels, b24.valid);
        for (std::size_t part = 0; part < 3; ++part) {
            b8.fill(data, first + part * 8);
            parts.step(b8.x, b8.labels, b8.valid);
            if (part < 2) CHECK(parts.state().iteration == first / 24);  // no update mid-way
        }
        const auto a = parameters_of(big), c = parameters_of(small);
        double worst = 0;
        for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - c[i]));
        CAPTURE(worst);
        CHECK(worst < 1e-12);
    }
    CHECK(parts.state().applied == 4);
    CHECK_THROWS_AS(train::trainer(small, train::adamw{}, train::constant_lr{1e-2f}, train::trainer_options{0, {}}),
                    tenet::error);
}

TEST_CASE("trainer: checkpoints round-trip and bad files leave the model untouched")
{
    const task data = make_task(256, 7);
    model_t<fp16_mixed, 32> m(5);
    train::trainer t(m, train::adamw{}, train::constant_lr{1e-3f});
    host_batch<f16, 32> b;
    auto train_steps = [&](std::size_t n) {
        for (std::size_t i = 0; i < n; ++i) {
            b.fill(data, (i * 32) % 256);
            t.step(b.x, b.labels, b.valid);
        }
    };
    train_steps(5);
    const std::string path = temp_path("round_trip.ckpt");
    t.save(path);
    const auto saved_parameters = parameters_of(m);
    const std::vector<float> saved_master(t.optimizer().master(), t.optimizer().master() + decltype(m)::flat_numel);
    const auto saved_state = t.state();
    const auto saved_step = m.step();

    // Training on, then loading, returns to the saved point exactly; the same
    // steps again give the same parameters as the first time.
    train_steps(3);
    const auto after_three = parameters_of(m);
    REQUIRE(after_three != saved_parameters);
    t.load(path);
    CHECK(parameters_of(m) == saved_parameters);
    CHECK(std::equal(saved_master.begin(), saved_master.end(), t.optimizer().master()));
    CHECK(t.state().applied == saved_state.applied);
    CHECK(t.state().loss_scale == saved_state.loss_scale);
    CHECK(m.step() == saved_step);
    train_steps(3);
    CHECK(parameters_of(m) == after_three);

    // Damaged files: nothing changes.
    std::vector<char> good;
    {
        std::ifstream in(path, std::ios::binary);
        good.assign(std::istreambuf_iterator<char>(in), {});
    }
    const auto current = parameters_of(m);
    auto write = [&](const std::vector<char>& bytes) {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    };
    std::vector<char> flipped = good;
    flipped[flipped.size() / 2] ^= 0x10;
    write(flipped);
    CHECK_THROWS_AS(t.load(path), tenet::format_error);
    write(std::vector<char>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(good.size() - 7)));
    CHECK_THROWS_AS(t.load(path), tenet::format_error);
    CHECK(parameters_of(m) == current);

    // Another model's (or another rule's) checkpoint is refused by signature.
    write(good);
    model_t<fp16_mixed, 32> twin(9);
    train::trainer sgd_trainer(twin, train::sgd{0.9f}, train::constant_lr{1e-3f});
    const auto twin_before = parameters_of(twin);
    CHECK_THROWS_AS(sgd_trainer.load(path), tenet::format_error);
    CHECK(parameters_of(twin) == twin_before);
    nn::model<nn::Sequential<nn::Linear<features, 16>, nn::ReLU, nn::Linear<16, classes>>, fp16_mixed,
              Shape<32, features>, Host>
        narrower(1);
    train::trainer other(narrower, train::adamw{}, train::constant_lr{1e-3f});
    CHECK_THROWS_AS(other.load(path), tenet::format_error);
    CHECK_THROWS_AS(t.load(temp_path("does_not_exist.ckpt")), tenet::io_error);
    std::remove(path.c_str());
}

TEST_CASE("trainer: no schedule means the rule's conventional rate, never a silent 0")
{
    model_t<fp32, 8> m(21);
    train::trainer adamw_default(m, train::adamw{});
    CHECK(adamw_default.optimizer().schedule().lr == 1e-3f);
    model_t<fp32, 8> other(21);
    CHECK_THROWS_AS((train::trainer(other, train::adamw{}, train::constant_lr{0.0f})), tenet::error);
}

namespace {

// A communicator of one rank that records what the trainer asks of it (the
// collectives are then identities): the data-parallel path, without MPI.
class recording_communicator final : public dist::communicator {
public:
    struct call {
        std::string what;
        std::size_t n;
        const void* data;
    };
    explicit recording_communicator(bool host = true, int size = 1) : host_(host), size_(size) {}
    int rank() const override { return 0; }
    int size() const override { return size_; }
    bool host_memory() const override { return host_; }
    void allreduce_sum(float* data, std::size_t n, stream_ref) override { calls.push_back({"allreduce", n, data}); }
    void reduce_scatter_sum(const float* in, float* out, std::size_t n, stream_ref) override
    {
        std::copy_n(in, n, out);
        calls.push_back({"reduce_scatter", n, in});
    }
    void all_gather(const void* in, void* out, std::size_t bytes, stream_ref) override
    {
        std::memcpy(out, in, bytes);
        calls.push_back({"all_gather", bytes, in});
    }
    void broadcast(void* data, std::size_t bytes, int, stream_ref) override { calls.push_back({"broadcast", bytes, data}); }
    void wait(stream_ref) override { calls.push_back({"wait", 0, nullptr}); }

    std::vector<call> calls;

private:
    bool host_;
    int size_;
};

}  // namespace

TEST_CASE("trainer with a communicator: the data-parallel path on one rank trains as without one")
{
    const task data = make_task(16 * 5 + 6, 12);  // a padded last batch
    model_t<fp32, 16> plain_model(3), parallel_model(3);
    train::trainer_options accumulate;
    accumulate.accumulation_steps = 2;
    train::trainer plain(plain_model, train::adamw{}, train::constant_lr{1e-2f}, accumulate);
    recording_communicator comm;
    train::trainer_options options = accumulate;
    options.communicator = &comm;
    options.bucket_bytes = 1000;  // 250 gradients a bucket
    train::trainer parallel(parallel_model, train::adamw{}, train::constant_lr{1e-2f}, options);
    CHECK(parallel.world_size() == 1);
    CHECK(parallel.rank() == 0);
    constexpr std::size_t n = model_t<fp32, 16>::flat_numel;
    // construction: rank 0's parameters broadcast, then waited for
    REQUIRE(comm.calls.size() == 2);
    CHECK(comm.calls[0].what == "broadcast");
    CHECK(comm.calls[1].what == "wait");
    CHECK(comm.calls[0].n == n * sizeof(f32));
    CHECK(comm.calls[0].data == parallel_model.parameters());

    host_batch<f32, 16> b;
    for (std::size_t step = 0; step < 6; ++step) {
        comm.calls.clear();
        b.fill(data, step * 16);
        plain.step(b.x, b.labels, b.valid);
        parallel.step(b.x, b.labels, b.valid);
        // the rows and loss, then (at the end of each update only) the
        // gradients in buckets of 250 from the end, covering them once
        REQUIRE(!comm.calls.empty());
        CHECK(comm.calls[0].what == "allreduce");
        CHECK(comm.calls[0].n == 2);
        const bool updates = step % 2 == 1;
        CHECK(comm.calls.size() == (updates ? 1 + (n + 249) / 250 : 1));
        std::size_t end = n;
        for (std::size_t c = 1; c < comm.calls.size(); ++c) {
            const std::size_t size = std::min<std::size_t>(250, end);
            CHECK(comm.calls[c].what == "allreduce");
            CHECK(comm.calls[c].n == size);
            end -= size;
        }
        if (updates) CHECK(end == 0);
    }
    // one rank's weight in its global batch is 1 exactly: the same bits
    CHECK(parameters_of(parallel_model) == parameters_of(plain_model));
    CHECK(parallel.mean_loss() == doctest::Approx(plain.mean_loss()).epsilon(1e-6));
    comm.calls.clear();
    b.fill(data, 0);
    parallel.evaluate(b.x, b.labels, b.valid);
    plain.evaluate(b.x, b.labels, b.valid);
    CHECK(parallel.accuracy() == plain.accuracy());  // correct and rows, summed over the ranks
    const auto count = [&](const char* what) {
        return std::count_if(comm.calls.begin(), comm.calls.end(), [&](const auto& c) { return c.what == what; });
    };
    CHECK(count("allreduce") == 2);
    CHECK(count("wait") == 2);  // each read waits through the communicator

    // rank 0 writes the checkpoint and says so; it loads as any other
    const std::string path = temp_path("communicator.ckpt");
    comm.calls.clear();
    parallel.save(path);
    CHECK(count("broadcast") == 1);
    model_t<fp32, 16> loaded(99);
    train::trainer reload(loaded, train::adamw{}, train::constant_lr{1e-2f});
    reload.load(path);
    CHECK(parameters_of(loaded) == parameters_of(parallel_model));
    std::remove(path.c_str());
}

TEST_CASE("trainer with zero on one rank: reduce-scatter, the norm totals, all-gather; it trains as without")
{
    const task data = make_task(16 * 4 + 5, 13);
    model_t<fp32, 16> plain_model(4), zero_model(4);
    train::trainer_options clipped{.optimizer{.clip_norm = 0.5f}};
    train::trainer plain(plain_model, train::adamw{}, train::constant_lr{1e-2f}, clipped);
    recording_communicator comm;
    train::trainer_options options = clipped;
    options.communicator = &comm;
    options.zero = true;
    train::trainer zero(zero_model, train::adamw{}, train::constant_lr{1e-2f}, options);
    constexpr std::size_t n = model_t<fp32, 16>::flat_numel;
    CHECK(zero.optimizer().shard() == train::parameter_shard::whole(n));  // one rank holds every shard
    host_batch<f32, 16> b;
    for (std::size_t step = 0; step < 5; ++step) {
        comm.calls.clear();
        b.fill(data, step * 16);
        plain.step(b.x, b.labels, b.valid);
        zero.step(b.x, b.labels, b.valid);
        // the rows and loss; the gradients reduce-scattered (one piece a
        // rank); the shards' norm totals summed; the parameters gathered in place
        REQUIRE(comm.calls.size() == 4);
        CHECK(comm.calls[0].what == "allreduce");
        CHECK(comm.calls[1].what == "reduce_scatter");
        CHECK(comm.calls[1].n == n);
        CHECK(comm.calls[1].data == zero_model.gradients());
        CHECK(comm.calls[2].what == "allreduce");
        CHECK(comm.calls[2].n == 2);
        CHECK(comm.calls[3].what == "all_gather");
        CHECK(comm.calls[3].n == n * sizeof(f32));
        CHECK(comm.calls[3].data == zero_model.parameters());
    }
    // one rank: the norm's sum in the same blocks, the same bits
    CHECK(parameters_of(zero_model) == parameters_of(plain_model));
    CHECK(zero.state().last_grad_norm == plain.state().last_grad_norm);
}

TEST_CASE("trainer with zero: refused without a communicator, and for LAMB across ranks")
{
    model_t<fp32, 16> m(3);
    train::trainer_options options;
    options.zero = true;
    CHECK_THROWS_AS(train::trainer(m, train::adamw{}, train::constant_lr{1e-2f}, options), tenet::error);
    // two ranks: LAMB's per-tensor norms would need whole tensors on each
    recording_communicator comm(true, 2);
    options.communicator = &comm;
    CHECK_THROWS_AS(train::trainer(m, train::lamb{}, train::constant_lr{1e-2f}, options), tenet::error);
    CHECK_NOTHROW(train::trainer(m, train::sgd{}, train::constant_lr{1e-2f}, options));
}

TEST_CASE("trainer with a communicator: a device-memory communicator or an empty bucket is refused")
{
    model_t<fp32, 16> m(3);
    recording_communicator device_memory(false);
    train::trainer_options options;
    options.communicator = &device_memory;
    CHECK_THROWS_AS(train::trainer(m, train::adamw{}, train::constant_lr{1e-2f}, options), tenet::error);
    CHECK(device_memory.calls.empty());  // refused before any collective
    recording_communicator host_memory;
    options.communicator = &host_memory;
    options.bucket_bytes = 2;
    CHECK_THROWS_AS(train::trainer(m, train::adamw{}, train::constant_lr{1e-2f}, options), tenet::error);
    using f64_policy = training_precision<f64, f64, f64, f64>;
    model_t<f64_policy, 16> wide(3);
    options.bucket_bytes = 1024;
    CHECK_THROWS_AS(train::trainer(wide, train::sgd{}, train::constant_lr{1e-2f}, options), tenet::error);
}

TEST_CASE("trainer: a frozen backbone with parameter groups, label smoothing and a weight average, under "
          "accumulation, ZeRO-1 and checkpoints")
{
    using frozen_spec = nn::Sequential<nn::Frozen<nn::Linear<features, 32>>, nn::ReLU, nn::Linear<32, classes>>;
    using M = nn::model<frozen_spec, bf16_mixed, Shape<16, features>, Host>;
    constexpr std::size_t trainable = M::trainable_numel;
    static_assert(trainable < M::flat_numel);
    const task data = make_task(16 * 8 + 3, 14);
    M plain_model(4), zero_model(4);
    train::trainer_options options;
    options.accumulation_steps = 2;
    options.optimizer.groups = train::parameter_groups{{{"2.weight", 0.5f, 0.05f}}};
    options.optimizer.average = train::ema{.decay = 0.9f};
    const train::softmax_cross_entropy smoothed{0.1f};
    train::trainer plain(plain_model, train::adamw{}, train::constant_lr{1e-2f}, options, smoothed);
    recording_communicator comm;
    train::trainer_options sharded = options;
    sharded.communicator = &comm;
    sharded.zero = true;
    train::trainer zero(zero_model, train::adamw{}, train::constant_lr{1e-2f}, sharded, smoothed);
    CHECK(zero.optimizer().shard() == train::parameter_shard::whole(trainable));
    const std::vector<bf16> start(plain_model.parameters(), plain_model.parameters() + M::flat_numel);
    host_batch<bf16, 16> b;
    double first_loss = 0, last_loss = 0;
    for (int epoch = 0; epoch < 6; ++epoch) {
        for (std::size_t step = 0; step < 9; ++step) {
            comm.calls.clear();
            b.fill(data, step * 16);
            plain.step(b.x, b.labels, b.valid);
            zero.step(b.x, b.labels, b.valid);
            for (const auto& c : comm.calls) {
                if (c.what == "reduce_scatter") CHECK(c.n == trainable);  // no frozen gradients travel
                if (c.what == "all_gather") CHECK(c.n == trainable * sizeof(bf16));
            }
        }
        last_loss = plain.end_epoch().mean_loss;
        zero.end_epoch();
        if (epoch == 0) first_loss = last_loss;
    }
    CHECK(last_loss < 0.9 * first_loss);  // the head learns on the frozen random features
    CHECK(parameters_of(zero_model) == parameters_of(plain_model));
    CHECK(std::memcmp(start.data() + trainable, plain_model.parameters() + trainable,
                      (M::flat_numel - trainable) * sizeof(bf16)) == 0);  // the backbone bit for bit

    // The average in (gathered under zero) and out again, exactly.
    const auto trained = parameters_of(plain_model);
    {
        comm.calls.clear();
        train::average_scope in_plain(plain), in_zero(zero);
        CHECK(parameters_of(plain_model) != trained);
        CHECK(parameters_of(zero_model) == parameters_of(plain_model));
        CHECK(std::count_if(comm.calls.begin(), comm.calls.end(), [](const auto& c) { return c.what == "all_gather"; }) == 1);
        CHECK_THROWS_AS(plain.step(b.x, b.labels, b.valid), tenet::error);
        b.fill(data, 0);
        plain.evaluate(b.x, b.labels, b.valid);
    }
    CHECK(parameters_of(plain_model) == trained);
    CHECK(parameters_of(zero_model) == trained);

    const std::string path = temp_path("frozen.ckpt");
    plain.save(path);
    const auto saved = parameters_of(plain_model);
    b.fill(data, 0);
    plain.step(b.x, b.labels, b.valid);
    plain.step(b.x, b.labels, b.valid);
    REQUIRE(parameters_of(plain_model) != saved);
    plain.load(path);
    CHECK(parameters_of(plain_model) == saved);
    // the unfrozen model's trainer refuses it (another layout)
    model_t<bf16_mixed, 16> unfrozen(4);
    train::trainer other(unfrozen, train::adamw{}, train::constant_lr{1e-2f});
    CHECK_THROWS_AS(other.load(path), tenet::format_error);
    std::remove(path.c_str());
}
