// Inference over the Fashion-MNIST test set (10000 samples, batches of 256)
// on the host: the fp32 MLP 784-256-128-10 against its int8 form (PTQ,
// min-max calibration on 8 batches): int8 GEMMs with exact int32 sums and one
// fused epilogue per layer, vs Eigen's f32 GEMMs with cuBLASLt-style epilogues.
// Median of 5 passes after a warm-up, one JSON line per model, then the ratio.
#include <tenet/tenet.hpp>

#include <algorithm>
#include <cstdio>
#include <thread>
#include <vector>

using namespace tenet;

namespace {

constexpr std::size_t batch = 256;
using mlp = nn::Sequential<nn::Linear<784, 256>, nn::ReLU, nn::Linear<256, 128>, nn::ReLU, nn::Linear<128, 10>>;
using input = Shape<batch, 784>;

template <class Model>
double median_pass_seconds(const char* name, Model& m, const data::mnist_split& test_set)
{
    data::batch_loader<f32, batch, 784, Host> loader(test_set);
    typename decltype(loader)::batch b;
    std::vector<double> seconds;
    for (int pass = 0; pass < 6; ++pass) {
        loader.start_epoch(0, 0, /*shuffle=*/false);
        profile::host_timer timer;
        float checksum = 0;
        while (loader.next(b)) checksum += m.forward(b.x()).data()[0];
        if (pass > 0) seconds.push_back(timer.seconds());
        std::fprintf(stderr, "%s pass %d: %.4f s (checksum %g)\n", name, pass, timer.seconds(), checksum);
    }
    std::sort(seconds.begin(), seconds.end());
    const double median = seconds[seconds.size() / 2];
    std::printf("{\"framework\": \"tenet\", \"model\": \"%s\", \"pass_s\": %.5f, \"samples_per_s\": %.0f, "
                "\"threads\": %u, \"samples\": %zu}\n",
                name, median, static_cast<double>(test_set.count) / median, std::thread::hardware_concurrency(),
                test_set.count);
    return median;
}

}  // namespace

int main()
{
    const data::mnist_dataset set = data::load_mnist(data::fashion_mnist_dir);
    nn::model<mlp, fp32, input, Host> net(1);
    net.eval();

    nn::model<mlp, quant::qat<fp32, quant::min_max_observer<>>, input, Host> calibrated;
    quant::copy_parameters(calibrated, net);
    quant::prepare_calibration(calibrated);
    data::batch_loader<f32, batch, 784, Host> loader(set.train);
    decltype(loader)::batch b;
    loader.start_epoch(1, 0);
    for (int i = 0; i < 8 && loader.next(b); ++i) calibrated.forward(b.x());
    quant::int8_model<mlp, input, Host> int8(calibrated);

    const double f32_s = median_pass_seconds("fp32", net, set.test);
    const double int8_s = median_pass_seconds("int8", int8, set.test);
    std::printf("{\"int8_speedup_over_fp32\": %.3f, \"weight_bytes_fp32\": %zu, \"weight_bytes_int8\": %zu}\n",
                f32_s / int8_s, (784 * 256 + 256 * 128 + 128 * 10) * sizeof(f32), decltype(int8)::weight_bytes);
}
