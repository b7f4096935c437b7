// Sparse inference on the host: the Fashion-MNIST MLP shapes (784-256-128-10,
// batches of 256, random weights and inputs), each Linear pruned per layer
// by magnitude to 0/50/80/90/95%, as a CSR sparse_model against the dense
// nn::model forward (Eigen's f32 GEMMs) of the same pruned weights.
// Median of 7 passes of 20 forwards after a warm-up; one JSON line per
// sparsity, then a table side by side.
#include <tenet/tenet.hpp>
#include <tenet/prune/magnitude.hpp>
#include <tenet/prune/masks.hpp>
#include <tenet/prune/sparse_model.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

using namespace tenet;

namespace {

constexpr std::size_t batch = 256;
using mlp = nn::Sequential<nn::Linear<784, 256>, nn::ReLU, nn::Linear<256, 128>, nn::ReLU, nn::Linear<128, 10>>;
using input = Shape<batch, 784>;
using net_t = nn::model<mlp, fp32, input, Host>;

// Median seconds of one forward.
template <class F>
double median_forward_seconds(F&& forward)
{
    constexpr int passes = 7, forwards = 20;
    for (int i = 0; i < 3; ++i) forward();
    std::vector<double> seconds;
    for (int pass = 0; pass < passes; ++pass) {
        profile::host_timer timer;
        for (int i = 0; i < forwards; ++i) forward();
        seconds.push_back(timer.seconds() / forwards);
    }
    std::sort(seconds.begin(), seconds.end());
    return seconds[passes / 2];
}

struct row {
    double sparsity, dense_ms, sparse_ms;
    std::size_t nonzeros, sparse_bytes;
    double max_difference;
};

}  // namespace

int main()
{
    Tensor<f32, input, Host> x;
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
    for (std::size_t i = 0; i < input::numel; ++i) x.data()[i] = pixel(rng);

    net_t net(1);
    net.eval();
    constexpr std::size_t dense_bytes = net_t::parameter_bytes;
    std::vector<row> rows;
    for (const double s : {0.0, 0.5, 0.8, 0.9, 0.95}) {
        net.initialize(1);
        prune::masks<net_t> m(net);
        prune::magnitude(m, s, prune::scope::per_layer);
        m.apply();
        prune::sparse_model<mlp, input> sparse(net, m);

        const double dense_s = median_forward_seconds([&] { net.forward(x); });
        const double sparse_s = median_forward_seconds([&] { sparse.forward(x); });
        const auto& want = net.forward(x);
        const auto& got = sparse.forward(x);
        double difference = 0;
        for (std::size_t i = 0; i < batch * 10; ++i)
            difference = std::max(difference, static_cast<double>(std::fabs(want.data()[i] - got.data()[i])));
        rows.push_back({s, dense_s * 1e3, sparse_s * 1e3, sparse.nonzeros(), sparse.bytes(), difference});
        std::printf("{\"framework\": \"tenet\", \"model\": \"mlp-784-256-128-10\", \"batch\": %zu, \"sparsity\": %.2f, "
                    "\"dense_forward_ms\": %.4f, \"sparse_forward_ms\": %.4f, \"sparse_speedup\": %.3f, "
                    "\"nonzeros\": %zu, \"dense_bytes\": %zu, \"sparse_bytes\": %zu, \"max_abs_difference\": %.3g, "
                    "\"threads\": %u}\n",
                    batch, s, dense_s * 1e3, sparse_s * 1e3, dense_s / sparse_s, sparse.nonzeros(), dense_bytes,
                    sparse.bytes(), difference, std::thread::hardware_concurrency());
    }
    std::printf("\n%9s %10s %10s %9s %10s %12s %11s\n", "sparsity", "dense ms", "sparse ms", "speedup", "nonzeros",
                "sparse bytes", "of dense");
    for (const row& r : rows)
        std::printf("%8.0f%% %10.3f %10.3f %8.2fx %10zu %12zu %10.1f%%\n", r.sparsity * 100, r.dense_ms, r.sparse_ms,
                    r.dense_ms / r.sparse_ms, r.nonzeros, r.sparse_bytes,
                    100.0 * static_cast<double>(r.sparse_bytes) / static_cast<double>(dense_bytes));
}
