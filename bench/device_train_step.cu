// One training step at batch 256 on the GPU: eager launches vs the step
// replayed as a CUDA Graph, for fp32, bf16_mixed and fp16_mixed (AdamW,
// softmax cross-entropy), of the MLP 784-256-128-10 and of the Fashion-MNIST
// example's CNN (28x28x1 images; bench_device_train_step --model cnn). Its
// peer is bench/peers/mlp_step_torch_gpu.py (PyTorch eager AMP and
// torch.compile, --model cnn alike). Prints one JSON line per (policy,
// mode): median step time over 5 runs of 200 steps, after 20 warm-up steps.
// --quick measures bf16_mixed alone.
#include <tenet/tenet.hpp>

#include "support/quick_run.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ratio>
#include <vector>

using namespace tenet;

namespace {

constexpr std::size_t batch = 256;
using mlp = nn::Sequential<nn::Linear<784, 256>, nn::ReLU, nn::Linear<256, 128>, nn::ReLU, nn::Linear<128, 10>>;
using cnn = nn::Sequential<nn::Conv2d<1, 32, 3, 1, 1>, nn::ReLU, nn::BatchNorm2d<32>, nn::MaxPool2d<2>,
                           nn::Conv2d<32, 64, 3, 1, 1>, nn::ReLU, nn::BatchNorm2d<64>, nn::MaxPool2d<2>, nn::Flatten,
                           nn::Dropout<std::ratio<1, 4>>, nn::Linear<3136, 128>, nn::ReLU, nn::Linear<128, 10>>;

template <class Net, class In, class P>
void run(const char* model, const char* policy, bool graph)
{
    nn::model<Net, P, In, Device> net(1);
    train::trainer trainer(net, train::adamw{}, train::constant_lr{1e-3f});
    if (graph) trainer.capture();
    Tensor<typename P::storage, In, Device> x;
    Tensor<std::int32_t, Shape<batch>, Device> labels, valid;
    {
        stream_scope on(trainer.stream());
        x = random_normal<In>(1);
        labels = cast<std::int32_t>(random_uniform<Shape<batch>>(2, 0, 0.0f, 9.99f));
        valid = 1;
    }
    for (int i = 0; i < 20; ++i) trainer.step(x, labels, valid);
    trainer.stream().synchronize();
    cudaEvent_t start, stop;
    TENET_CUDA_CHECK(cudaEventCreate(&start));
    TENET_CUDA_CHECK(cudaEventCreate(&stop));
    std::vector<float> per_step;
    for (int run = 0; run < 5; ++run) {
        TENET_CUDA_CHECK(cudaEventRecord(start, trainer.stream().get()));
        for (int i = 0; i < 200; ++i) trainer.step(x, labels, valid);
        TENET_CUDA_CHECK(cudaEventRecord(stop, trainer.stream().get()));
        TENET_CUDA_CHECK(cudaEventSynchronize(stop));
        float ms = 0;
        TENET_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        per_step.push_back(ms / 200);
    }
    std::sort(per_step.begin(), per_step.end());
    const double us = per_step[2] * 1e3;
    std::printf("{\"bench\": \"device_train_step\", \"framework\": \"tenet\", \"model\": \"%s\", \"policy\": \"%s\", \"mode\": \"%s\", "
                "\"step_us\": %.2f, \"samples_per_s\": %.0f}\n",
                model, policy, graph ? "graph" : "eager", us, batch / (us * 1e-6));
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
}

}  // namespace

template <class Net, class In>
void run_policies(const char* model, bool quick)
{
    for (bool graph : {false, true}) {
        if (!quick) run<Net, In, fp32>(model, "fp32", graph);
        run<Net, In, bf16_mixed>(model, "bf16_mixed", graph);
        if (!quick) run<Net, In, fp16_mixed>(model, "fp16_mixed", graph);
    }
}

int main(int argc, char** argv)
{
    if (!has_device()) {
        std::puts("skipped: no CUDA device");
        return 0;
    }
    const bool cnn_model = argc > 2 && std::strcmp(argv[1], "--model") == 0 && std::strcmp(argv[2], "cnn") == 0;
    const bool quick = bench::quick_run(argc, argv);
    if (cnn_model) run_policies<cnn, Shape<batch, 28, 28, 1>>("cnn", quick);
    else run_policies<mlp, Shape<batch, 784>>("mlp", quick);
}
