// One training step of the MLP 784-256-128-10 at batch 256 on the GPU:
// eager launches vs the step replayed as a CUDA Graph, for fp32, bf16_mixed
// and fp16_mixed (AdamW, softmax cross-entropy). Its peer is
// bench/peers/mlp_step_torch_gpu.py (PyTorch eager AMP and torch.compile).
// Prints one JSON line per (policy, mode): median step time over 5 runs of
// 200 steps, after 20 warm-up steps.
#include <tenet/tenet.hpp>

#include <algorithm>
#include <cstdio>
#include <vector>

using namespace tenet;

namespace {

constexpr std::size_t batch = 256;
using mlp = nn::Sequential<nn::Linear<784, 256>, nn::ReLU, nn::Linear<256, 128>, nn::ReLU, nn::Linear<128, 10>>;

template <class P>
void run(const char* policy, bool graph)
{
    nn::model<mlp, P, Shape<batch, 784>, Device> net(1);
    train::trainer trainer(net, train::adamw{}, train::constant_lr{1e-3f});
    if (graph) trainer.capture();
    Tensor<typename P::storage, Shape<batch, 784>, Device> x;
    Tensor<std::int32_t, Shape<batch>, Device> labels, valid;
    {
        stream_scope on(trainer.stream());
        x = random_normal<Shape<batch, 784>>(1);
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
    std::printf("{\"framework\": \"tenet\", \"policy\": \"%s\", \"mode\": \"%s\", \"step_us\": %.2f, "
                "\"samples_per_s\": %.0f}\n",
                policy, graph ? "graph" : "eager", us, batch / (us * 1e-6));
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
}

}  // namespace

int main()
{
    if (!has_device()) {
        std::puts("skipped: no CUDA device");
        return 0;
    }
    for (bool graph : {false, true}) {
        run<fp32>("fp32", graph);
        run<bf16_mixed>("bf16_mixed", graph);
        run<fp16_mixed>("fp16_mixed", graph);
    }
}
