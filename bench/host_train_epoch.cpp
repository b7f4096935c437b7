// One training epoch on the host, as bench/peers/mlp_epoch.py runs it in
// PyTorch and JAX, on Fashion-MNIST (shuffled each epoch, the last batch
// padded and masked), batch 256, AdamW(lr 1e-3, weight decay 1e-2), softmax
// cross-entropy, f32 (and bf16_mixed and fp16_mixed, dynamic loss scaling). One warm-up epoch, then
// the median of 3, printed as the peers print theirs: one JSON line per mode.
//   bench_host_train_epoch [--model mlp|cnn|vit] [--samples N] [--policy all|f32|bf16_mixed|fp16_mixed]
//                          [--host-threads N] [--epochs N]
// --host-threads: trainer_options::host_threads (0, the default: the steps
// tune their thread count; N: always N, as before the tuner). --epochs: the
// timed epochs after the warm-up (3; the median is printed).
// mlp: 784-256-128-10 (ReLU), all 60000 samples. cnn: the Fashion-MNIST
// example's CNN (conv 3x3 32 + ReLU + BatchNorm + max pool, conv 3x3 64 +
// ReLU + BatchNorm + max pool, dropout 0.25, dense 128 + ReLU, dense 10) on
// 28x28x1 images, on the first 10240 samples by default (an epoch of all
// 60000 takes minutes on two cores). vit: the Fashion-MNIST example's Vision
// Transformer (7x7 patches embedded to 64, learned positions, 4 pre-norm
// encoder layers of 4 heads with MLP 128 and dropout 0.1, mean pooling,
// LayerNorm, dense 10), on the first 10240 samples by default.
#include "support/host_machine.hpp"

#include <tenet/tenet.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ratio>
#include <string>
#include <thread>
#include <vector>

using namespace tenet;

namespace {

constexpr std::size_t batch = 256;
using mlp = nn::Sequential<nn::Linear<784, 256>, nn::ReLU, nn::Linear<256, 128>, nn::ReLU, nn::Linear<128, 10>>;
using cnn = nn::Sequential<nn::Conv2d<1, 32, 3, 1, 1>, nn::ReLU, nn::BatchNorm2d<32>, nn::MaxPool2d<2>,
                           nn::Conv2d<32, 64, 3, 1, 1>, nn::ReLU, nn::BatchNorm2d<64>, nn::MaxPool2d<2>, nn::Flatten,
                           nn::Dropout<std::ratio<1, 4>>, nn::Linear<3136, 128>, nn::ReLU, nn::Linear<128, 10>>;
using vit_encoder = nn::TransformerEncoderLayer<64, 4, 128, false, std::ratio<1, 10>>;
using vit = nn::Sequential<nn::PatchEmbed<7, 1, 64>, nn::PositionalEmbedding<16, 64>, vit_encoder, vit_encoder,
                           vit_encoder, vit_encoder, nn::MeanPool<1>, nn::LayerNorm<64>, nn::Linear<64, 10>>;

struct settings {
    int host_threads = 0;
    std::uint64_t epochs = 3;
};

template <class Net, class In, class P>
void run(const char* model, const char* mode, const data::mnist_split& train_set, settings how)
{
    nn::model<Net, P, In, Host> net(1);
    train::trainer trainer(net, train::adamw{0.9f, 0.999f, 1e-8f, 1e-2f}, train::constant_lr{1e-3f},
                           train::trainer_options{.host_threads = how.host_threads});
    data::batch_loader<typename P::storage, batch, 784, Host> loader(train_set);
    typename decltype(loader)::batch b;
    std::vector<double> seconds;
    for (std::uint64_t epoch = 0; epoch <= how.epochs; ++epoch) {
        profile::host_timer timer;
        loader.start_epoch(7, epoch);
        while (loader.next(b)) trainer.step(reshape<In>(b.x()), b.labels(), b.valid());
        const double loss = trainer.end_epoch().mean_loss;  // (waits: nothing is in flight on the host anyway)
        if (epoch > 0) seconds.push_back(timer.seconds());
        std::fprintf(stderr, "%s %s epoch %llu: %.3f s, loss %.4f, threads %d (%zu probes)\n", model, mode,
                     static_cast<unsigned long long>(epoch), timer.seconds(), loss,
                     trainer.host_thread_tuner().chosen(), trainer.host_thread_tuner().probes());
    }
    std::sort(seconds.begin(), seconds.end());
    const double median = seconds[seconds.size() / 2];
    std::printf("{\"framework\": \"tenet\", \"model\": \"%s\", \"mode\": \"%s\", \"epoch_s\": %.4f, "
                "\"samples_per_s\": %.1f, \"threads\": %u, \"host_threads\": \"%s\", \"chosen_threads\": %d, "
                "\"samples\": %zu, \"data\": \"fashion-mnist\", \"isa\": \"%s\", \"bf16\": \"%s\", \"f16\": \"%s\"}\n",
                model, mode, median, static_cast<double>(train_set.count) / median, std::thread::hardware_concurrency(),
                how.host_threads ? std::to_string(how.host_threads).c_str() : "tuned",
                trainer.host_thread_tuner().chosen(), train_set.count, bench::vector_isa(), bench::bf16_support(),
                bench::f16_support());
}

// --policy all runs f32, bf16_mixed and fp16_mixed, one after another.
template <class Net, class In>
void run_policies(const char* model, const std::string& policy, const data::mnist_split& train_set, settings how)
{
    if (policy == "all" || policy == "f32") run<Net, In, fp32>(model, "host-f32", train_set, how);
    if (policy == "all" || policy == "bf16_mixed") run<Net, In, bf16_mixed>(model, "host-bf16_mixed", train_set, how);
    if (policy == "all" || policy == "fp16_mixed") run<Net, In, fp16_mixed>(model, "host-fp16_mixed", train_set, how);
}

}  // namespace

int main(int argc, char** argv)
{
    std::string model = "mlp";
    std::string policy = "all";
    std::size_t samples = 0;
    settings how;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (std::strcmp(argv[i], "--model") == 0) model = argv[i + 1];
        else if (std::strcmp(argv[i], "--samples") == 0) samples = std::stoul(argv[i + 1]);
        else if (std::strcmp(argv[i], "--policy") == 0) policy = argv[i + 1];
        else if (std::strcmp(argv[i], "--host-threads") == 0) how.host_threads = std::stoi(argv[i + 1]);
        else if (std::strcmp(argv[i], "--epochs") == 0) how.epochs = std::max(1ul, std::stoul(argv[i + 1]));
    }
    if (policy != "all" && policy != "f32" && policy != "bf16_mixed" && policy != "fp16_mixed") {
        std::fprintf(stderr, "bench_host_train_epoch: --policy is all, f32, bf16_mixed or fp16_mixed, not %s\n",
                     policy.c_str());
        return 2;
    }
    data::mnist_dataset set = data::load_mnist(data::fashion_mnist_dir);
    if (model == "vit") {
        set.train = data::subset(set.train, samples ? samples : 10240);
        run_policies<vit, Shape<batch, 28, 28, 1>>("vit", policy, set.train, how);
    } else if (model == "cnn") {
        set.train = data::subset(set.train, samples ? samples : 10240);
        run_policies<cnn, Shape<batch, 28, 28, 1>>("cnn", policy, set.train, how);
    } else {
        if (samples) set.train = data::subset(set.train, samples);
        run_policies<mlp, Shape<batch, 784>>("mlp", policy, set.train, how);
    }
}
