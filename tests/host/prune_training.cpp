// Pruning in training, on the host: the fused optimizer with masks against
// the same optimizer without them on a model whose pruned weights and
// gradients were zeroed by hand (bit for bit, every rule, clipping, bf16
// master weights, fp16 loss scaling with an inf in a pruned gradient);
// masks in trainer checkpoints; gradual, one-shot and 2:4 pruning of a model
// that learns, with the pruned weights exactly zero at the end.
#include "synthetic_task.hpp"
#include "tensor_testing.hpp"

#include <tenet/prune/prune.hpp>
#include <tenet/train/trainer.hpp>

#include <cstdio>
#include <filesystem>
#include <limits>
#include <random>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;
namespace train = tenet::train;

namespace {

constexpr std::size_t features = 12, classes = 4, batch = 16;
using spec = nn::Sequential<nn::Linear<features, 32>, nn::ReLU, nn::Linear<32, classes>>;
template <class P>
using model_t = nn::model<spec, P, Shape<batch, features>, Host>;

template <class T>
std::vector<T> copy_of(const T* data, std::size_t n)
{
    return std::vector<T>(data, data + n);
}

// Bitwise equality of two arrays (so +0 and -0 differ, and NaN equals itself).
template <class T>
bool same_bits(const T* a, const T* b, std::size_t n)
{
    return std::memcmp(a, b, n * sizeof(T)) == 0;
}

// Random masks: each prunable weight pruned with probability `p`.
template <class Masks>
std::vector<char> random_keep(Masks& m, double p, std::uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::bernoulli_distribution pruned(p);
    std::vector<char> keep = m.to_host();
    for (const auto& w : m.prunable())
        for (std::size_t i = w.offset; i < w.offset + w.numel; ++i) keep[i] = pruned(rng) ? 0 : 1;
    return keep;
}

// Every flat element that belongs to a parameter (not padding).
template <class M>
std::vector<char> parameter_elements(M& m)
{
    std::vector<char> is(M::flat_numel, 0);
    m.for_each_parameter([&](const std::string&, auto value, auto) {
        const auto begin = static_cast<std::size_t>(value.data() - m.parameters());
        for (std::size_t i = begin; i < begin + decltype(value)::shape::numel; ++i) is[i] = 1;
    });
    return is;
}

// The masked optimizer against the unmasked one on a model whose pruned
// weights start at zero and whose pruned gradients are zero: elementwise
// rules leave such weights and their state at zero, and the norms (clipping,
// LAMB's trust ratio, the loss scaler's check) see zeros, so the two must
// agree bit for bit on every element. The masked one gets large random
// gradients at pruned positions, which it must ignore entirely.
template <class P, class Rule>
void check_masked_like_zeroed(Rule rule, train::optimizer_options options, std::size_t steps,
                              float poison = 0.0f)
{
    using M = model_t<P>;
    using G = typename M::gradient_type;
    M masked_net(3), zeroed_net(3);
    options.masked = true;
    train::optimizer masked(masked_net, rule, train::constant_lr{0.05f}, options);
    options.masked = false;
    train::optimizer zeroed(zeroed_net, rule, train::constant_lr{0.05f}, options);

    std::vector<char> keep = random_keep(masked.masks(), 0.4, 11);
    masked.masks().from_host(keep);
    masked.apply_masks();
    for (std::size_t i = 0; i < M::flat_numel; ++i)
        if (!keep[i]) zeroed_net.parameters()[i] = convert<typename M::storage_type>(0.0f);
    zeroed.load_master_from_parameters();
    REQUIRE(same_bits(masked_net.parameters(), zeroed_net.parameters(), M::flat_numel));

    const std::vector<char> is_parameter = parameter_elements(masked_net);
    std::mt19937_64 rng(5);
    std::normal_distribution<double> normal(0.0, 1.0);
    const float scale = P::dynamic_loss_scaling ? options.scaler.initial_scale : 1.0f;
    for (std::size_t step = 0; step < steps; ++step) {
        if (step == 2) {
            // More pruning, without apply_masks(): the step itself zeroes the
            // newly pruned weights, their master copies and their state.
            const std::vector<char> more = random_keep(masked.masks(), 0.4, 12);
            for (std::size_t i = 0; i < M::flat_numel; ++i) {
                if (!keep[i] || more[i]) continue;
                keep[i] = 0;
                zeroed_net.parameters()[i] = convert<typename M::storage_type>(0.0f);
                zeroed.master()[i] = G(0);
                for (std::size_t j = 0; j < Rule::slots; ++j) zeroed.slot(j)[i] = G(0);
            }
            masked.masks().from_host(keep);
        }
        for (std::size_t i = 0; i < M::flat_numel; ++i) {
            const double g = is_parameter[i] ? normal(rng) * (keep[i] ? 1.0 : 50.0) * scale : 0.0;
            masked_net.gradients()[i] = convert<G>(g);
            zeroed_net.gradients()[i] = convert<G>(keep[i] ? g : 0.0);
        }
        if (poison != 0.0f && step == 1) {  // an inf in a pruned weight's gradient changes nothing
            const auto& w = masked.masks().prunable()[0];
            std::size_t i = w.offset;
            while (keep[i]) ++i;
            masked_net.gradients()[i] = convert<G>(poison);
        }
        masked.step();
        zeroed.step();
        CAPTURE(step);
        CHECK(same_bits(masked_net.parameters(), zeroed_net.parameters(), M::flat_numel));
        CHECK(same_bits(masked.master(), zeroed.master(), M::flat_numel));
        for (std::size_t j = 0; j < Rule::slots; ++j) CHECK(same_bits(masked.slot(j), zeroed.slot(j), M::flat_numel));
        CHECK(masked.state().last_skipped == 0);
    }
    // Pruned weights are exactly +0; the kept ones moved.
    M start(3);
    std::size_t pruned = 0, moved = 0;
    for (std::size_t i = 0; i < M::flat_numel; ++i) {
        if (!keep[i]) {
            ++pruned;
            CHECK(convert<f64>(masked_net.parameters()[i]) == 0.0);
            CHECK(!std::signbit(convert<f64>(masked_net.parameters()[i])));
        } else if (is_parameter[i]) {
            moved += masked_net.parameters()[i] != start.parameters()[i];
        }
    }
    CHECK(pruned > M::parameter_count / 3);
    CHECK(moved > M::parameter_count / 4);
}

std::string temp_path(const char* name)
{
    return (std::filesystem::temp_directory_path() / (std::string("tenet_prune_") + name)).string();
}

}  // namespace

TEST_CASE("prune: the fused optimizer keeps pruned weights at zero, like a model zeroed by hand")
{
    train::optimizer_options clipped;
    clipped.clip_norm = 1.0f;  // the norm must leave out the (large) pruned gradients
    SUBCASE("SGD, momentum, Nesterov, weight decay, clipping") {
        check_masked_like_zeroed<fp32>(train::sgd{0.9f, 0.0f, 1e-2f, true}, clipped, 4);
    }
    SUBCASE("AdamW with clipping") { check_masked_like_zeroed<fp32>(train::adamw{}, clipped, 4); }
    SUBCASE("LAMB (per-tensor trust ratio)") { check_masked_like_zeroed<fp32>(train::lamb{}, {}, 4); }
    SUBCASE("AdamW on bf16 with f32 master weights") { check_masked_like_zeroed<bf16_mixed>(train::adamw{}, {}, 4); }
    SUBCASE("fp16 with loss scaling: an inf in a pruned gradient skips nothing") {
        train::optimizer_options scaled;
        scaled.scaler.initial_scale = 256.0f;
        check_masked_like_zeroed<fp16_mixed>(train::sgd{0.9f}, scaled, 4, std::numeric_limits<float>::infinity());
    }
}

TEST_CASE("prune: an optimizer without masks says so")
{
    model_t<fp32> net(1);
    train::optimizer opt(net, train::sgd{}, train::constant_lr{0.1f});
    CHECK(!opt.masked());
    CHECK_THROWS_AS(opt.masks(), tenet::error);
}

TEST_CASE("prune: masks are saved in and restored from trainer checkpoints")
{
    using M = model_t<bf16_mixed>;
    const testing::task data = testing::make_task(128, features, classes, 3);
    testing::task_batch<bf16, batch, features> b;
    M net(4);
    train::trainer_options options;
    options.optimizer.masked = true;
    train::trainer t(net, train::adamw{}, train::constant_lr{1e-2f}, options);
    auto train_steps = [&](std::size_t n) {
        for (std::size_t i = 0; i < n; ++i) {
            b.fill(data, (i * batch) % 128);
            t.step(b.x, b.labels, b.valid);
        }
    };
    auto& masks = t.optimizer().masks();
    const std::vector<char> keep = random_keep(masks, 0.5, 21);
    masks.from_host(keep);
    t.optimizer().apply_masks();
    train_steps(3);
    const std::string path = temp_path("masked.ckpt");
    t.save(path);
    const auto saved = copy_of(net.parameters(), M::flat_numel);

    // Other masks and more training; loading brings back the saved masks and weights.
    masks.from_host(random_keep(masks, 0.2, 22));
    t.optimizer().apply_masks();
    train_steps(2);
    t.load(path);
    CHECK(masks.to_host() == keep);
    CHECK(same_bits(net.parameters(), saved.data(), M::flat_numel));
    train_steps(2);
    for (std::size_t i = 0; i < M::flat_numel; ++i)
        if (!keep[i]) CHECK(convert<f64>(net.parameters()[i]) == 0.0);

    // A mask byte that is neither 0 nor 1, behind a valid checksum: rejected, nothing changes.
    auto contents = io::read_checkpoint_file(path, t.signature());
    for (auto& s : contents.sections)
        if (s.name == "masks") s.bytes[masks.prunable()[1].offset] = std::byte{2};
    const std::string bad = temp_path("bad_mask.ckpt");
    io::write_checkpoint_file(bad, contents);
    const auto before = copy_of(net.parameters(), M::flat_numel);
    const auto masks_before = masks.to_host();
    CHECK_THROWS_AS(t.load(bad), tenet::format_error);
    CHECK(same_bits(net.parameters(), before.data(), M::flat_numel));
    CHECK(masks.to_host() == masks_before);

    // Masked and unmasked checkpoints do not mix.
    M plain_net(4);
    train::trainer plain(plain_net, train::adamw{}, train::constant_lr{1e-2f});
    CHECK(t.signature() != plain.signature());
    CHECK_THROWS_AS(plain.load(path), tenet::format_error);
    const std::string unmasked = temp_path("unmasked.ckpt");
    plain.save(unmasked);
    CHECK_THROWS_AS(t.load(unmasked), tenet::format_error);
    for (const auto& p : {path, bad, unmasked}) std::remove(p.c_str());
}

TEST_CASE("prune: gradual and 2:4 pruning while a model trains")
{
    using M = model_t<bf16_mixed>;
    const testing::task train_set = testing::make_task(512, features, classes, 7);
    const testing::task test_set = testing::make_task(512, features, classes, 8);
    testing::task_batch<bf16, batch, features> b;
    auto run = [&](auto& t, std::uint64_t first, std::uint64_t steps, auto&& before_step) {
        for (std::uint64_t s = first; s < first + steps; ++s) {
            before_step(s);
            b.fill(train_set, (s * batch) % 512);
            t.step(b.x, b.labels, b.valid);
        }
    };
    auto accuracy = [&](auto& t) {
        for (std::size_t first = 0; first < 512; first += batch) {
            b.fill(test_set, first);
            t.evaluate(b.x, b.labels, b.valid);
        }
        return t.end_epoch().accuracy;
    };
    auto pruned_are_zero = [](M& net, const std::vector<char>& keep) {
        std::size_t nonzero = 0;
        for (std::size_t i = 0; i < M::flat_numel; ++i) nonzero += !keep[i] && convert<f64>(net.parameters()[i]) != 0.0;
        return nonzero == 0;
    };
    M net(6);
    train::trainer_options options;
    options.optimizer.masked = true;
    train::trainer t(net, train::adamw{}, train::constant_lr{1e-2f}, options);
    auto& masks = t.optimizer().masks();
    run(t, 0, 200, [](std::uint64_t) {});
    const double dense = accuracy(t);
    CHECK(dense > 0.85);

    SUBCASE("gradual, global, to 80%: exact sparsity, zeros stay zero, accuracy holds") {
        prune::pruner p(t.optimizer(), prune::gradual_sparsity{0.0, 0.8, 0, 5, 20}, prune::scope::global);
        std::vector<double> reached;
        run(t, 0, 300, [&](std::uint64_t s) {
            if (p.update(s)) reached.push_back(prune::sparsity(masks));
        });
        REQUIRE(reached.size() == 6);
        for (std::size_t j = 0; j + 1 < reached.size(); ++j) CHECK(reached[j] <= reached[j + 1]);
        const prune::sparsity_report r = prune::report(masks);
        CHECK(r.numel - r.kept == static_cast<std::size_t>(std::nearbyint(0.8 * static_cast<double>(r.numel))));
        CHECK(r.nonzero <= r.kept);
        CHECK(pruned_are_zero(net, masks.to_host()));
        CHECK(accuracy(t) > dense - 0.05);
    }
    SUBCASE("one shot to 60% per layer at step 250, then fine-tuning") {
        prune::pruner p(t.optimizer(), prune::one_shot{0.6, 250}, prune::scope::per_layer);
        std::vector<std::uint64_t> pruned_at;
        run(t, 200, 200, [&](std::uint64_t s) {
            if (p.update(s)) pruned_at.push_back(s);
        });
        CHECK(pruned_at == std::vector<std::uint64_t>{250});
        for (const auto& layer : prune::report(masks).layers)
            CHECK(layer.numel - layer.kept == static_cast<std::size_t>(std::nearbyint(0.6 * static_cast<double>(layer.numel))));
        CHECK(pruned_are_zero(net, masks.to_host()));
        CHECK(accuracy(t) > dense - 0.05);
    }
    SUBCASE("2:4 once, then fine-tuning: every group stays 2:4") {
        prune::two_four(masks);
        t.optimizer().apply_masks();
        run(t, 200, 200, [](std::uint64_t) {});
        CHECK(prune::satisfies_n_of_m<2, 4>(masks));
        CHECK(prune::sparsity(masks) == 0.5);
        CHECK(pruned_are_zero(net, masks.to_host()));
        CHECK(accuracy(t) > dense - 0.05);
    }
}
