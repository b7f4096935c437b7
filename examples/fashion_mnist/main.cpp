// fashion_mnist: tenet's main job. A model trained on Fashion-MNIST (Debian's
// dataset-fashion-mnist) with AdamW, a warm-up + cosine LR schedule and
// batches of 256, in fp32, bf16_mixed and fp16_mixed (dynamic loss scaling)
// -- all compiled in, chosen by --policy. --model picks the model: mlp (the
// default: 784-256-128-10), cnn (28x28x1 images: conv 3x3 32 + ReLU +
// BatchNorm + max pool 2, conv 3x3 64 + ReLU + BatchNorm + max pool 2,
// dropout, dense 128 + ReLU, dense 10), vit (a small Vision Transformer:
// 7x7 patches, 4 encoder layers of width 64, 20 epochs) or all. It runs on the GPU (steps
// replayed as CUDA Graphs) when it was built with CUDA and a GPU is present,
// otherwise on the host.
//
//   fashion_mnist [--model mlp|cnn|vit|all] [--policy fp32|bf16|fp16|all] [--epochs N] [--train-samples N]
//                 [--data DIR] [--seed S] [--host] [--eager] [--min-accuracy A]
//                 [--save PATH] [--init PATH.safetensors] [--save-safetensors PATH]
//                 [--quantize ptq|qat|all] [--observer minmax|percentile|mse]
//                 [--calibration-batches N] [--qat-epochs N]
//                 [--prune unstructured|2:4|all] [--sparsities 0.5,0.8,0.9]
//                 [--prune-epochs N] [--prune-scope global|layer] [--data-parallel] [--zero] [--augment]
//                 [--active-learning] [--al-initial N] [--al-rounds N] [--al-batch N] [--al-steps N]
//                 [--al-strategies random,entropy,margin,least_confidence]
//                 [--lr-find] [--lr-find-steps N] [--lr-find-csv PATH] [--log-dir DIR]
//                 [--profile] [--profile-json PATH] [--trace PATH]
//
// --log-dir DIR writes TensorBoard event files, one run per model and
// policy (DIR/mlp.fp32, ...): loss, learning rate, gradient norm (where the
// step computes it), loss scale, skipped steps and samples/s at each
// progress update; train loss, train and test accuracy and samples/s per
// epoch (the accuracies cost an evaluation of both sets per epoch).
//
// --profile prints where the first epoch's steps 4 to 23 spent their time
// (train::step_profiler: each layer's forward and backward, the loss, the
// optimizer, the data wait, with GFLOP/s, GB/s and the fraction of the
// machine's measured peak); --profile-json PATH writes it as JSON
// (scripts/plot_training.py draws it), --trace PATH writes those steps as a
// Chrome trace (Perfetto, chrome://tracing). A device run's profiled steps
// are eager (captured steps would show no layers); the rest are as ever.
//
// --quantize ptq|qat|all (with the fp32 policy) then turns the trained fp32
// model (MLP or CNN) into int8 models: post-training quantization (activation ranges from
// --calibration-batches training batches, seen by --observer
// minmax|percentile|mse; weights per output channel), and quantization-aware
// training (--qat-epochs of fine-tuning with fake quantization, observers
// frozen half-way), each converted to an int8 model (int8 GEMMs, one fused
// epilogue per layer: the CNN's BatchNorm and pooling run in it) and tested.
//
// --prune unstructured|2:4|all (with the fp32 policy) fine-tunes copies of
// the trained fp32 model while pruning them: unstructured magnitude pruning
// to each of --sparsities (global by default), raised gradually over the
// first two thirds of --prune-epochs on Zhu & Gupta's cubic schedule, and
// 2:4 structured pruning, done once before the fine-tuning (the CNN's
// first convolution, of one input channel, stays dense). The fused
// optimizer keeps pruned weights at zero. Each pruned model is tested as
// trained (dense with zeros) and, for the MLP, through host sparse inference
// (CSR); its per-layer sparsity is printed.
//
// --data-parallel (built with MPI) trains on every rank of an mpirun job:
//   mpirun -np 2 fashion_mnist --data-parallel
// Each rank loads its share of every shuffled global batch (256 rows per
// rank), gradients are summed across ranks, and the test accuracy is the
// whole test set's; rank 0 prints. Host models, the MLP, CNN or ViT, without
// --quantize or --prune. --zero (implies --data-parallel) shards the master
// weights and AdamW's state over the ranks (ZeRO stage 1) and prints the
// optimizer-state bytes per rank against one process's.
//
// --active-learning compares ways of choosing which training images to label
// (active_learning.hpp): from --al-initial (1000) labelled images, --al-rounds
// (10) rounds of --al-batch (500) more, picked at random or by the trained
// MLP's uncertainty (entropy, margin, least confidence) over the unlabelled
// rest; the MLP is retrained from scratch for --al-steps (400) steps each
// round. It prints the test accuracy against labels used for each strategy,
// then one JSON object; --min-accuracy applies to each strategy's last round.
//
// Training batches reach the model as raw bytes and are normalised where it
// runs (on the device, one fused kernel per batch: data::augment). --augment
// also crops them at random from images padded by 2 pixels and flips them
// left to right (torchvision's RandomCrop(28, padding=2) and
// RandomHorizontalFlip), drawn by (seed, step, image).
//
// Prints a progress bar per epoch, a table (model, policy, test accuracy,
// train time, samples/s, model bytes) and, as its last line, one JSON object
// with the same figures. With --min-accuracy it exits 1 when any result falls below it.
#include "active_learning.hpp"

#if TENET_EXAMPLE_MPI
#include <tenet/dist/dist.hpp>
#endif

#include <memory>

using namespace tenet;
using example::options, example::result;

namespace {

[[noreturn]] void usage(const std::string& why)
{
    std::cerr << "fashion_mnist: " << why << "\n"
              << "usage: fashion_mnist [--model mlp|cnn|vit|all] [--policy fp32|bf16|fp16|all] [--epochs N]\n"
              << "                     [--train-samples N] [--data DIR]\n"
              << "                     [--seed S] [--host] [--eager] [--min-accuracy A] [--save PATH]\n"
              << "                     [--init PATH.safetensors] [--save-safetensors PATH]\n"
              << "                     [--quantize ptq|qat|all] [--observer minmax|percentile|mse]\n"
              << "                     [--calibration-batches N] [--qat-epochs N]\n"
              << "                     [--prune unstructured|2:4|all] [--sparsities S,S,...] [--prune-epochs N]\n"
              << "                     [--prune-scope global|layer] [--data-parallel] [--zero] [--augment]\n"
              << "                     [--active-learning] [--al-initial N] [--al-rounds N] [--al-batch N]\n"
              << "                     [--al-steps N] [--al-strategies random,entropy,margin,least_confidence]\n"
              << "                     [--lr-find] [--lr-find-steps N] [--lr-find-csv PATH] [--log-dir DIR]\n"
              << "                     [--profile] [--profile-json PATH] [--trace PATH]\n";
    std::exit(2);
}

std::vector<std::string> split_list(const std::string& text, const std::string& flag)
{
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string item; std::getline(in, item, ',');) out.push_back(item);
    if (out.empty()) usage(flag + " needs at least one value");
    return out;
}

std::vector<double> parse_list(const std::string& text)
{
    std::vector<double> out;
    for (const std::string& item : split_list(text, "--sparsities")) out.push_back(std::stod(item));
    return out;
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
        if (arg == "--model") o.model = value();
        else if (arg == "--policy") o.policy = value();
        else if (arg == "--epochs") {
            o.epochs = std::stoul(value());
            if (o.epochs == 0) usage("--epochs must be at least 1");
        }
        else if (arg == "--train-samples") o.train_samples = std::stoul(value());
        else if (arg == "--data") o.data = value();
        else if (arg == "--seed") o.seed = std::stoull(value());
        else if (arg == "--host") o.host = true;
        else if (arg == "--eager") o.eager = true;
        else if (arg == "--min-accuracy") o.min_accuracy = std::stod(value());
        else if (arg == "--save") o.save = value();
        else if (arg == "--init") o.init = value();
        else if (arg == "--save-safetensors") o.save_safetensors = value();
        else if (arg == "--quantize") o.quantize = value();
        else if (arg == "--observer") o.observer = value();
        else if (arg == "--calibration-batches") o.calibration_batches = std::stoul(value());
        else if (arg == "--qat-epochs") o.qat_epochs = std::stoul(value());
        else if (arg == "--prune") o.prune = value();
        else if (arg == "--sparsities") o.sparsities = parse_list(value());
        else if (arg == "--prune-epochs") o.prune_epochs = std::stoul(value());
        else if (arg == "--prune-scope") o.prune_scope = value();
        else if (arg == "--data-parallel") o.data_parallel = true;
        else if (arg == "--zero") o.data_parallel = o.zero = true;
        else if (arg == "--augment") o.augment_pad = 2, o.augment_flip = true;
        else if (arg == "--active-learning") o.active_learning = true;
        else if (arg == "--al-initial") o.al_initial = std::stoul(value());
        else if (arg == "--al-rounds") o.al_rounds = std::stoul(value());
        else if (arg == "--al-batch") o.al_batch = std::stoul(value());
        else if (arg == "--al-steps") o.al_steps = std::stoul(value());
        else if (arg == "--al-strategies") o.al_strategies = split_list(value(), "--al-strategies");
        else if (arg == "--lr-find") o.lr_find = true;
        else if (arg == "--lr-find-steps") o.lr_find_steps = std::stoul(value());
        else if (arg == "--lr-find-csv") o.lr_find_csv = value();
        else if (arg == "--log-dir") o.log_dir = value();
        else if (arg == "--profile") o.profile = true;
        else if (arg == "--profile-json") o.profile_json = value();
        else if (arg == "--trace") o.trace = value();
        else usage("unknown argument " + arg);
    }
    if (o.policy != "fp32" && o.policy != "bf16" && o.policy != "fp16" && o.policy != "all")
        usage("--policy must be fp32, bf16, fp16 or all");
    if (o.model != "mlp" && o.model != "cnn" && o.model != "vit" && o.model != "all")
        usage("--model must be mlp, cnn, vit or all");
    if (!o.quantize.empty() && o.quantize != "ptq" && o.quantize != "qat" && o.quantize != "all")
        usage("--quantize must be ptq, qat or all");
    if (!o.quantize.empty() && o.policy != "fp32" && o.policy != "all")
        usage("--quantize quantizes the fp32 model: use --policy fp32 or all");
    if (o.observer != "minmax" && o.observer != "percentile" && o.observer != "mse")
        usage("--observer must be minmax, percentile or mse");
    if (o.calibration_batches == 0 || o.qat_epochs == 0) usage("--calibration-batches and --qat-epochs must be at least 1");
    if (!o.prune.empty() && o.prune != "unstructured" && o.prune != "2:4" && o.prune != "all")
        usage("--prune must be unstructured, 2:4 or all");
    if (!o.prune.empty() && o.policy != "fp32" && o.policy != "all")
        usage("--prune prunes the fp32 model: use --policy fp32 or all");
    if (o.prune_epochs == 0) usage("--prune-epochs must be at least 1");
    if (o.prune_scope != "global" && o.prune_scope != "layer") usage("--prune-scope must be global or layer");
    if (o.data_parallel && (!o.quantize.empty() || !o.prune.empty()))
        usage("--data-parallel trains the model alone: no --quantize or --prune");
#if !TENET_EXAMPLE_MPI
    if (o.data_parallel) usage("--data-parallel needs MPI: this build found none (install libopenmpi-dev)");
#endif
    for (const double s : o.sparsities)
        if (!(s >= 0.0 && s < 1.0)) usage("--sparsities must lie in [0, 1)");
    if (o.active_learning) {
        if (o.model != "mlp" || (o.policy != "fp32" && o.policy != "all"))
            usage("--active-learning trains the fp32 MLP: --model mlp, --policy fp32");
        if (!o.quantize.empty() || !o.prune.empty() || o.data_parallel || o.augment_flip)
            usage("--active-learning trains the model alone: no --quantize, --prune, --data-parallel or --augment");
        if (o.al_initial == 0 || o.al_batch == 0 || o.al_steps == 0)
            usage("--al-initial, --al-batch and --al-steps must be at least 1");
        for (const std::string& s : o.al_strategies)
            if (s != "random" && s != "entropy" && s != "margin" && s != "least_confidence")
                usage("--al-strategies are random, entropy, margin or least_confidence");
    }
    return o;
}

// The active-learning curves: a table of test accuracy against labels used,
// a column per strategy, then one JSON object. 1 when a strategy's last
// round falls below --min-accuracy.
int report_active_learning(const data::mnist_dataset& set, const options& o)
{
    if (set.train.count > example::pool_capacity)
        usage("--active-learning scores at most " + std::to_string(example::pool_capacity) + " training images, not " +
              std::to_string(set.train.count));
    if (o.al_initial + o.al_rounds * o.al_batch > set.train.count)
        usage("--al-initial + --al-rounds x --al-batch must not exceed the " + std::to_string(set.train.count) +
              " training images");
    std::vector<example::curve> curves;
    std::string where = "host";
#if TENET_EXAMPLE_DEVICE
    if (!o.host && has_device()) {
        where = "cuda";
        curves = example::active_learning_on_device(set, o);
    }
#endif
    if (where == "host") curves = example::active_learning_on_host(set, o);

    std::printf("\ntest accuracy of the MLP (fp32, %zu steps per round) by labelled images\n%-8s", o.al_steps, "labels");
    for (const auto& c : curves) std::printf(" %16s", c.strategy.c_str());
    std::printf("\n");
    for (std::size_t r = 0; r <= o.al_rounds; ++r) {
        std::printf("%-8zu", curves.front().labels[r]);
        for (const auto& c : curves) std::printf(" %16.4f", c.accuracy[r]);
        std::printf("\n");
    }
    std::ostringstream json;
    json << "{\"example\":\"fashion_mnist\",\"mode\":\"active_learning\",\"backend\":\"" << where
         << "\",\"initial\":" << o.al_initial << ",\"rounds\":" << o.al_rounds << ",\"batch\":" << o.al_batch
         << ",\"steps_per_round\":" << o.al_steps << ",\"pool\":" << set.train.count << ",\"strategies\":[";
    bool ok = true;
    for (std::size_t i = 0; i < curves.size(); ++i) {
        const auto& c = curves[i];
        json << (i ? "," : "") << "{\"strategy\":\"" << c.strategy << "\",\"seconds\":" << c.seconds
             << ",\"labels\":[";
        for (std::size_t r = 0; r < c.labels.size(); ++r) json << (r ? "," : "") << c.labels[r];
        json << "],\"test_accuracy\":[";
        for (std::size_t r = 0; r < c.accuracy.size(); ++r) json << (r ? "," : "") << c.accuracy[r];
        json << "]}";
        ok = ok && c.accuracy.back() >= o.min_accuracy;
    }
    json << "]}";
    std::cout << json.str() << std::endl;
    if (!ok) {
        std::cerr << "fashion_mnist: a strategy's final test accuracy is below --min-accuracy " << o.min_accuracy << "\n";
        return 1;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv)
{
    options o = parse(argc, argv);
#if TENET_EXAMPLE_MPI
    std::optional<dist::mpi_session> mpi;
    std::unique_ptr<dist::mpi_communicator> world;
    if (o.data_parallel) {
        mpi.emplace(argc, argv);
        world = std::make_unique<dist::mpi_communicator>();
        o.communicator = world.get();
        o.host = true;  // (the device's engine, NCCL, is not built yet)
    }
#endif
    const int rank = o.communicator ? o.communicator->rank() : 0;
    const int world_size = o.communicator ? o.communicator->size() : 1;
    try {
        data::mnist_dataset set = data::load_mnist(o.data);
        if (o.train_samples) set.train = data::subset(set.train, o.train_samples);
        if (o.active_learning) return report_active_learning(set, o);
        if (o.lr_find) {
            if (o.data_parallel) usage("--lr-find runs in one process: no --data-parallel");
            example::find_learning_rates(set, o);
            return 0;
        }
        std::vector<result> results;
        std::string where = "host";
#if TENET_EXAMPLE_DEVICE
        if (!o.host && has_device()) {
            where = "cuda";
            results = example::train_on_device(set, o);
        }
#endif
        if (where == "host") results = example::train_on_host(set, o);

        if (rank != 0) return 0;
        std::printf("\n%-6s %-20s %14s %14s %14s %12s %12s\n", "model", "policy", "test accuracy", "train time s",
                    "samples/s", "model bytes", "nonzeros");
        std::ostringstream json;
        json << "{\"example\":\"fashion_mnist\",\"backend\":\"" << where << "\",\"world_size\":" << world_size
             << ",\"zero\":" << (o.zero ? "true" : "false") << ",\"augment\":" << (o.augment_flip ? "true" : "false")
             << ",\"train_samples\":" << set.train.count << ",\"batch\":" << example::batch << ",\"results\":[";
        bool ok = true;
        for (std::size_t i = 0; i < results.size(); ++i) {
            const result& r = results[i];
            std::printf("%-6s %-20s %14.4f %14.1f %14.0f %12zu %12zu\n", r.model.c_str(), r.policy.c_str(), r.accuracy,
                        r.train_seconds, r.samples_per_second, r.model_bytes, r.nonzero_parameters);
            json << (i ? "," : "") << "{\"model\":\"" << r.model << "\",\"policy\":\"" << r.policy
                 << "\",\"test_accuracy\":" << r.accuracy
                 << ",\"train_seconds\":" << r.train_seconds << ",\"samples_per_second\":" << r.samples_per_second
                 << ",\"model_bytes\":" << r.model_bytes << ",\"nonzero_parameters\":" << r.nonzero_parameters
                 << ",\"optimizer_state_bytes_per_rank\":" << r.optimizer_state_bytes
                 << ",\"epochs\":" << r.epochs << "}";
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
#if TENET_EXAMPLE_MPI
        if (mpi) mpi->abort(1);  // the other ranks may be waiting for this one
#endif
        return 1;
    }
    return 0;
}
