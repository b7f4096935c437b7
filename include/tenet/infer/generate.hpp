// generate(decoder, prompts, options): text from a batch of prompts of
// different lengths, one decoder step per position:
//
//   infer::generation_options o{.max_new_tokens = 200, .sample = {.temperature = 0.8f, .top_k = 40, .seed = 1},
//                               .stop_tokens = {'\n'}};
//   auto out = infer::generate(d, {prompt_a, prompt_b}, o);   // out[i].tokens
//
// Every sequence starts over (decoder::reset) and takes one token per step:
// its prompt's next token while it has one, then the token chosen from the
// logits of the step before (infer/sampling.hpp, a sampler of its own per
// sequence). A sequence ends at one of the stop tokens (not kept), after
// max_new_tokens, or when it fills the decoder's context; the steps stop
// when every sequence has ended. Fewer prompts than the decoder's batch
// leave the other rows idle. The same seed gives the same tokens.
#pragma once

#include "decoder.hpp"
#include "sampling.hpp"

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace tenet::infer {

struct generation_options {
    std::size_t max_new_tokens = 64;
    sampling sample{};
    std::vector<i32> stop_tokens{};  // a sequence ends at any of these (not kept)
};

enum class generation_end { stop_token, max_new_tokens, context };

struct generated {
    std::vector<i32> tokens;  // the new tokens, the prompt not included
    generation_end end = generation_end::max_new_tokens;
};

namespace detail {

template <class Decoder>
void check_prompts(const std::vector<std::vector<i32>>& prompts)
{
    if (prompts.empty() || prompts.size() > Decoder::batch)
        throw error("tenet: generate: " + std::to_string(prompts.size()) + " prompts for a decoder of batch " +
                    std::to_string(Decoder::batch) + " (give 1 to " + std::to_string(Decoder::batch) + ")");
    for (std::size_t i = 0; i < prompts.size(); ++i) {
        if (prompts[i].empty() || prompts[i].size() > Decoder::context)
            throw error("tenet: generate: prompt " + std::to_string(i) + " has " + std::to_string(prompts[i].size()) +
                        " tokens; it needs 1 to " + std::to_string(Decoder::context) + " (the decoder's context)");
        for (const i32 t : prompts[i])
            if (t < 0 || static_cast<std::size_t>(t) >= Decoder::vocabulary)
                throw index_error("tenet: generate: prompt " + std::to_string(i) + " holds token " + std::to_string(t) +
                                  ", outside [0, " + std::to_string(Decoder::vocabulary) + ")");
    }
}

}  // namespace detail

template <class Decoder>
std::vector<generated> generate(Decoder& d, const std::vector<std::vector<i32>>& prompts, const generation_options& o)
{
    detail::check_prompts<Decoder>(prompts);
    check_sampling(o.sample);
    constexpr std::size_t B = Decoder::batch, V = Decoder::vocabulary;
    const std::size_t n = prompts.size();
    std::vector<generated> out(n);
    std::vector<token_sampler> samplers;
    for (std::size_t i = 0; i < n; ++i) samplers.emplace_back(o.sample, i);
    std::vector<bool> done(n, o.max_new_tokens == 0);
    std::vector<i32> tokens(B, 0), next(n, 0);
    Tensor<f32, Shape<B, V>, Host> logits;
    Tensor<typename Decoder::storage_type, Shape<B, V>, Host> stored;
    d.reset();
    for (std::size_t t = 0; t < Decoder::context && !std::all_of(done.begin(), done.end(), [](bool e) { return e; }); ++t) {
        for (std::size_t i = 0; i < n; ++i) tokens[i] = t < prompts[i].size() ? prompts[i][t] : next[i];
        copy(stored, d.step(tokens));
        current_stream().synchronize();
        logits = stored;
        for (std::size_t i = 0; i < n; ++i) {
            if (done[i] || t + 1 < prompts[i].size()) continue;  // (still reading its prompt)
            next[i] = static_cast<i32>(samplers[i](logits.data() + i * V, V));
            if (std::find(o.stop_tokens.begin(), o.stop_tokens.end(), next[i]) != o.stop_tokens.end()) {
                out[i].end = generation_end::stop_token;
                done[i] = true;
                continue;
            }
            out[i].tokens.push_back(next[i]);
            if (out[i].tokens.size() == o.max_new_tokens) done[i] = true;
            else if (t + 1 == Decoder::context) {
                out[i].end = generation_end::context;  // (the token chosen is kept: it needs no position)
                done[i] = true;
            }
        }
    }
    return out;
}

}  // namespace tenet::infer
