// char_lm: a character-level causal language model (a small GPT) trained on
// plain text -- by default the poems, people and wisdom files of Debian's
// fortunes package, about 450 KB (scripts/char_lm.sh installs it).
//
//   tokens (bytes, 7-bit) -> Embedding + learned positions
//     -> 4 causal pre-norm encoder layers (width 128, 4 heads, MLP 512)
//     -> LayerNorm -> Linear to 128 logits per position
//
// Each step trains on --batch random windows of 128 characters of the first
// 90% of the text, every position predicting the next character (AdamW,
// warm-up then cosine decay). Every --eval-every steps it prints the
// training loss and the loss on fixed windows of the last 10%, in nats and
// in bits per character next to the unigram baseline (the entropy of the
// training text's character frequencies): a model that has learned nothing
// scores the baseline. At the end it samples text from the trained model,
// greedily and at --temperature, from --prompt, and prints one JSON line.
//
//   char_lm [--text PATH]... [--steps N] [--batch B] [--lr LR] [--policy fp32|bf16|fp16]
//           [--eval-every N] [--sample-chars N] [--temperature T] [--prompt TEXT]
//           [--seed S] [--host] [--max-bits-per-char X]
//
// With --max-bits-per-char it exits 1 when the final validation figure is
// above X. It runs on the GPU when compiled by nvcc and one is present,
// otherwise on the host.
#include <tenet/tenet.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace tenet;

namespace {

constexpr std::size_t vocab = 128;  // 7-bit characters; others become '?'
constexpr std::size_t context = 128;
constexpr std::size_t width = 128;
constexpr std::size_t batch = 32;
using block = nn::TransformerEncoderLayer<width, 4, 4 * width, /*Causal=*/true>;
using gpt = nn::Sequential<nn::Embedding<vocab, width>, nn::PositionalEmbedding<context, width>, block, block, block,
                           block, nn::LayerNorm<width>, nn::Linear<width, vocab>>;
using tokens_shape = Shape<batch, context>;
// The same model with each block gradient-checkpointed: only its activation
// figure is printed (what a user would trade one more forward per block for).
using gpt_checkpointed =
    nn::Sequential<nn::Embedding<vocab, width>, nn::PositionalEmbedding<context, width>, nn::Checkpointed<block>,
                   nn::Checkpointed<block>, nn::Checkpointed<block>, nn::Checkpointed<block>, nn::LayerNorm<width>,
                   nn::Linear<width, vocab>>;

struct options {
    std::vector<std::string> texts;
    std::size_t steps = 1500;
    float lr = 1e-3f;
    std::string policy = "fp32";
    std::size_t eval_every = 100;
    std::size_t sample_chars = 300;
    float temperature = 0.8f;
    std::string prompt = "The ";
    std::uint64_t seed = 1;
    bool host = false;
    double max_bits_per_char = 0;  // 0: no limit
};

[[noreturn]] void usage(const std::string& why)
{
    std::cerr << "char_lm: " << why << "\n"
              << "usage: char_lm [--text PATH]... [--steps N] [--lr LR] [--policy fp32|bf16|fp16]\n"
              << "               [--eval-every N] [--sample-chars N] [--temperature T] [--prompt TEXT]\n"
              << "               [--seed S] [--host] [--max-bits-per-char X]\n";
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
        if (arg == "--text") o.texts.push_back(value());
        else if (arg == "--steps") o.steps = std::stoul(value());
        else if (arg == "--lr") o.lr = std::stof(value());
        else if (arg == "--policy") o.policy = value();
        else if (arg == "--eval-every") o.eval_every = std::stoul(value());
        else if (arg == "--sample-chars") o.sample_chars = std::stoul(value());
        else if (arg == "--temperature") o.temperature = std::stof(value());
        else if (arg == "--prompt") o.prompt = value();
        else if (arg == "--seed") o.seed = std::stoull(value());
        else if (arg == "--host") o.host = true;
        else if (arg == "--max-bits-per-char") o.max_bits_per_char = std::stod(value());
        else usage("unknown argument " + arg);
    }
    if (o.texts.empty())
        for (const char* name : {"songs-poems", "people", "wisdom"})
            o.texts.push_back(std::string("/usr/share/games/fortunes/") + name);
    if (o.policy != "fp32" && o.policy != "bf16" && o.policy != "fp16") usage("--policy must be fp32, bf16 or fp16");
    if (o.steps == 0 || o.eval_every == 0) usage("--steps and --eval-every must be at least 1");
    if (!(o.temperature > 0)) usage("--temperature must be positive");
    if (!(o.lr > 0)) usage("--lr must be positive");
    return o;
}

i32 token_of(unsigned char c) { return c < vocab ? static_cast<i32>(c) : static_cast<i32>('?'); }

std::vector<i32> read_tokens(const std::vector<std::string>& paths)
{
    std::vector<i32> tokens;
    for (const auto& path : paths) {
        const std::vector<std::byte> bytes = io::read_file(path, std::uint64_t{1} << 30, "text");
        for (const std::byte b : bytes) tokens.push_back(token_of(static_cast<unsigned char>(b)));
    }
    if (tokens.size() < 20 * (context + 1))
        throw error("tenet: char_lm: the text has " + std::to_string(tokens.size()) + " characters; it needs at least " +
                    std::to_string(20 * (context + 1)));
    return tokens;
}

// The entropy of the characters' frequencies, in bits: what a model that
// knows only how often each character occurs scores.
double unigram_bits(const std::vector<i32>& text)
{
    std::vector<double> count(vocab, 0.0);
    for (const i32 t : text) count[static_cast<std::size_t>(t)] += 1;
    double bits = 0;
    for (const double c : count)
        if (c > 0) bits -= c / static_cast<double>(text.size()) * std::log2(c / static_cast<double>(text.size()));
    return bits;
}

// Windows of the text: inputs text[s, s + context) and, one later, labels.
struct windows {
    Tensor<i32, tokens_shape, Host> tokens, labels;
    Tensor<f32, tokens_shape, Host> valid;

    windows() { assign(valid.view(), 1.0f); }

    void fill(const std::vector<i32>& text, std::size_t begin, std::size_t end, std::mt19937_64& rng)
    {
        std::uniform_int_distribution<std::size_t> start(begin, end - context - 1);
        for (std::size_t b = 0; b < batch; ++b) place(text, b, start(rng));
    }

    void place(const std::vector<i32>& text, std::size_t row, std::size_t s)
    {
        std::copy_n(text.begin() + static_cast<std::ptrdiff_t>(s), context, tokens.data() + row * context);
        std::copy_n(text.begin() + static_cast<std::ptrdiff_t>(s + 1), context, labels.data() + row * context);
    }
};

template <class T, class S, class Place>
auto in_place(const Tensor<T, S, Host>& host)
{
    if constexpr (std::is_same_v<Place, Host>) {
        return host.view();
    } else {
        Tensor<T, S, Place> moved;
        copy(moved, host);
        return moved;
    }
}

// Text from the trained parameters: a model of one sequence; the context so
// far sits at positions 0..n-1 (causal attention: what follows cannot change
// them) and position n-1's logits give the next character.
template <class P, class Place, class Trained>
std::string sample(const Trained& trained, const options& o, bool greedy, std::uint64_t seed)
{
    nn::model<gpt, P, Shape<1, context>, Place> m(0);
    nn::copy_parameters(m, trained);
    m.eval();
    std::string text = o.prompt;
    Tensor<i32, Shape<1, context>, Host> window;
    Tensor<typename P::storage, Shape<1, context, vocab>, Host> stored;
    Tensor<f32, Shape<1, context, vocab>, Host> logits;
    std::mt19937_64 rng(seed);
    for (std::size_t k = 0; k < o.sample_chars; ++k) {
        const std::size_t n = std::min(text.size(), context);
        assign(window.view(), static_cast<i32>(' '));
        for (std::size_t i = 0; i < n; ++i) window.data()[i] = token_of(static_cast<unsigned char>(text[text.size() - n + i]));
        copy(stored, m.forward(in_place<i32, Shape<1, context>, Place>(window)));
        current_stream().synchronize();
        logits = stored;
        const float* row = logits.data() + (n - 1) * vocab;
        std::size_t next = 0;
        if (greedy) {
            next = static_cast<std::size_t>(std::max_element(row, row + vocab) - row);
        } else {
            std::vector<double> weight(vocab);
            const float top = *std::max_element(row, row + vocab);
            for (std::size_t v = 0; v < vocab; ++v) weight[v] = std::exp((row[v] - top) / o.temperature);
            next = std::discrete_distribution<std::size_t>(weight.begin(), weight.end())(rng);
        }
        text += static_cast<char>(next);
    }
    return text;
}

template <class P, class Place>
int run(const options& o, const std::vector<i32>& text, const char* where)
{
    const std::size_t split = text.size() * 9 / 10;
    const double baseline = unigram_bits(std::vector<i32>(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(split)));
    nn::model<gpt, P, tokens_shape, Place> model(o.seed);
    train::trainer trainer(model, train::adamw{0.9f, 0.95f, 1e-8f, 0.1f},
                           train::warmup_cosine_lr{o.lr, std::min<std::uint64_t>(100, o.steps / 10), o.steps, o.lr / 10});
    std::printf("char_lm: %zu characters (%zu to train on, %zu to validate), %zu parameters, %s, %s\n", text.size(), split,
                text.size() - split, decltype(model)::parameter_count, where, o.policy.c_str());
    constexpr double mib = 1 << 20;
    std::printf("activations kept for the backward: %.1f MiB (%.1f MiB with each block Checkpointed)\n",
                decltype(model)::activation_bytes / mib,
                nn::model<gpt_checkpointed, P, tokens_shape, Place>::activation_bytes / mib);
    std::printf("unigram baseline: %.3f bits per character\n\n", baseline);
    std::printf("%8s %14s %14s %14s %14s %10s\n", "step", "train nats", "val nats", "train bits/ch", "val bits/ch", "seconds");

    // Fixed validation windows, evenly spread over the held-out tenth.
    constexpr std::size_t validation_batches = 4;
    std::vector<windows> validation(validation_batches);
    const std::size_t span = text.size() - split - context - 1;
    for (std::size_t v = 0; v < validation_batches; ++v)
        for (std::size_t b = 0; b < batch; ++b)
            validation[v].place(text, b, split + (v * batch + b) * span / (validation_batches * batch));

    std::mt19937_64 rng(o.seed);
    windows w;
    profile::host_timer timer;
    double train_nats = 0, val_nats = 0;
    for (std::size_t step = 1; step <= o.steps; ++step) {
        w.fill(text, 0, split, rng);
        trainer.step(in_place<i32, tokens_shape, Place>(w.tokens), in_place<i32, tokens_shape, Place>(w.labels),
                     in_place<f32, tokens_shape, Place>(w.valid));
        if (step % o.eval_every == 0 || step == o.steps) {
            train_nats = trainer.mean_loss();
            for (auto& v : validation)
                trainer.evaluate(in_place<i32, tokens_shape, Place>(v.tokens), in_place<i32, tokens_shape, Place>(v.labels),
                                 in_place<f32, tokens_shape, Place>(v.valid));
            val_nats = trainer.evaluation_loss();
            std::printf("%8zu %14.4f %14.4f %14.3f %14.3f %10.1f\n", step, train_nats, val_nats, train_nats / std::log(2.0),
                        val_nats / std::log(2.0), timer.seconds());
            std::fflush(stdout);
        }
    }
    const double seconds = timer.seconds();
    const double val_bits = val_nats / std::log(2.0);

    std::printf("\ngreedy from \"%s\":\n%s\n\n", o.prompt.c_str(), sample<P, Place>(model, o, true, o.seed).c_str());
    std::printf("temperature %.2f from \"%s\":\n%s\n\n", o.temperature, o.prompt.c_str(),
                sample<P, Place>(model, o, false, o.seed).c_str());
    std::ostringstream json;
    json << "{\"example\":\"char_lm\",\"backend\":\"" << where << "\",\"policy\":\"" << o.policy
         << "\",\"characters\":" << text.size() << ",\"parameters\":" << decltype(model)::parameter_count
         << ",\"steps\":" << o.steps << ",\"batch\":" << batch << ",\"context\":" << context
         << ",\"unigram_bits_per_char\":" << baseline << ",\"train_bits_per_char\":" << train_nats / std::log(2.0)
         << ",\"validation_bits_per_char\":" << val_bits << ",\"train_seconds\":" << seconds << "}";
    std::cout << json.str() << std::endl;
    if (o.max_bits_per_char > 0 && !(val_bits <= o.max_bits_per_char)) {
        std::cerr << "char_lm: validation " << val_bits << " bits per character, above --max-bits-per-char "
                  << o.max_bits_per_char << "\n";
        return 1;
    }
    return 0;
}

template <class Place>
int run_policy(const options& o, const std::vector<i32>& text, const char* where)
{
    if (o.policy == "bf16") return run<bf16_mixed, Place>(o, text, where);
    if (o.policy == "fp16") return run<fp16_mixed, Place>(o, text, where);
    return run<fp32, Place>(o, text, where);
}

}  // namespace

int main(int argc, char** argv)
{
    const options o = parse(argc, argv);
    try {
        const std::vector<i32> text = read_tokens(o.texts);
#if TENET_CUDA_COMPILER
        if (!o.host && has_device()) return run_policy<Device>(o, text, "cuda");
#endif
        return run_policy<Host>(o, text, "host");
    } catch (const tenet::error& e) {
        std::cerr << e.what() << "\n";
        return 1;
    }
}
