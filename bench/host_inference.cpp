// Inference latency on the host, batch 1 and batch 32: the median and p99 of
// many single calls (after a warm-up), one JSON line per (model, precision,
// batch), of
//   mlp      784-256-128-10, ReLU (bench_host_int8_inference's)
//   cnn      the Fashion-MNIST example's CNN, 28x28x1 NHWC images
//   vit      the Fashion-MNIST example's ViT (7x7 patches, 4 encoder layers)
//   char_lm  one decode step of char_lm's gpt (infer::decoder, KV cache of
//            128 positions), timed at positions 64..126 (each sequence
//            filled to 64 untimed, reset before the context fills)
// in fp32 (nn::model, eval mode) and, for the MLP and the CNN, int8
// (quant::int8_model after min-max PTQ calibration on random images). The
// ViT and the decode step have no int8 form here (not measured).
//
// Its peers (bench/peers/inference_cpu.py: PyTorch eager, torch.compile,
// ONNX Runtime) run the same weights: each model's parameters and buffers
// are written to --out DIR (default /tmp/tenet_inference) as safetensors
// with PyTorch's names and layouts, with one random input and tenet's
// outputs for it as .npy, which the peer checks its outputs against.
//   bench_host_inference [--out DIR] [--quick]
#include <tenet/infer/infer.hpp>
#include <tenet/tenet.hpp>

#include "support/host_machine.hpp"
#include "support/json_line.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <ratio>
#include <span>
#include <string>
#include <thread>
#include <vector>


using namespace tenet;

namespace {

// The models, as the library's examples define them.
using mlp = nn::Sequential<nn::Linear<784, 256>, nn::ReLU, nn::Linear<256, 128>, nn::ReLU, nn::Linear<128, 10>>;
using cnn = nn::Sequential<nn::Conv2d<1, 32, 3, 1, 1>, nn::ReLU, nn::BatchNorm2d<32>, nn::MaxPool2d<2>,
                           nn::Conv2d<32, 64, 3, 1, 1>, nn::ReLU, nn::BatchNorm2d<64>, nn::MaxPool2d<2>, nn::Flatten,
                           nn::Dropout<std::ratio<1, 4>>, nn::Linear<3136, 128>, nn::ReLU, nn::Linear<128, 10>>;
using vit_encoder = nn::TransformerEncoderLayer<64, 4, 128, false, std::ratio<1, 10>>;
using vit = nn::Sequential<nn::PatchEmbed<7, 1, 64>, nn::PositionalEmbedding<16, 64>, vit_encoder, vit_encoder,
                           vit_encoder, vit_encoder, nn::MeanPool<1>, nn::LayerNorm<64>, nn::Linear<64, 10>>;
constexpr std::size_t vocab = 128, context = 128, width = 128;
using block = nn::TransformerEncoderLayer<width, 4, 4 * width, /*Causal=*/true>;
using gpt = nn::Sequential<nn::Embedding<vocab, width>, nn::PositionalEmbedding<context, width>, block, block, block,
                           block, nn::LayerNorm<width>, nn::Linear<width, vocab>>;
constexpr std::size_t prefill = 64;  // the decode step is timed from this position on

struct settings {
    std::filesystem::path out = "/tmp/tenet_inference";
    bool quick = false;
};

// Writes an array of floats or tokens as NumPy's .npy (for the peer).
template <class T>
void write_npy(const std::filesystem::path& path, const T* data, const std::vector<std::size_t>& shape)
{
    io::save_npy(path.string(), data, std::span<const std::size_t>(shape));
}

template <class S>
std::vector<std::size_t> dims_of()
{
    return std::vector<std::size_t>(S::extents.begin(), S::extents.end());
}

template <class S>
Tensor<f32, S, Host> uniform_input(std::uint64_t seed)
{
    Tensor<f32, S, Host> x;
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (std::size_t i = 0; i < S::numel; ++i) x.data()[i] = u(rng);
    return x;
}

// Trained-looking parameters: the initialisation plus noise, so biases,
// LayerNorm and BatchNorm affines and running statistics are not 0 and 1
// (a layout the peer got wrong then shows in its outputs).
template <class Model>
void perturb(Model& m, std::uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> noise(0.0f, 0.05f);
    m.for_each_parameter([&](const std::string&, auto value, auto) {
        float* p = value.data();
        for (std::size_t i = 0; i < decltype(value)::shape::numel; ++i) p[i] += noise(rng);
    });
    if constexpr (requires { m.for_each_buffer([](const std::string&, auto) {}); }) {
        m.for_each_buffer([&](const std::string& name, auto value) {
            using V = decltype(value);
            if constexpr (std::is_same_v<std::remove_cv_t<typename V::element_type>, f32>) {
                const bool mean = name.ends_with("running_mean"), var = name.ends_with("running_var");
                float* p = value.data();
                for (std::size_t i = 0; i < V::shape::numel; ++i) {
                    if (mean) p[i] = noise(rng);
                    if (var) p[i] = 1.0f + std::abs(noise(rng)) * 4;
                }
            }
        });
    }
}

struct latency {
    double median_us, p99_us;
    std::size_t calls;
};

latency summarize(std::vector<double>& us)
{
    std::sort(us.begin(), us.end());
    const std::size_t p99 = std::min(us.size() - 1, static_cast<std::size_t>(0.99 * static_cast<double>(us.size())));
    return {us[us.size() / 2], us[p99], us.size()};
}

// Times `call` one call at a time: a warm-up, then as many calls as fit in
// about `budget` seconds, between `least` and `most`.
template <class F>
latency time_calls(F&& call, const settings& s, std::size_t least)
{
    using clock = std::chrono::steady_clock;
    const double budget = s.quick ? 0.3 : 2.0;
    const std::size_t most = s.quick ? 500 : 20000;
    for (int i = 0; i < 20; ++i) call();
    std::vector<double> us;
    const auto start = clock::now();
    while (us.size() < most &&
           (us.size() < least || std::chrono::duration<double>(clock::now() - start).count() < budget)) {
        const auto t0 = clock::now();
        call();
        us.push_back(std::chrono::duration<double, std::micro>(clock::now() - t0).count());
    }
    return summarize(us);
}

void report(const char* model, const char* precision, std::size_t batch, const latency& l)
{
    bench::json_line("host_inference")
        .field("framework", "tenet")
        .field("model", model)
        .field("precision", precision)
        .field("batch", batch)
        .field("median_us", l.median_us)
        .field("p99_us", l.p99_us)
        .field("calls", l.calls)
        .field("threads", host_threads())
        .print();
}

void skipped(const char* model, const char* precision, std::size_t batch, const char* why)
{
    bench::json_line("host_inference")
        .field("framework", "tenet")
        .field("model", model)
        .field("precision", precision)
        .field("batch", batch)
        .field("skipped", why)
        .print();
}

std::string stem(const char* model, std::size_t batch) { return std::string(model) + "_b" + std::to_string(batch); }

template <class Out>
double max_abs_difference(const Out& a, const std::vector<float>& b)
{
    double worst = 0;
    for (std::size_t i = 0; i < b.size(); ++i) worst = std::max(worst, static_cast<double>(std::abs(a.data()[i] - b[i])));
    return worst;
}

// A classifier of images or vectors: fp32, and int8 where Int8 says so.
template <class Spec, class In, bool Int8>
void classifier(const char* name, const settings& s)
{
    constexpr std::size_t batch = In::extents[0];
    nn::model<Spec, fp32, In, Host> net(1);
    perturb(net, 7);
    net.eval();
    const auto x = uniform_input<In>(100 + batch);
    const auto& y = net.forward(x);
    using Y = typename std::remove_cvref_t<decltype(y)>::shape;
    const std::vector<float> fp32_out(y.data(), y.data() + Y::numel);
    io::save_safetensors(net, (s.out / (stem(name, batch) + ".safetensors")).string());
    write_npy(s.out / (stem(name, batch) + "_input.npy"), x.data(), dims_of<In>());
    write_npy(s.out / (stem(name, batch) + "_fp32_out.npy"), fp32_out.data(), dims_of<Y>());

    report(name, "fp32", batch, time_calls([&] { net.forward(x); }, s, batch == 1 ? 500 : 200));

    if constexpr (Int8) {
        nn::model<Spec, quant::qat<fp32, quant::min_max_observer<>>, In, Host> calibrated;
        quant::copy_parameters(calibrated, net);
        quant::prepare_calibration(calibrated);
        for (std::size_t i = 0; i < std::max<std::size_t>(8, 256 / batch); ++i)
            calibrated.forward(uniform_input<In>(1000 + i));
        quant::int8_model<Spec, In, Host> int8(calibrated);
        const auto& q = int8.forward(x);
        write_npy(s.out / (stem(name, batch) + "_int8_out.npy"), q.data(), dims_of<Y>());
        bench::json_line("host_inference_check")
            .field("model", name)
            .field("batch", batch)
            .field("int8_vs_fp32_max_abs_diff", max_abs_difference(q, fp32_out))
            .print();
        report(name, "int8", batch, time_calls([&] { int8.forward(x); }, s, batch == 1 ? 500 : 200));
    } else {
        skipped(name, "int8", batch, "no int8 form for LayerNorm/attention models yet (PTQ covers Linear/Conv2d nets)");
    }
}

// One char_lm decode step at batch Batch.
template <std::size_t Batch>
void decode_step(const settings& s)
{
    nn::model<gpt, fp32, Shape<1, context>, Host> trained(1);
    perturb(trained, 9);
    io::save_safetensors(trained, (s.out / (stem("char_lm", Batch) + ".safetensors")).string());
    infer::decoder<gpt, fp32, Batch, context, Host> d(trained);

    // The check: prefill + 1 tokens per sequence; the logits of the last step
    // (at position `prefill`) are what the peer compares.
    std::mt19937_64 rng(300 + Batch);
    std::uniform_int_distribution<int> token(0, vocab - 1);
    std::vector<i32> tokens(Batch * (prefill + 1));
    for (auto& t : tokens) t = token(rng);
    std::vector<i32> step(Batch);
    std::vector<float> logits;
    for (std::size_t t = 0; t <= prefill; ++t) {
        for (std::size_t b = 0; b < Batch; ++b) step[b] = tokens[b * (prefill + 1) + t];
        const auto l = d.step(std::span<const i32>(step));
        if (t == prefill) logits.assign(l.data(), l.data() + Batch * vocab);
    }
    write_npy(s.out / (stem("char_lm", Batch) + "_tokens.npy"), tokens.data(), {Batch, prefill + 1});
    write_npy(s.out / (stem("char_lm", Batch) + "_fp32_out.npy"), logits.data(), {Batch, vocab});

    // Timed: steps at positions prefill + 1 .. context - 1; then every
    // sequence is reset and refilled to `prefill` (untimed).
    using clock = std::chrono::steady_clock;
    for (int i = 0; i < 20; ++i) d.step(std::span<const i32>(step));  // warm-up: positions 65..84
    std::vector<double> us;
    const double budget = s.quick ? 0.3 : 2.0;
    const std::size_t least = Batch == 1 ? 500 : 200, most = s.quick ? 500 : 20000;
    const auto start = clock::now();
    while (us.size() < most &&
           (us.size() < least || std::chrono::duration<double>(clock::now() - start).count() < budget)) {
        if (d.position(0) == context) {
            d.reset();
            for (std::size_t t = 0; t < prefill; ++t) d.step(std::span<const i32>(step));
        }
        const auto t0 = clock::now();
        d.step(std::span<const i32>(step));
        us.push_back(std::chrono::duration<double, std::micro>(clock::now() - t0).count());
    }
    report("char_lm", "fp32", Batch, summarize(us));
    skipped("char_lm", "int8", Batch, "no int8 decoder yet");
}

}  // namespace

int main(int argc, char** argv)
{
    settings s;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--out") == 0 && i + 1 < argc) s.out = argv[++i];
        else if (std::strcmp(argv[i], "--quick") == 0) s.quick = true;
        else {
            std::fprintf(stderr, "usage: %s [--out DIR] [--quick]\n", argv[0]);
            return 2;
        }
    }
    std::filesystem::create_directories(s.out);
#if defined(TENET_WITH_ONEDNN)
    const char* gemm = "oneDNN";
#else
    const char* gemm = "Eigen";
#endif
    bench::json_line("host_inference_machine")
        .field("cpu", bench::cpu_model())
        .field("isa", bench::vector_isa())
        .field("threads", host_threads())
        .field("cores", static_cast<std::size_t>(std::thread::hardware_concurrency()))
        .field("host_gemm", gemm)
        .field("out", s.out.string())
        .print();

    classifier<mlp, Shape<1, 784>, true>("mlp", s);
    classifier<mlp, Shape<32, 784>, true>("mlp", s);
    classifier<cnn, Shape<1, 28, 28, 1>, true>("cnn", s);
    classifier<cnn, Shape<32, 28, 28, 1>, true>("cnn", s);
    classifier<vit, Shape<1, 28, 28, 1>, false>("vit", s);
    classifier<vit, Shape<32, 28, 28, 1>, false>("vit", s);
    decode_step<1>(s);
    decode_step<32>(s);
}
