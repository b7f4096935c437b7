// The char_lm example's model, options and training, shared by its
// translation units: main.cpp (options, reading the text), train_host.cpp
// (the host instantiations, compiled by the C++ compiler in every build)
// and, in CUDA builds, train_device.cu (compiled by nvcc), so nvcc does not
// compile the host models as well (it takes about twice g++'s time on them).
#pragma once

#include <tenet/tenet.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace example {

using namespace tenet;

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
    std::size_t top_k = 0;  // 0: every character
    float top_p = 1.0f;
    std::string prompt = "The ";
    std::uint64_t seed = 1;
    bool host = false;
    double max_bits_per_char = 0;  // 0: no limit
    std::string log_dir;           // TensorBoard event files ("": none)
    bool profile = false;          // print the per-layer profile of steps 4 to 23
    std::string profile_json;      // and write it as JSON ("": not)
    std::string trace;             // a Chrome trace of those steps ("": none)
};

inline i32 token_of(unsigned char c) { return c < vocab ? static_cast<i32>(c) : static_cast<i32>('?'); }

// The entropy of the characters' frequencies, in bits: what a model that
// knows only how often each character occurs scores.
inline double unigram_bits(const std::vector<i32>& text)
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

inline std::vector<i32> tokens_of(const std::string& text)
{
    std::vector<i32> out;
    for (const char c : text) out.push_back(token_of(static_cast<unsigned char>(c)));
    return out;
}

// Text the old way, recomputing the whole context for every character: a
// model of one sequence; the context so far sits at positions 0..n-1
// (causal attention: what follows cannot change them) and position n-1's
// logits give the next character. Greedy, for the comparison below.
template <class P, class Place, class Trained>
std::string greedy_by_recomputing(const Trained& trained, const options& o, std::size_t count)
{
    nn::model<gpt, P, Shape<1, context>, Place> m(0);
    nn::copy_parameters(m, trained);
    m.eval();
    std::string text = o.prompt;
    Tensor<i32, Shape<1, context>, Host> window;
    Tensor<typename P::storage, Shape<1, context, vocab>, Host> stored;
    Tensor<f32, Shape<1, context, vocab>, Host> logits;
    for (std::size_t k = 0; k < count; ++k) {
        const std::size_t n = std::min(text.size(), context);
        assign(window.view(), static_cast<i32>(' '));
        for (std::size_t i = 0; i < n; ++i) window.data()[i] = token_of(static_cast<unsigned char>(text[text.size() - n + i]));
        copy(stored, m.forward(in_place<i32, Shape<1, context>, Place>(window)));
        current_stream().synchronize();
        logits = stored;
        text += static_cast<char>(infer::greedy_token(logits.data() + (n - 1) * vocab, vocab));
    }
    return text;
}

// Text with the key/value cache (infer::generate): one step per character.
// The positions the learned embedding knows end at the context: when it is
// full, generation goes on from the last half of it.
template <class P, class Place, class Trained>
std::string generate_text(const Trained& trained, const options& o, infer::sampling sample)
{
    infer::decoder<gpt, P, 1, context, Place> d(trained);
    std::vector<i32> text = tokens_of(o.prompt);
    if (text.size() > context) text.erase(text.begin(), text.end() - static_cast<std::ptrdiff_t>(context));
    const std::size_t prompt = text.size();
    for (std::size_t keep = text.size(); text.size() - prompt < o.sample_chars; keep = context / 2, ++sample.seed) {
        const std::vector<i32> window(text.end() - static_cast<std::ptrdiff_t>(keep), text.end());
        const auto out = infer::generate(d, {window}, {.max_new_tokens = o.sample_chars - (text.size() - prompt), .sample = sample});
        text.insert(text.end(), out[0].tokens.begin(), out[0].tokens.end());
    }
    std::string s = o.prompt;
    for (std::size_t i = prompt; i < text.size(); ++i) s += static_cast<char>(text[i]);
    return s;
}

// Samples greedily and at --temperature with the cache, then greedily the
// old way, and prints both speeds: the texts agree for as long as both see
// the same context (the first window; a little rounding apart they could
// choose differently at a near tie).
template <class P, class Place, class Trained>
void print_samples(const Trained& trained, const options& o)
{
    profile::host_timer cached;
    const std::string greedy = generate_text<P, Place>(trained, o, {.temperature = 0.0f});
    const double cached_rate = static_cast<double>(o.sample_chars) / cached.seconds();
    std::printf("\ngreedy from \"%s\":\n%s\n\n", o.prompt.c_str(), greedy.c_str());
    const std::string sampled = generate_text<P, Place>(trained, o, {.temperature = o.temperature, .top_k = o.top_k, .top_p = o.top_p, .seed = o.seed});
    std::printf("temperature %.2f, top-k %zu, top-p %.2f from \"%s\":\n%s\n\n", o.temperature, o.top_k, o.top_p,
                o.prompt.c_str(), sampled.c_str());
    profile::host_timer recomputing;
    const std::string old = greedy_by_recomputing<P, Place>(trained, o, o.sample_chars);
    const double recomputing_rate = static_cast<double>(o.sample_chars) / recomputing.seconds();
    const std::size_t same_window = std::min(o.sample_chars, context + 1 - std::min(o.prompt.size(), context));
    const bool agree = greedy.compare(0, o.prompt.size() + same_window, old, 0, o.prompt.size() + same_window) == 0;
    std::printf("generation: %.0f characters/s with the key/value cache, %.0f recomputing the context (%.1fx); "
                "greedy texts %s over the first %zu characters\n\n",
                cached_rate, recomputing_rate, cached_rate / recomputing_rate, agree ? "agree" : "DIFFER", same_window);
}

// --profile, --profile-json: the table on stdout, the JSON to its file.
inline void report_profile(const profile::layer_profile& p, const options& o)
{
    if (o.profile) std::printf("\n%s\n", p.table(30).c_str());  // (--profile-json has every row)
    if (!o.profile_json.empty()) {
        std::ofstream json(o.profile_json, std::ios::binary);
        json << p.json();
        if (!json) throw io_error(o.profile_json, "cannot write the profile");
    }
    if (!o.trace.empty()) std::printf("trace of steps 1 to %zu in %s\n\n", p.steps() + 3, o.trace.c_str());
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

    std::unique_ptr<profile::tensorboard_writer> log;
    if (!o.log_dir.empty()) log = std::make_unique<profile::tensorboard_writer>(o.log_dir + "/char_lm." + o.policy);
    const bool profiling = o.profile || !o.profile_json.empty() || !o.trace.empty();
    train::step_profiler watch(trainer, profiling ? train::step_profiler_options{.trace_path = o.trace,
                                                                                   .peak = linalg::measure_peak<Place, typename P::storage>()}
                                                  : train::step_profiler_options{.warmup_steps = 0, .steps = 0});
    std::mt19937_64 rng(o.seed);
    windows w;
    profile::host_timer timer, since_report;
    double train_nats = 0, val_nats = 0;
    for (std::size_t step = 1; step <= o.steps; ++step) {
        {
            const auto wait = watch.data_wait();
            w.fill(text, 0, split, rng);
        }
        trainer.step(in_place<i32, tokens_shape, Place>(w.tokens), in_place<i32, tokens_shape, Place>(w.labels),
                     in_place<f32, tokens_shape, Place>(w.valid));
        if (watch.step_done()) report_profile(watch.profile(), o);
        if (step % o.eval_every == 0 || step == o.steps) {
            train_nats = trainer.mean_loss();
            const double steps_reported = static_cast<double>(step % o.eval_every == 0 ? o.eval_every : step % o.eval_every);
            const double windows_per_second = steps_reported * batch / since_report.seconds();  // (before validating)
            for (auto& v : validation)
                trainer.evaluate(in_place<i32, tokens_shape, Place>(v.tokens), in_place<i32, tokens_shape, Place>(v.labels),
                                 in_place<f32, tokens_shape, Place>(v.valid));
            val_nats = trainer.evaluation_loss();
            trainer.reset_metrics();  // the next report's window starts here
            if (log) {
                const auto at = static_cast<std::int64_t>(step);
                train::log_progress(*log, trainer.state(), train_nats, at, windows_per_second);
                log->scalar("train/bits_per_char", train_nats / std::log(2.0), at);
                log->scalar("validation/loss", val_nats, at);
                log->scalar("validation/bits_per_char", val_nats / std::log(2.0), at);
            }
            since_report.restart();
            std::printf("%8zu %14.4f %14.4f %14.3f %14.3f %10.1f\n", step, train_nats, val_nats, train_nats / std::log(2.0),
                        val_nats / std::log(2.0), timer.seconds());
            std::fflush(stdout);
        }
    }
    if (watch.watching()) {  // (--steps below the profiled steps)
        if (watch.finish()) report_profile(watch.profile(), o);
        else std::printf("profile: training ended within the warm-up steps: nothing counted\n");
    }
    const double seconds = timer.seconds();
    const double val_bits = val_nats / std::log(2.0);

    if (o.sample_chars > 0) print_samples<P, Place>(model, o);
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

// Trains and samples on each place; the exit code (train_host.cpp, train_device.cu).
int run_on_host(const options& o, const std::vector<i32>& text);
int run_on_device(const options& o, const std::vector<i32>& text);

}  // namespace example
