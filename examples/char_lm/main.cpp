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
// greedily and at --temperature (cut to the --top-k most likely characters
// and the --top-p nucleus when given), from --prompt, with a key/value cache
// (infer::generate: one step per character), then greedily the old way,
// recomputing the whole context per character, and prints the characters
// per second of both; last, one JSON line.
//
//   char_lm [--text PATH]... [--steps N] [--batch B] [--lr LR] [--policy fp32|bf16|fp16]
//           [--eval-every N] [--sample-chars N] [--temperature T] [--top-k K] [--top-p P] [--prompt TEXT]
//           [--seed S] [--host] [--max-bits-per-char X] [--log-dir DIR]
//           [--profile] [--profile-json PATH] [--trace PATH]
//
// --log-dir DIR writes TensorBoard event files (DIR/char_lm.<policy>): at
// every report the training loss (nats and bits per character), the
// validation loss, learning rate, gradient norm (where the step computes
// it), loss scale, skipped steps and samples (windows) per second.
//
// --profile prints where steps 4 to 23 spent their time, layer by layer
// (train::step_profiler), --profile-json PATH writes it as JSON, --trace
// PATH writes steps 1 to 23 as a Chrome trace (Perfetto, chrome://tracing).
//
// With --max-bits-per-char it exits 1 when the final validation figure is
// above X. It runs on the GPU when built with CUDA and one is present,
// otherwise on the host.
#include "training.hpp"

using namespace tenet;
using example::options, example::context, example::token_of;

namespace {

[[noreturn]] void usage(const std::string& why)
{
    std::cerr << "char_lm: " << why << "\n"
              << "usage: char_lm [--text PATH]... [--steps N] [--lr LR] [--policy fp32|bf16|fp16]\n"
              << "               [--eval-every N] [--sample-chars N] [--temperature T] [--top-k K] [--top-p P]\n"
              << "               [--prompt TEXT]\n"
              << "               [--seed S] [--host] [--max-bits-per-char X] [--log-dir DIR]\n"
              << "               [--profile] [--profile-json PATH] [--trace PATH]\n";
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
        else if (arg == "--top-k") o.top_k = std::stoul(value());
        else if (arg == "--top-p") o.top_p = std::stof(value());
        else if (arg == "--prompt") o.prompt = value();
        else if (arg == "--seed") o.seed = std::stoull(value());
        else if (arg == "--host") o.host = true;
        else if (arg == "--max-bits-per-char") o.max_bits_per_char = std::stod(value());
        else if (arg == "--log-dir") o.log_dir = value();
        else if (arg == "--profile") o.profile = true;
        else if (arg == "--profile-json") o.profile_json = value();
        else if (arg == "--trace") o.trace = value();
        else usage("unknown argument " + arg);
    }
    if (o.texts.empty())
        for (const char* name : {"songs-poems", "people", "wisdom"})
            o.texts.push_back(std::string("/usr/share/games/fortunes/") + name);
    if (o.policy != "fp32" && o.policy != "bf16" && o.policy != "fp16") usage("--policy must be fp32, bf16 or fp16");
    if (o.steps == 0 || o.eval_every == 0) usage("--steps and --eval-every must be at least 1");
    if (!(o.temperature > 0)) usage("--temperature must be positive");
    if (!(o.top_p > 0 && o.top_p <= 1)) usage("--top-p must lie in (0, 1]");
    if (o.prompt.empty()) usage("--prompt must not be empty");
    if (!(o.lr > 0)) usage("--lr must be positive");
    return o;
}

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

}  // namespace

int main(int argc, char** argv)
{
    const options o = parse(argc, argv);
    try {
        const std::vector<i32> text = read_tokens(o.texts);
#if TENET_EXAMPLE_DEVICE
        if (!o.host && has_device()) return example::run_on_device(o, text);
#endif
        return example::run_on_host(o, text);
    } catch (const tenet::error& e) {
        std::cerr << e.what() << "\n";
        return 1;
    }
}
