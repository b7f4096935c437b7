// Pruning on the device against the same selections on the host: magnitude
// (per layer and global; CUB radix sort there, nth_element here) and N:M (one
// thread per group) give the host's masks bit for bit, from the same
// weights and the same earlier masks; the report counts the same. The
// cooperative optimizer kernel with masks against the host's, and a
// graph-replayed pruning run against an eager one.
#include "device_testing.hpp"

#include <tenet/prune/magnitude.hpp>
#include <tenet/prune/report.hpp>
#include <tenet/prune/pruner.hpp>
#include <tenet/prune/structured.hpp>
#include <tenet/train/trainer.hpp>

#include <limits>
#include <random>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;
namespace prune = tenet::prune;
namespace train = tenet::train;

namespace {

using spec = nn::Sequential<nn::Linear<16, 24>, nn::ReLU, nn::Linear<24, 8>>;
using input = Shape<4, 16>;
template <class Place>
using net = nn::model<spec, fp32, input, Place>;
constexpr std::size_t flat = net<Host>::flat_numel;

// One host model and one device model with the same parameters: normal
// weights, or a few values (ties everywhere) with a NaN and infinities.
struct twins {
    net<Host> host{1};
    net<Device> device{1};
    prune::masks<net<Host>> host_masks{host};
    prune::masks<net<Device>> device_masks{device};

    explicit twins(std::uint64_t seed, bool ties)
    {
        std::mt19937_64 rng(seed);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::uniform_int_distribution<int> pick(-3, 3);
        for (const auto& p : host_masks.prunable())
            for (std::size_t i = p.offset; i < p.offset + p.numel; ++i)
                host.parameters()[i] = ties ? 0.5f * static_cast<float>(pick(rng)) : normal(rng);
        if (ties) {
            const std::size_t o = host_masks.prunable()[1].offset;
            host.parameters()[o + 5] = std::numeric_limits<float>::quiet_NaN();
            host.parameters()[o + 6] = -std::numeric_limits<float>::infinity();
            host.parameters()[o + 7] = -0.0f;
        }
        tenet::copy_bytes<Device, Host>(device.parameters(), host.parameters(), flat * sizeof(f32),
                                                current_stream());
    }

    // The same earlier mask on both (each prunable weight kept with probability `keep`).
    void start_from(double keep, std::uint64_t seed)
    {
        std::mt19937_64 rng(seed);
        std::bernoulli_distribution kept(keep);
        std::vector<char> mask(flat, 1);
        for (const auto& p : host_masks.prunable())
            for (std::size_t i = p.offset; i < p.offset + p.numel; ++i) mask[i] = kept(rng);
        host_masks.from_host(mask);
        device_masks.from_host(mask);
    }

    bool same_masks() const { return host_masks.to_host() == device_masks.to_host(); }
};

}  // namespace

TEST_CASE("magnitude on the device: per-layer and global masks equal the host's bit for bit")
{
    for (const bool ties : {false, true})
        for (const double keep : {1.0, 0.7}) {
            twins p(ties ? 31 : 32, ties);
            for (const double s : {0.0, 1.0 / 128, 0.3, 0.5, 0.9, 1.0})
                for (const auto sc : {prune::scope::per_layer, prune::scope::global}) {
                    CAPTURE(ties);
                    CAPTURE(keep);
                    CAPTURE(s);
                    CAPTURE(int(sc));
                    p.start_from(keep, 33);
                    prune::magnitude(p.host_masks, s, sc);
                    prune::magnitude(p.device_masks, s, sc);
                    CHECK(p.same_masks());
                    CHECK(prune::sparsity(p.device_masks) == prune::sparsity(p.host_masks));
                }
        }
}

TEST_CASE("N:M on the device: 2:4, 1:4 and 2:8 masks equal the host's bit for bit")
{
    for (const bool ties : {false, true}) {
        CAPTURE(ties);
        twins p(ties ? 34 : 35, ties);
        p.start_from(1.0, 36);
        prune::two_four(p.host_masks);
        prune::two_four(p.device_masks);
        CHECK(p.same_masks());
        CHECK(prune::satisfies_n_of_m<2, 4>(p.device_masks));
        p.start_from(0.8, 37);
        prune::n_of_m<1, 4>(p.host_masks);
        prune::n_of_m<1, 4>(p.device_masks);
        CHECK(p.same_masks());
        p.start_from(0.6, 38);
        prune::n_of_m<2, 8>(p.host_masks);
        prune::n_of_m<2, 8>(p.device_masks);
        CHECK(p.same_masks());
    }
}

TEST_CASE("report on the device: the same counts as the host's")
{
    twins p(39, false);
    p.start_from(0.4, 40);
    p.host_masks.apply();
    p.device_masks.apply();
    const auto h = prune::report(p.host_masks);
    const auto d = prune::report(p.device_masks);
    REQUIRE(d.layers.size() == h.layers.size());
    for (std::size_t l = 0; l < h.layers.size(); ++l) {
        CHECK(d.layers[l].kept == h.layers[l].kept);
        CHECK(d.layers[l].nonzero == h.layers[l].nonzero);
    }
    CHECK(d.parameter_nonzero == h.parameter_nonzero);
    CHECK(d.table() == h.table());
}

namespace {

template <class T>
std::vector<T> device_to_host(const T* p, std::size_t n)
{
    std::vector<T> out(n);
    TENET_CUDA_CHECK(cudaMemcpy(out.data(), p, n * sizeof(T), cudaMemcpyDefault));
    return out;
}

}  // namespace

TEST_CASE("masked optimizer on the device: pruned weights exactly zero, the rest as on the host")
{
    twins t(41, false);
    train::optimizer_options options;
    options.masked = true;
    options.clip_norm = 1.0f;
    train::optimizer host_opt(t.host, train::adamw{}, train::constant_lr{1e-2f}, options);
    train::optimizer device_opt(t.device, train::adamw{}, train::constant_lr{1e-2f}, options);
    prune::magnitude(host_opt.masks(), 0.7, prune::scope::global);
    prune::magnitude(device_opt.masks(), 0.7, prune::scope::global);
    host_opt.apply_masks();
    device_opt.apply_masks();
    const std::vector<char> keep = host_opt.masks().to_host();
    REQUIRE(device_opt.masks().to_host() == keep);
    std::mt19937_64 rng(3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int step = 0; step < 5; ++step) {
        std::vector<float> g(flat, 0.0f);
        for (std::size_t i = 0; i < flat; ++i) g[i] = normal(rng);  // pruned gradients too: ignored
        std::copy(g.begin(), g.end(), t.host.gradients());
        TENET_CUDA_CHECK(cudaMemcpy(t.device.gradients(), g.data(), flat * sizeof(float), cudaMemcpyDefault));
        host_opt.step();
        device_opt.step();
        const auto d = device_to_host(t.device.parameters(), flat);
        double worst = 0;
        for (std::size_t i = 0; i < flat; ++i) {
            const double h = t.host.parameters()[i];
            if (!keep[i]) CHECK(d[i] == 0.0f);
            worst = std::max(worst, std::abs(h - d[i]) / (1e-3 + std::abs(h)));
        }
        CHECK(worst < 1e-4);
        CHECK(device_opt.state().last_grad_norm == doctest::Approx(host_opt.state().last_grad_norm).epsilon(1e-4));
    }
}

TEST_CASE("pruning while graph-replayed steps run: the same parameters as eager steps")
{
    net<Device> eager_net(5), graph_net(5);
    train::trainer_options options;
    options.optimizer.masked = true;
    train::trainer eager(eager_net, train::adamw{}, train::constant_lr{1e-3f}, options);
    train::trainer graphed(graph_net, train::adamw{}, train::constant_lr{1e-3f}, options);
    graphed.capture();
    const prune::gradual_sparsity schedule{0.0, 0.75, 1, 3, 2};
    prune::pruner eager_pruner(eager.optimizer(), schedule, prune::scope::per_layer);
    prune::pruner graph_pruner(graphed.optimizer(), schedule, prune::scope::per_layer);
    Tensor<f32, input, Device> x;
    Tensor<std::int32_t, Shape<4>, Device> labels, valid;
    for (std::uint64_t step = 0; step < 10; ++step) {
        x = random_normal<input>(100 + step);
        labels = cast<std::int32_t>(random_uniform<Shape<4>>(200 + step, 0, 0.0f, 7.99f));
        valid = cast<std::int32_t>(random_uniform<Shape<4>>(300 + step, 0, 0.0f, 1.0f) < 0.9f);
        current_stream().synchronize();
        {
            stream_scope on(eager.stream());
            eager_pruner.update(step);
        }
        {
            stream_scope on(graphed.stream());
            graph_pruner.update(step);
        }
        eager.step(x, labels, valid);
        graphed.step(x, labels, valid);
        eager.stream().synchronize();
        graphed.stream().synchronize();
        CHECK(device_to_host(eager_net.parameters(), flat) == device_to_host(graph_net.parameters(), flat));
    }
    CHECK(prune::sparsity(graphed.optimizer().masks()) == doctest::Approx(0.75).epsilon(0.01));
}
