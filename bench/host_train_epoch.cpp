// One training epoch of the MLP 784-256-128-10 (ReLU) on the host, as
// bench/peers/mlp_epoch.py runs it in PyTorch and JAX: Fashion-MNIST (60000
// samples, shuffled each epoch, the last batch of 96 padded and masked),
// batch 256, AdamW(lr 1e-3, weight decay 1e-2), softmax cross-entropy, f32
// (and bf16_mixed for reference). One warm-up epoch, then the median of 3,
// printed as the peers print theirs: one JSON line per mode.
#include <tenet/tenet.hpp>

#include <algorithm>
#include <cstdio>
#include <thread>
#include <vector>

using namespace tenet;

namespace {

constexpr std::size_t batch = 256;
using mlp = nn::Sequential<nn::Linear<784, 256>, nn::ReLU, nn::Linear<256, 128>, nn::ReLU, nn::Linear<128, 10>>;

template <class P>
void run(const char* mode, const data::mnist_split& train_set)
{
    nn::model<mlp, P, Shape<batch, 784>, Host> net(1);
    train::trainer trainer(net, train::adamw{0.9f, 0.999f, 1e-8f, 1e-2f}, train::constant_lr{1e-3f});
    data::batch_loader<typename P::storage, batch, 784, Host> loader(train_set);
    typename decltype(loader)::batch b;
    std::vector<double> seconds;
    for (std::uint64_t epoch = 0; epoch < 4; ++epoch) {
        profile::host_timer timer;
        loader.start_epoch(7, epoch);
        while (loader.next(b)) trainer.step(b.x(), b.labels(), b.valid());
        const double loss = trainer.mean_loss();  // (waits: nothing is in flight on the host anyway)
        if (epoch > 0) seconds.push_back(timer.seconds());
        std::fprintf(stderr, "%s epoch %llu: %.3f s, loss %.4f\n", mode, static_cast<unsigned long long>(epoch),
                     timer.seconds(), loss);
    }
    std::sort(seconds.begin(), seconds.end());
    const double median = seconds[1];
    std::printf("{\"framework\": \"tenet\", \"mode\": \"%s\", \"epoch_s\": %.4f, \"samples_per_s\": %.1f, "
                "\"threads\": %u, \"samples\": %zu, \"data\": \"fashion-mnist\"}\n",
                mode, median, static_cast<double>(train_set.count) / median, std::thread::hardware_concurrency(),
                train_set.count);
}

}  // namespace

int main()
{
    const data::mnist_dataset set = data::load_mnist(data::fashion_mnist_dir);
    run<fp32>("host-f32", set.train);
    run<bf16_mixed>("host-bf16_mixed", set.train);
}
