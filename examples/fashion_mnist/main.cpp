// fashion_mnist: tenet's main job. An MLP 784-256-128-10 trained on
// Fashion-MNIST (Debian's dataset-fashion-mnist) with AdamW, a warm-up +
// cosine LR schedule and batches of 256, in fp32, bf16_mixed and fp16_mixed
// (dynamic loss scaling) -- all compiled in, chosen by --policy. It runs on
// the GPU (steps replayed as CUDA Graphs) when this file was compiled by nvcc
// and a GPU is present, otherwise on the host.
//
//   fashion_mnist [--policy fp32|bf16|fp16|all] [--epochs N] [--train-samples N]
//                 [--data DIR] [--seed S] [--host] [--eager] [--min-accuracy A]
//                 [--save PATH]
//
// Prints a progress bar per epoch, a table (policy, test accuracy, train
// time, samples/s) and, as its last line, one JSON object with the same
// figures. With --min-accuracy it exits 1 when any policy falls below it.
#include <tenet/tenet.hpp>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using namespace tenet;

namespace {

constexpr std::size_t batch = 256;
using mlp = nn::Sequential<nn::Linear<784, 256>, nn::ReLU, nn::Linear<256, 128>, nn::ReLU, nn::Linear<128, 10>>;

struct options {
    std::string policy = "all";
    std::size_t epochs = 15;
    std::size_t train_samples = 0;  // 0: all 60000
    std::string data = data::fashion_mnist_dir;
    std::uint64_t seed = 1;
    bool host = false;
    bool eager = false;
    double min_accuracy = 0.0;
    std::string save;
};

struct result {
    std::string policy;
    double accuracy = 0;
    double train_seconds = 0;
    double samples_per_second = 0;
};

[[noreturn]] void usage(const std::string& why)
{
    std::cerr << "fashion_mnist: " << why << "\n"
              << "usage: fashion_mnist [--policy fp32|bf16|fp16|all] [--epochs N] [--train-samples N] [--data DIR]\n"
              << "                     [--seed S] [--host] [--eager] [--min-accuracy A] [--save PATH]\n";
    std::exit(2);
}

options parse(int argc, char** argv)
{
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage(arg + " needs a value");
            return argv[++i];
        };
        if (arg == "--policy") o.policy = value();
        else if (arg == "--epochs") o.epochs = std::stoul(value());
        else if (arg == "--train-samples") o.train_samples = std::stoul(value());
        else if (arg == "--data") o.data = value();
        else if (arg == "--seed") o.seed = std::stoull(value());
        else if (arg == "--host") o.host = true;
        else if (arg == "--eager") o.eager = true;
        else if (arg == "--min-accuracy") o.min_accuracy = std::stod(value());
        else if (arg == "--save") o.save = value();
        else usage("unknown argument " + arg);
    }
    if (o.policy != "fp32" && o.policy != "bf16" && o.policy != "fp16" && o.policy != "all")
        usage("--policy must be fp32, bf16, fp16 or all");
    if (o.epochs == 0) usage("--epochs must be at least 1");
    return o;
}

template <class P, class Place>
result train_policy(const std::string& name, const data::mnist_dataset& set, const options& o)
{
    using storage = typename P::storage;
    using model_t = nn::model<mlp, P, Shape<batch, 784>, Place>;
    model_t net(o.seed);
    const std::size_t steps_per_epoch = (set.train.count + batch - 1) / batch;
    const auto total_steps = static_cast<std::uint64_t>(steps_per_epoch * o.epochs);
    train::trainer trainer(net, train::adamw{0.9f, 0.999f, 1e-8f, 1e-4f},
                           train::warmup_cosine_lr{2e-3f, steps_per_epoch, total_steps, 0.0f});
    if (!o.eager) trainer.capture();
    data::batch_loader<storage, batch, 784, Place> train_batches(set.train, data::normalize_pixels{}, trainer.stream());
    data::batch_loader<storage, batch, 784, Place> test_batches(set.test, data::normalize_pixels{}, trainer.stream());
    typename decltype(train_batches)::batch b;

    double train_seconds = 0;
    for (std::size_t epoch = 0; epoch < o.epochs; ++epoch) {
        profile::progress_bar bar(std::cout, name + " epoch " + std::to_string(epoch + 1) + "/" + std::to_string(o.epochs),
                                  steps_per_epoch);
        profile::host_timer timer;
        train_batches.start_epoch(o.seed, epoch);
        std::size_t done = 0;
        double loss = 0;
        while (train_batches.next(b)) {
            trainer.step(b.x(), b.labels(), b.valid());
            if (++done % (steps_per_epoch / 10 + 1) == 0) {  // reading the loss waits for the device
                loss = trainer.mean_loss();
                bar.update(done, loss, static_cast<double>(done * batch) / timer.seconds());
            }
        }
        loss = trainer.mean_loss();
        const double seconds = timer.seconds();
        train_seconds += seconds;
        bar.finish(loss, static_cast<double>(set.train.count) / seconds);
    }
    test_batches.start_epoch(0, 0, /*shuffle=*/false);
    while (test_batches.next(b)) trainer.evaluate(b.x(), b.labels(), b.valid());
    if (!o.save.empty()) trainer.save(o.save + "." + name);
    return {name, trainer.accuracy(), train_seconds,
            static_cast<double>(set.train.count * o.epochs) / train_seconds};
}

template <class Place>
std::vector<result> train_all(const data::mnist_dataset& set, const options& o)
{
    std::vector<result> out;
    if (o.policy == "fp32" || o.policy == "all") out.push_back(train_policy<fp32, Place>("fp32", set, o));
    if (o.policy == "bf16" || o.policy == "all") out.push_back(train_policy<bf16_mixed, Place>("bf16_mixed", set, o));
    if (o.policy == "fp16" || o.policy == "all") out.push_back(train_policy<fp16_mixed, Place>("fp16_mixed", set, o));
    return out;
}

}  // namespace

int main(int argc, char** argv)
{
    const options o = parse(argc, argv);
    try {
        data::mnist_dataset set = data::load_mnist(o.data);
        if (o.train_samples) set.train = data::subset(set.train, o.train_samples);
        std::vector<result> results;
        std::string where = "host";
#if TENET_CUDA_COMPILER
        if (!o.host && has_device()) {
            where = "cuda";
            results = train_all<Device>(set, o);
        }
#endif
        if (where == "host") results = train_all<Host>(set, o);

        std::printf("\n%-12s %14s %14s %14s\n", "policy", "test accuracy", "train time s", "samples/s");
        std::ostringstream json;
        json << "{\"example\":\"fashion_mnist\",\"backend\":\"" << where << "\",\"epochs\":" << o.epochs
             << ",\"train_samples\":" << set.train.count << ",\"batch\":" << batch << ",\"results\":[";
        bool ok = true;
        for (std::size_t i = 0; i < results.size(); ++i) {
            const result& r = results[i];
            std::printf("%-12s %14.4f %14.1f %14.0f\n", r.policy.c_str(), r.accuracy, r.train_seconds,
                        r.samples_per_second);
            json << (i ? "," : "") << "{\"policy\":\"" << r.policy << "\",\"test_accuracy\":" << r.accuracy
                 << ",\"train_seconds\":" << r.train_seconds << ",\"samples_per_second\":" << r.samples_per_second
                 << "}";
            ok = ok && r.accuracy >= o.min_accuracy;
        }
        json << "]}";
        std::cout << json.str() << std::endl;
        if (!ok) {
            std::cerr << "fashion_mnist: test accuracy below --min-accuracy " << o.min_accuracy << "\n";
            return 1;
        }
    } catch (const tenet::error& e) {
        std::cerr << e.what() << "\n";
        return 1;
    }
    return 0;
}
