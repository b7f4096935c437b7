// What fine-tuning saves. A CNN is pretrained on Fashion-MNIST's classes 0-4
// (T-shirt, trouser, pullover, dress, coat) and its backbone saved as
// safetensors; then a small labelled set of classes 5-9 (sandal, shirt,
// sneaker, bag, ankle boot) is learned four ways, each for the same steps:
//   scratch        the same CNN from random weights;
//   frozen         the pretrained backbone frozen (nn::Frozen: no backward
//                  through it at all), a new head trained;
//   fine-tune      every layer trained, the backbone at a tenth of the rate
//                  (a parameter group);
//   pytorch-frozen as frozen, from a backbone PyTorch trained on classes 0-4
//                  (pytorch_backbone.safetensors, make_pytorch_backbone.py).
// It prints test accuracy (classes 5-9) against steps and training seconds,
// the time each needed to reach the scratch run's final accuracy, then one
// JSON line. Host backend, fp32:
//
//   fine_tune [--data DIR] [--labelled N] [--steps N] [--eval-every N] [--pretrain-epochs N]
//             [--seed S] [--out DIR] [--pytorch-backbone FILE] [--min-accuracy A]
//
// --min-accuracy: exit 1 when the frozen run's final accuracy is below it.
#include <tenet/tenet.hpp>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using namespace tenet;

namespace {

using backbone = nn::Sequential<nn::Conv2d<1, 32, 3, 1, 1>, nn::ReLU, nn::BatchNorm2d<32>, nn::MaxPool2d<2>,
                                nn::Conv2d<32, 64, 3, 1, 1>, nn::ReLU, nn::BatchNorm2d<64>, nn::MaxPool2d<2>>;
template <class Backbone>
using cnn_on = nn::Sequential<Backbone, nn::Flatten, nn::Linear<3136, 128>, nn::ReLU, nn::Linear<128, 10>>;
using cnn = cnn_on<backbone>;
using frozen_cnn = cnn_on<nn::Frozen<backbone>>;
constexpr std::size_t pretrain_batch = 256, batch = 50;
template <class Net, std::size_t B>
using model_at = nn::model<Net, fp32, Shape<B, 28, 28, 1>, Host>;
template <std::size_t B>
using loader = data::batch_loader<f32, B, 784, Host>;

struct options {
    std::string data = data::fashion_mnist_dir;
    std::size_t labelled = 1000;
    std::size_t steps = 300;
    std::size_t eval_every = 50;
    std::size_t pretrain_epochs = 1;
    std::uint64_t seed = 1;
    std::string out = ".";
    std::string pytorch_backbone = TENET_FINE_TUNE_DIR "/pytorch_backbone.safetensors";
    double min_accuracy = 0;
};

[[noreturn]] void usage(const std::string& why)
{
    std::cerr << "fine_tune: " << why << "\n"
              << "usage: fine_tune [--data DIR] [--labelled N] [--steps N] [--eval-every N] [--pretrain-epochs N]\n"
              << "                 [--seed S] [--out DIR] [--pytorch-backbone FILE] [--min-accuracy A]\n";
    std::exit(2);
}

options parse(int argc, char** argv)
{
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage(arg + " needs a value");
            return argv[++i];
        };
        if (arg == "--data") o.data = value();
        else if (arg == "--labelled") o.labelled = std::stoul(value());
        else if (arg == "--steps") o.steps = std::stoul(value());
        else if (arg == "--eval-every") o.eval_every = std::stoul(value());
        else if (arg == "--pretrain-epochs") o.pretrain_epochs = std::stoul(value());
        else if (arg == "--seed") o.seed = std::stoull(value());
        else if (arg == "--out") o.out = value();
        else if (arg == "--pytorch-backbone") o.pytorch_backbone = value();
        else if (arg == "--min-accuracy") o.min_accuracy = std::stod(value());
        else usage("unknown argument " + arg);
    }
    if (o.labelled == 0 || o.steps == 0 || o.eval_every == 0) usage("--labelled, --steps and --eval-every must be positive");
    return o;
}

// The samples of `split` whose label lies in [first, last], at most `limit`.
data::mnist_split classes(const data::mnist_split& split, int first, int last, std::size_t limit)
{
    data::mnist_split out;
    for (std::size_t i = 0; i < split.count && out.count < limit; ++i) {
        if (split.labels[i] < first || split.labels[i] > last) continue;
        const auto pixels = split.images.begin() + static_cast<std::ptrdiff_t>(i * data::mnist_pixels);
        out.images.insert(out.images.end(), pixels, pixels + data::mnist_pixels);
        out.labels.push_back(split.labels[i]);
        ++out.count;
    }
    return out;
}

template <class Trainer, std::size_t B>
double accuracy(Trainer& t, loader<B>& test)
{
    typename loader<B>::batch b;
    test.start_epoch(0, 0, /*shuffle=*/false);
    while (test.next(b)) t.evaluate(reshape<Shape<B, 28, 28, 1>>(b.x()), b.labels(), b.valid());
    return t.end_epoch().accuracy;
}

// Pretrains the CNN on classes 0-4 and writes its backbone as safetensors
// (a model of the backbone alone: the same names, "0.0.weight", ...).
std::string pretrain(const data::mnist_dataset& set, const options& o)
{
    const data::mnist_split first_half = classes(set.train, 0, 4, set.train.count);
    model_at<cnn, pretrain_batch> net(o.seed);
    const std::size_t per_epoch = (first_half.count + pretrain_batch - 1) / pretrain_batch;
    const std::uint64_t steps = per_epoch * o.pretrain_epochs;
    train::trainer t(net, train::adamw{0.9f, 0.999f, 1e-8f, 1e-4f}, train::warmup_cosine_lr{2e-3f, steps / 10, steps, 0.0f});
    loader<pretrain_batch> batches(first_half, data::normalize_pixels{});
    typename loader<pretrain_batch>::batch b;
    profile::host_timer timer;
    for (std::size_t epoch = 0; epoch < o.pretrain_epochs; ++epoch) {
        batches.start_epoch(o.seed, epoch);
        while (batches.next(b)) t.step(reshape<Shape<pretrain_batch, 28, 28, 1>>(b.x()), b.labels(), b.valid());
    }
    const data::mnist_split first_half_test = classes(set.test, 0, 4, set.test.count);
    loader<pretrain_batch> test(first_half_test, data::normalize_pixels{});
    std::printf("pretrained on classes 0-4: %zu images, %zu epoch(s), %.1f s, test accuracy %.4f\n", first_half.count,
                o.pretrain_epochs, timer.seconds(), accuracy(t, test));
    const std::string whole = o.out + "/pretrained_cnn.safetensors", path = o.out + "/pretrained_backbone.safetensors";
    io::save_safetensors(net, whole);
    nn::model<nn::Sequential<backbone>, fp32, Shape<1, 28, 28, 1>, Host> alone;
    io::load_safetensors(alone, whole, /*strict=*/false);  // the backbone's tensors; the head's left out
    io::save_safetensors(alone, path);
    return path;
}

struct point {
    std::size_t step;
    double seconds;  // training only (evaluation not counted)
    double accuracy;
};

struct run {
    std::string method;
    std::vector<point> curve;
};

// `steps` steps of AdamW (warm-up, cosine decay) on the labelled set,
// evaluated on the test set every eval_every steps.
template <class Net>
run fine_tune(const std::string& method, model_at<Net, batch>& net, const data::mnist_split& labelled,
              const data::mnist_split& test_set, const options& o, train::trainer_options topt = {})
{
    train::trainer t(net, train::adamw{0.9f, 0.999f, 1e-8f, 1e-4f},
                     train::warmup_cosine_lr{2e-3f, o.steps / 10, o.steps, 0.0f}, topt);
    loader<batch> batches(labelled, data::normalize_pixels{});
    loader<batch> test(test_set, data::normalize_pixels{});
    typename loader<batch>::batch b;
    run r{method, {}};
    double seconds = 0;
    std::uint64_t epoch = 0;
    batches.start_epoch(o.seed, epoch);
    for (std::size_t step = 1; step <= o.steps; ++step) {
        profile::host_timer timer;
        if (!batches.next(b)) {
            batches.start_epoch(o.seed, ++epoch);
            batches.next(b);
        }
        t.step(reshape<Shape<batch, 28, 28, 1>>(b.x()), b.labels(), b.valid());
        t.mean_loss();  // (waits: the step's time is the step's)
        seconds += timer.seconds();
        if (step % o.eval_every == 0 || step == o.steps) r.curve.push_back({step, seconds, accuracy(t, test)});
    }
    t.end_epoch();
    return r;
}

// The first point at or above `target`, or none.
const point* reaching(const run& r, double target)
{
    for (const point& p : r.curve)
        if (p.accuracy >= target) return &p;
    return nullptr;
}

}  // namespace

int main(int argc, char** argv)
{
    const options o = parse(argc, argv);
    try {
        const data::mnist_dataset set = data::load_mnist(o.data);
        const std::string pretrained = pretrain(set, o);
        const data::mnist_split labelled = classes(set.train, 5, 9, o.labelled);
        const data::mnist_split test_set = classes(set.test, 5, 9, set.test.count);
        std::printf("fine-tuning on %zu labelled images of classes 5-9 for %zu steps of %zu; %zu test images\n",
                    labelled.count, o.steps, batch, test_set.count);

        std::vector<run> runs;
        {
            model_at<cnn, batch> net(o.seed + 1);
            runs.push_back(fine_tune("scratch", net, labelled, test_set, o));
        }
        {
            model_at<frozen_cnn, batch> net(o.seed + 1);  // the head starts as the scratch run's
            io::load_safetensors(net, pretrained, /*strict=*/false);
            runs.push_back(fine_tune("frozen", net, labelled, test_set, o));
        }
        {
            model_at<cnn, batch> net(o.seed + 1);
            io::load_safetensors(net, pretrained, /*strict=*/false);
            train::trainer_options slower_backbone;
            slower_backbone.optimizer.groups = train::parameter_groups{{{"0.*", 0.1f, {}}}};
            runs.push_back(fine_tune("fine-tune", net, labelled, test_set, o, slower_backbone));
        }
        {
            model_at<frozen_cnn, batch> net(o.seed + 1);
            const auto report = io::load_safetensors(net, o.pytorch_backbone, /*strict=*/false);
            if (!report.missing.empty() && report.missing.front().rfind("0.", 0) == 0)
                throw error("fine_tune: " + o.pytorch_backbone + " lacks the backbone's " + report.missing.front());
            runs.push_back(fine_tune("pytorch-frozen", net, labelled, test_set, o));
        }

        std::printf("\ntest accuracy (classes 5-9) by step; training seconds in brackets\n%-6s", "step");
        for (const run& r : runs) std::printf(" %22s", r.method.c_str());
        std::printf("\n");
        for (std::size_t i = 0; i < runs.front().curve.size(); ++i) {
            std::printf("%-6zu", runs.front().curve[i].step);
            for (const run& r : runs) std::printf("        %.4f (%6.1f s)", r.curve[i].accuracy, r.curve[i].seconds);
            std::printf("\n");
        }
        const double target = runs.front().curve.back().accuracy;
        std::printf("\nreaching the scratch run's final accuracy %.4f:\n", target);
        std::ostringstream json;
        json << "{\"example\":\"fine_tune\",\"backend\":\"host\",\"labelled\":" << labelled.count
             << ",\"steps\":" << o.steps << ",\"batch\":" << batch << ",\"target_accuracy\":" << target << ",\"runs\":[";
        for (std::size_t k = 0; k < runs.size(); ++k) {
            const run& r = runs[k];
            const point* p = reaching(r, target);
            if (p) std::printf("  %-15s step %5zu, %6.1f s\n", r.method.c_str(), p->step, p->seconds);
            else std::printf("  %-15s not within %zu steps\n", r.method.c_str(), o.steps);
            json << (k ? "," : "") << "{\"method\":\"" << r.method << "\",\"final_accuracy\":" << r.curve.back().accuracy
                 << ",\"train_seconds\":" << r.curve.back().seconds << ",\"steps_to_target\":"
                 << (p ? std::to_string(p->step) : "null") << ",\"seconds_to_target\":"
                 << (p ? std::to_string(p->seconds) : "null") << "}";
        }
        json << "]}";
        std::cout << json.str() << std::endl;
        if (runs[1].curve.back().accuracy < o.min_accuracy) {
            std::cerr << "fine_tune: the frozen run's accuracy is below --min-accuracy " << o.min_accuracy << "\n";
            return 1;
        }
    } catch (const tenet::error& e) {
        std::cerr << e.what() << "\n";
        return 1;
    }
    return 0;
}
