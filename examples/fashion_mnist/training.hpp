// The Fashion-MNIST example's models, options and training, shared by its
// translation units: main.cpp (options, the table), train_host.cpp (the host
// instantiations, compiled by the C++ compiler in every build) and, in CUDA
// builds, train_device.cu (the device ones, compiled by nvcc). nvcc spends
// about twice g++'s time on host code, and the host models are half of the
// example: keeping them out of the .cu file halves its nvcc time.
#pragma once

#include "augmented_batches.hpp"

#include <tenet/tenet.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <ratio>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace example {

using namespace tenet;

constexpr std::size_t batch = 256;
using mlp = nn::Sequential<nn::Linear<784, 256>, nn::ReLU, nn::Linear<256, 128>, nn::ReLU, nn::Linear<128, 10>>;
using input_shape = Shape<batch, 784>;
using cnn = nn::Sequential<nn::Conv2d<1, 32, 3, 1, 1>, nn::ReLU, nn::BatchNorm2d<32>, nn::MaxPool2d<2>,
                           nn::Conv2d<32, 64, 3, 1, 1>, nn::ReLU, nn::BatchNorm2d<64>, nn::MaxPool2d<2>, nn::Flatten,
                           nn::Dropout<std::ratio<1, 4>>, nn::Linear<3136, 128>, nn::ReLU, nn::Linear<128, 10>>;
using image_shape = Shape<batch, 28, 28, 1>;
// A small Vision Transformer: 7x7 patches (16 tokens of 49 pixels) embedded
// to 64, learned positions, 4 pre-norm encoder layers (4 heads, MLP 128,
// dropout 0.1), mean pooling over the tokens, a LayerNorm and a linear head.
using vit_encoder = nn::TransformerEncoderLayer<64, 4, 128, false, std::ratio<1, 10>>;
using vit = nn::Sequential<nn::PatchEmbed<7, 1, 64>, nn::PositionalEmbedding<16, 64>, vit_encoder, vit_encoder,
                           vit_encoder, vit_encoder, nn::MeanPool<1>, nn::LayerNorm<64>, nn::Linear<64, 10>>;

struct options {
    std::string model = "mlp";
    std::string policy = "all";
    std::size_t epochs = 0;  // 0: the model's own (15 for the MLP, 6 for the CNN, 20 for the ViT)
    std::size_t train_samples = 0;  // 0: all 60000
    std::string data = data::fashion_mnist_dir;
    std::uint64_t seed = 1;
    bool host = false;
    bool eager = false;
    double min_accuracy = 0.0;
    std::string save;
    std::string init;              // start from these weights (safetensors, PyTorch names)
    std::string save_safetensors;  // and write the trained ones there
    std::string quantize;  // "", ptq, qat or all
    std::string observer = "mse";
    std::size_t calibration_batches = 32;
    std::size_t qat_epochs = 1;
    std::string prune;  // "", unstructured, 2:4 or all
    std::vector<double> sparsities{0.5, 0.8, 0.9};
    std::size_t prune_epochs = 8;
    std::string prune_scope = "global";
    bool data_parallel = false;
    bool zero = false;  // ZeRO stage 1 (with data_parallel)
    unsigned augment_pad = 0;  // --augment: random crops from images padded by 2, and flips
    bool augment_flip = false;
    dist::communicator* communicator = nullptr;  // data parallel: this rank's communicator
    bool quiet = false;  // no progress bars
    bool active_learning = false;  // see active_learning.hpp
    std::size_t al_initial = 1000;
    std::size_t al_rounds = 10;
    std::size_t al_batch = 500;
    std::size_t al_steps = 400;  // training steps per round
    std::vector<std::string> al_strategies{"random", "entropy", "margin"};
    bool lr_find = false;  // the learning-rate range test instead of training
    std::size_t lr_find_steps = 100;
    std::string lr_find_csv = "lr_find.csv";
    std::string log_dir;  // TensorBoard event files, one run per model and policy ("" : none)
    bool profile = false;       // print the per-layer profile of the first steps
    std::string profile_json;   // and write it as JSON ("": not)
    std::string trace;          // a Chrome trace of those steps ("": none)
};

// A file of one run: `path` itself, or with the run's name before its
// extension when the command trains several (--model all, --policy all).
inline std::string run_file(const std::string& path, const options& o, const std::string& run)
{
    if (path.empty() || (o.model != "all" && o.policy != "all")) return path;
    const std::size_t slash = path.rfind('/'), dot = path.rfind('.');
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + "." + run;
    return path.substr(0, dot) + "." + run + path.substr(dot);
}

// This rank's share of the loaders' batches (all of them without data parallelism).
inline data::shard shard_of(const options& o)
{
    if (!o.communicator) return {};
    return {static_cast<std::size_t>(o.communicator->rank()), static_cast<std::size_t>(o.communicator->size())};
}

// Progress goes to std::cout on rank 0; other ranks, and quiet runs, print nothing.
inline std::ostream& progress_stream(const options& o)
{
    static std::ostream discard(nullptr);
    return o.quiet || (o.communicator && o.communicator->rank() != 0) ? discard : std::cout;
}

// Each model's name in the results, its input shape (images for the CNN
// and the ViT), and its default epochs and peak learning rate.
template <class Net>
constexpr const char* name_of()
{
    return std::is_same_v<Net, cnn> ? "cnn" : std::is_same_v<Net, vit> ? "vit" : "mlp";
}
template <class Net>
constexpr bool takes_images = !std::is_same_v<Net, mlp>;
template <class Net>
using input_of = std::conditional_t<takes_images<Net>, image_shape, input_shape>;

// Training epochs for a model: --epochs, or the model's own default.
template <class Net>
std::size_t epochs_for(const options& o)
{
    return o.epochs ? o.epochs : std::is_same_v<Net, cnn> ? 6 : std::is_same_v<Net, vit> ? 20 : 15;
}
template <class Net>
constexpr float learning_rate = std::is_same_v<Net, vit> ? 1e-3f : 2e-3f;

struct result {
    std::string policy;
    std::string model = "mlp";
    double accuracy = 0;
    double train_seconds = 0;
    double samples_per_second = 0;
    std::size_t model_bytes = 0;
    std::size_t nonzero_parameters = 0;
    std::size_t epochs = 0;  // of training or fine-tuning (0: none, calibration only)
    std::size_t optimizer_state_bytes = 0;  // master weights and AdamW's moments this rank holds
};

template <class Place>
using loader_t = data::batch_loader<f32, batch, 784, Place>;

// A batch's rows [batch, 784] as the trainer's model takes them (28x28x1
// images for the CNN): a view, no copy.
template <class Trainer, class X>
auto model_input(Trainer& trainer, const X& x)
{
    return reshape<typename std::remove_reference_t<decltype(trainer.model())>::input_shape>(x);
}

// What a training run writes for TensorBoard (--log-dir): the progress
// scalars at each progress-bar update, and after each epoch what
// `each_epoch` adds (called on every rank: its evaluations are summed over
// ranks; `writer` is rank 0's, null elsewhere).
struct run_log {
    std::unique_ptr<profile::tensorboard_writer> writer;
    std::function<void(std::size_t epoch, std::int64_t step, double train_loss, double samples_per_second)> each_epoch;
    // --profile, --profile-json, --trace: the first epoch's first steps observed (train::step_profiler).
    bool profile = false;
    std::string profile_json, trace;
    profile::machine_peak peak;
};

// The profile of the observed steps: the table on `out`, the JSON to its file.
template <class Watch>
void report_profile(const Watch& watch, const run_log& log, std::ostream& out)
{
    if (log.profile) out << watch.profile().table(30);  // (--profile-json has every row)
    if (!log.profile_json.empty()) {
        std::ofstream json(log.profile_json, std::ios::binary);
        json << watch.profile().json();
        if (!json) throw io_error(log.profile_json, "cannot write the profile");
    }
    if (watch.trace()) out << "trace of " << watch.profile().steps() << " steps (and the warm-up) in " << watch.trace()->path() << "\n";
}

// Epochs of training with a progress bar each; returns the seconds spent.
template <class Trainer, class Loader>
double train_epochs(Trainer& trainer, Loader& batches, const std::string& name, std::size_t epochs,
                    std::size_t total_samples, const options& o, std::uint64_t first_epoch = 0,
                    const std::function<void(std::size_t step)>& each_step = {}, const run_log* log = nullptr)
{
    typename Loader::batch b;
    const std::size_t steps_per_epoch = batches.batches_per_epoch();
    double seconds = 0;
    const bool profiling = log && (log->profile || !log->profile_json.empty() || !log->trace.empty());
    train::step_profiler watch(trainer, profiling ? train::step_profiler_options{.trace_path = log->trace, .peak = log->peak}
                                                  : train::step_profiler_options{.warmup_steps = 0, .steps = 0});
    for (std::size_t epoch = 0; epoch < epochs; ++epoch) {
        profile::progress_bar bar(progress_stream(o), name + " epoch " + std::to_string(epoch + 1) + "/" + std::to_string(epochs),
                                  steps_per_epoch);
        profile::host_timer timer;
        batches.start_epoch(o.seed, first_epoch + epoch);
        std::size_t done = 0;
        double loss = 0;
        bool profiled = false;
        for (;;) {
            if constexpr (requires { batches.observe(watch.observer()); }) batches.observe(watch.observer());
            {
                const auto wait = watch.data_wait();
                if (!batches.next(b)) break;
            }
            trainer.step(model_input(trainer, b.x()), b.labels(), b.valid());
            profiled = watch.step_done() || profiled;
            if (each_step) each_step(epoch * steps_per_epoch + done);
            if (++done % (steps_per_epoch / 10 + 1) == 0) {  // reading the loss waits for the device
                loss = trainer.mean_loss();
                const double rate = static_cast<double>(done * batch * trainer.world_size()) / timer.seconds();
                bar.update(done, loss, rate);
                if (log && log->writer)
                    train::log_progress(*log->writer, trainer.state(), loss,
                                        static_cast<std::int64_t>((first_epoch + epoch) * steps_per_epoch + done), rate);
            }
        }
        loss = trainer.end_epoch().mean_loss;  // the epoch's mean, and a new window
        const double epoch_seconds = timer.seconds();
        seconds += epoch_seconds;
        bar.finish(loss, static_cast<double>(total_samples) / epoch_seconds);
        if (profiled && trainer.rank() == 0) report_profile(watch, *log, std::cout);
        if constexpr (requires { batches.observe(nullptr); }) batches.observe(nullptr);  // (the profile goes with this call)
        if (log && log->each_epoch)
            log->each_epoch(epoch, static_cast<std::int64_t>((first_epoch + epoch + 1) * steps_per_epoch), loss,
                            static_cast<double>(total_samples) / epoch_seconds);
    }
    if (watch.watching()) {  // (training ended within the profiled steps)
        const bool counted = watch.finish();
        if (counted && trainer.rank() == 0) report_profile(watch, *log, std::cout);
        if (!counted && trainer.rank() == 0) std::cout << "profile: training ended within the warm-up steps: nothing counted\n";
    }
    return seconds;
}

template <class Trainer, class Loader>
double test_accuracy(Trainer& trainer, Loader& test_batches)
{
    typename Loader::batch b;
    test_batches.start_epoch(0, 0, /*shuffle=*/false);
    while (test_batches.next(b)) trainer.evaluate(model_input(trainer, b.x()), b.labels(), b.valid());
    return trainer.end_epoch().accuracy;
}

template <class Model>
train::trainer<Model, train::adamw, train::warmup_cosine_lr> make_trainer(Model& net, std::size_t steps_per_epoch,
                                                                           std::size_t epochs, float lr,
                                                                           train::trainer_options options = {})
{
    const auto total_steps = static_cast<std::uint64_t>(steps_per_epoch * epochs);
    return train::trainer<Model, train::adamw, train::warmup_cosine_lr>(
        net, train::adamw{0.9f, 0.999f, 1e-8f, 1e-4f},
        train::warmup_cosine_lr{lr, std::min<std::uint64_t>(steps_per_epoch, total_steps / 4), total_steps, 0.0f},
        options);
}

template <class Net, class P, class In, class Place>
result train_policy(const std::string& name, const data::mnist_dataset& set, const options& o,
                    nn::model<Net, P, In, Place>& net)
{
    using storage = typename P::storage;
    const std::size_t global_batch = batch * shard_of(o).count;
    const std::size_t steps_per_epoch = (set.train.count + global_batch - 1) / global_batch;
    const std::size_t epochs = epochs_for<Net>(o);
    // A global batch `world` times larger takes `world` times fewer steps:
    // the peak rate grows `world` times (Goyal et al.'s linear rule, after
    // the warm-up), so data-parallel runs reach one process's accuracy.
    // (Measured over 3 seeds on 2 ranks: linear 0.12 points below one
    // process on average, square-root 0.20, unscaled 0.36.)
    const std::size_t world = shard_of(o).count;
    const float lr = learning_rate<Net> * static_cast<float>(world);
    if (!o.init.empty()) io::load_safetensors(net, o.init);  // before the trainer takes its master weights
    auto trainer = make_trainer(net, steps_per_epoch, epochs, lr, {.communicator = o.communicator, .zero = o.zero});
    using optimizer_type = typename decltype(trainer)::optimizer_type;
    const std::size_t state_bytes = o.zero ? optimizer_type::sharded_state_bytes(world) : optimizer_type::state_bytes;
    if (o.zero)
        progress_stream(o) << name << ": optimizer state " << optimizer_type::state_bytes << " bytes in one process, "
                           << state_bytes << " per rank on " << world << " ranks (ZeRO-1; 8 ranks: "
                           << optimizer_type::sharded_state_bytes(8) << ")\n";
    if (!o.eager) trainer.capture();
    const raw_images train_images = raw_images_of(set.train);
    augmented_batches<storage, batch, Place> train_batches(train_images, trainer.stream(), shard_of(o), o.augment_pad,
                                                           o.augment_flip, o.seed);
    data::batch_loader<storage, batch, 784, Place> test_batches(set.test, data::normalize_pixels{}, trainer.stream(),
                                                                shard_of(o));
    run_log log;
    const std::string run = std::string(name_of<Net>()) + "." + name;
    log.profile = o.profile;
    log.profile_json = trainer.rank() == 0 ? run_file(o.profile_json, o, run) : "";
    log.trace = trainer.rank() == 0 ? run_file(o.trace, o, run) : "";
    if (o.profile || !o.profile_json.empty()) log.peak = linalg::measure_peak<Place, storage>();
    std::optional<data::batch_loader<storage, batch, 784, Place>> train_in_order;  // (train accuracy, --log-dir)
    if (!o.log_dir.empty()) {
        if (trainer.rank() == 0)
            log.writer = std::make_unique<profile::tensorboard_writer>(o.log_dir + "/" + name_of<Net>() + "." + name);
        train_in_order.emplace(set.train, data::normalize_pixels{}, trainer.stream(), shard_of(o));
        log.each_epoch = [&](std::size_t, std::int64_t step, double train_loss, double samples_per_second) {
            const double test = test_accuracy(trainer, test_batches);
            const double train = test_accuracy(trainer, *train_in_order);
            if (!log.writer) return;
            log.writer->scalar("epoch/train_loss", train_loss, step);
            log.writer->scalar("epoch/train_accuracy", train, step);
            log.writer->scalar("epoch/test_accuracy", test, step);
            log.writer->scalar("epoch/samples_per_second", samples_per_second, step);
        };
    }
    const double train_seconds = train_epochs(trainer, train_batches, name, epochs, set.train.count, o, 0, {}, &log);
    const double accuracy = test_accuracy(trainer, test_batches);
    const std::string suffix = (std::is_same_v<Net, mlp> ? std::string(".") : "." + std::string(name_of<Net>()) + ".") + name;
    if (!o.save.empty()) trainer.save(o.save + suffix);
    if (!o.save_safetensors.empty() && trainer.rank() == 0) io::save_safetensors(net, o.save_safetensors + suffix + ".safetensors");
    using model_type = nn::model<Net, P, In, Place>;
    return {name, name_of<Net>(), accuracy, train_seconds,
            static_cast<double>(set.train.count * epochs) / train_seconds, model_type::parameter_bytes,
            model_type::parameter_count, epochs, state_bytes};
}

template <class Net, class P, class In, class Place>
result train_policy(const std::string& name, const data::mnist_dataset& set, const options& o)
{
    nn::model<Net, P, In, Place> net(o.seed);
    return train_policy(name, set, o, net);
}

// Test accuracy of an inference model (int8, sparse): logits back on the
// host, argmax vs label.
template <class Inference, class Place>
double inference_accuracy(Inference& q, loader_t<Place>& test_batches)
{
    using in = typename Inference::input_shape;
    typename loader_t<Place>::batch b;
    Tensor<f32, Shape<batch, 10>, Host> logits;
    Tensor<std::int32_t, Shape<batch>, Host> labels;
    std::size_t right = 0, seen = 0;
    test_batches.start_epoch(0, 0, /*shuffle=*/false);
    while (test_batches.next(b)) {
        copy(logits, q.forward(reshape<in>(b.x())));
        copy(labels, b.labels());
        current_stream().synchronize();
        for (std::size_t r = 0; r < b.rows(); ++r) {
            const float* row = logits.data() + r * 10;
            right += std::max_element(row, row + 10) - row == labels.data()[r];
        }
        seen += b.rows();
    }
    return static_cast<double>(right) / static_cast<double>(seen);
}

// Post-training quantization of the trained model with observer Observer.
template <class Observer, class Net, class Place>
result post_training_int8(const data::mnist_dataset& set, const options& o, const nn::model<Net, fp32, input_of<Net>, Place>& trained)
{
    using in = input_of<Net>;
    profile::host_timer timer;
    nn::model<Net, quant::qat<fp32, Observer>, in, Place> calibrated;
    quant::copy_parameters(calibrated, trained);
    quant::prepare_calibration(calibrated);
    loader_t<Place> train_batches(set.train, data::normalize_pixels{});
    typename loader_t<Place>::batch b;
    train_batches.start_epoch(o.seed, 1000);
    for (std::size_t i = 0; i < o.calibration_batches && train_batches.next(b); ++i) calibrated.forward(reshape<in>(b.x()));
    quant::int8_model<Net, in, Place> q(calibrated);
    const double seconds = timer.seconds();
    loader_t<Place> test_batches(set.test, data::normalize_pixels{});
    return {"int8_ptq_" + o.observer, name_of<Net>(), inference_accuracy(q, test_batches), seconds, 0.0, decltype(q)::parameter_bytes,
            std::remove_cvref_t<decltype(trained)>::parameter_count};
}

template <class Net, class Place>
result post_training_int8(const data::mnist_dataset& set, const options& o, const nn::model<Net, fp32, input_of<Net>, Place>& trained)
{
    if (o.observer == "minmax") return post_training_int8<quant::min_max_observer<>>(set, o, trained);
    if (o.observer == "percentile") return post_training_int8<quant::percentile_observer>(set, o, trained);
    return post_training_int8<quant::mse_observer>(set, o, trained);
}

// Quantization-aware fine-tuning of the trained model, then int8.
template <class Net, class Place>
result quantization_aware_int8(const data::mnist_dataset& set, const options& o,
                               const nn::model<Net, fp32, input_of<Net>, Place>& trained)
{
    nn::model<Net, quant::qat<fp32>, input_of<Net>, Place> net;
    quant::copy_parameters(net, trained);
    const std::size_t steps_per_epoch = (set.train.count + batch - 1) / batch;
    auto trainer = make_trainer(net, steps_per_epoch, o.qat_epochs, 2e-4f);
    loader_t<Place> train_batches(set.train, data::normalize_pixels{}, trainer.stream());
    const std::size_t freeze_at = steps_per_epoch * o.qat_epochs / 2;
    const double seconds = train_epochs(trainer, train_batches, "int8_qat", o.qat_epochs, set.train.count, o, epochs_for<Net>(o),
                                        [&](std::size_t step) {
                                            if (step + 1 == freeze_at) quant::freeze_observers(net);
                                        });
    net.eval();
    quant::int8_model<Net, input_of<Net>, Place> q(net);
    loader_t<Place> test_batches(set.test, data::normalize_pixels{});
    return {"int8_qat", name_of<Net>(), inference_accuracy(q, test_batches), seconds,
            static_cast<double>(set.train.count * o.qat_epochs) / seconds, decltype(q)::parameter_bytes,
            std::remove_cvref_t<decltype(trained)>::parameter_count, o.qat_epochs};
}

// Fine-tunes a copy of the trained model while pruning it: to `sparsity`
// (unstructured, gradual) or, with sparsity < 0, to 2:4 (once, at the start).
template <class Net, class Place>
result pruned(const data::mnist_dataset& set, const options& o, const nn::model<Net, fp32, input_of<Net>, Place>& trained,
              double sparsity)
{
    using model_type = nn::model<Net, fp32, input_of<Net>, Place>;
    model_type net;
    nn::copy_parameters(net, trained);
    const bool two_four = sparsity < 0;
    const std::string name = two_four ? "pruned_2:4" : "pruned_" + std::to_string(int(sparsity * 100 + 0.5)) + "%";
    const std::size_t steps_per_epoch = (set.train.count + batch - 1) / batch;
    train::trainer_options masked;
    masked.optimizer.masked = true;
    auto trainer = make_trainer(net, steps_per_epoch, o.prune_epochs, 5e-4f, masked);
    if (!o.eager) trainer.capture();
    auto& optimizer = trainer.optimizer();
    // Unstructured: ten re-prunings spread over the first two thirds of the steps.
    using pruner_type = prune::pruner<std::remove_reference_t<decltype(optimizer)>, prune::gradual_sparsity>;
    std::optional<pruner_type> gradual;
    if (two_four) {
        prune::two_four(optimizer.masks(), prune::skip_misfits);
        optimizer.apply_masks();
    } else {
        const std::uint64_t every = std::max<std::uint64_t>(1, steps_per_epoch * o.prune_epochs * 2 / 30);
        gradual.emplace(optimizer, prune::gradual_sparsity{0.0, sparsity, 0, 10, every},
                        o.prune_scope == "layer" ? prune::scope::per_layer : prune::scope::global);
        gradual->update(0);
    }
    loader_t<Place> train_batches(set.train, data::normalize_pixels{}, trainer.stream());
    const double seconds = train_epochs(trainer, train_batches, name, o.prune_epochs, set.train.count, o, epochs_for<Net>(o),
                                        [&](std::size_t step) {
                                            if (gradual) gradual->update(step + 1);
                                        });
    loader_t<Place> test_batches(set.test, data::normalize_pixels{}, trainer.stream());
    const double accuracy = test_accuracy(trainer, test_batches);

    const prune::sparsity_report report = prune::report(optimizer.masks());
    std::cout << report.table();
    // Model bytes: the weights compressed (2:4: values and 2-bit indices; else
    // CSR) and the biases; the CNN's are counted dense.
    std::size_t bytes = model_type::parameter_bytes;
    if constexpr (std::is_same_v<Net, mlp>) {
        prune::sparse_model<Net, input_of<Net>> sparse(net, optimizer.masks());
        loader_t<Host> host_test_batches(set.test, data::normalize_pixels{});
        const double sparse_accuracy = inference_accuracy(sparse, host_test_batches);
        bytes = sparse.bytes();
        if (two_four) {
            bytes = 0;
            optimizer.masks().for_each([&](const std::string&, auto weight, auto keep) {
                bytes += prune::compress_24(weight, keep).bytes() + decltype(weight)::shape::extents[0] * sizeof(f32);
            });
        }
        std::printf("%s: test accuracy %.4f as trained, %.4f through host sparse inference (CSR)\n\n", name.c_str(),
                    accuracy, sparse_accuracy);
    }
    return {name, name_of<Net>(), accuracy, seconds, static_cast<double>(set.train.count * o.prune_epochs) / seconds, bytes,
            report.parameter_nonzero, o.prune_epochs};
}

// The fp32 model with the quantized and pruned variants asked for, then bf16_mixed and fp16_mixed.
template <class Net, class Place>
void train_model(const data::mnist_dataset& set, const options& o, std::vector<result>& out)
{
    using in = input_of<Net>;
    if (o.policy == "fp32" || o.policy == "all") {
        nn::model<Net, fp32, in, Place> net(o.seed);
        out.push_back(train_policy("fp32", set, o, net));
        if constexpr (std::is_same_v<Net, vit>) {
            if (!o.quantize.empty() || !o.prune.empty())
                std::printf("vit: not quantized or pruned (int8 attention is not built yet)\n\n");
        } else {
            if (o.quantize == "ptq" || o.quantize == "all") out.push_back(post_training_int8(set, o, net));
            if (o.quantize == "qat" || o.quantize == "all") out.push_back(quantization_aware_int8(set, o, net));
            if (o.prune == "unstructured" || o.prune == "all")
                for (const double s : o.sparsities) out.push_back(pruned(set, o, net, s));
            if (o.prune == "2:4" || o.prune == "all") out.push_back(pruned(set, o, net, -1.0));
        }
    }
    if (o.policy == "bf16" || o.policy == "all") out.push_back(train_policy<Net, bf16_mixed, in, Place>("bf16_mixed", set, o));
    if (o.policy == "fp16" || o.policy == "all") out.push_back(train_policy<Net, fp16_mixed, in, Place>("fp16_mixed", set, o));
}

template <class Place>
std::vector<result> train_all(const data::mnist_dataset& set, const options& o)
{
    std::vector<result> out;
    if (o.model == "vit" || o.model == "all") train_model<vit, Place>(set, o, out);
    if (o.model == "cnn" || o.model == "all") train_model<cnn, Place>(set, o, out);
    if (o.model == "mlp" || o.model == "all") train_model<mlp, Place>(set, o, out);
    return out;
}

// --lr-find: the learning-rate range test (train::lr_range_test) of a fresh
// fp32 model with the example's AdamW, printed as a table and written as CSV
// (model, lr, loss, smoothed).
template <class Net>
void find_learning_rate(const data::mnist_dataset& set, const options& o, std::ostream& csv)
{
    nn::model<Net, fp32, input_of<Net>, Host> net(o.seed);
    loader_t<Host> batches(set.train, data::normalize_pixels{});
    const train::lr_range_result r = train::lr_range_test(
        net, batches, train::adamw{0.9f, 0.999f, 1e-8f, 1e-4f},
        {.start = 1e-6f, .end = 1.0f, .steps = o.lr_find_steps, .seed = o.seed});
    std::printf("\n%s: learning-rate range test, %zu steps of %zu (AdamW, fp32)\n%12s %12s %12s\n", name_of<Net>(),
                r.curve.size(), batch, "lr", "loss", "smoothed");
    for (const auto& p : r.curve) {
        std::printf("%12.3g %12.4f %12.4f\n", p.lr, p.loss, p.smoothed);
        csv << name_of<Net>() << "," << p.lr << "," << p.loss << "," << p.smoothed << "\n";
    }
    std::printf("%s: %s; suggested rate (steepest descent) %.3g (the example trains at %.3g)\n", name_of<Net>(),
                r.diverged ? "the loss diverged, stopped" : "no divergence", r.suggested_lr, learning_rate<Net>);
}

// The trained results on each place (train_host.cpp, train_device.cu).
std::vector<result> train_on_host(const data::mnist_dataset& set, const options& o);
std::vector<result> train_on_device(const data::mnist_dataset& set, const options& o);
void find_learning_rates(const data::mnist_dataset& set, const options& o);

}  // namespace example
