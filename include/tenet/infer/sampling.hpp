// Choosing the next token from a row of logits, as Hugging Face's generate
// does, in float64 on the host:
//   temperature 0 (or top_k 1)  greedy: the largest logit (ties: the lower token)
//   otherwise                   the tokens sorted by logit (ties: the lower
//                               token first), cut to the top_k most likely
//                               (0: all), then to the fewest whose
//                               probability reaches top_p (at least one),
//                               and one drawn from softmax(logits /
//                               temperature) over those left.
// token_sampler draws from its own std::mt19937_64 (whose output the C++
// standard fixes), seeded from (seed, stream) and turned into [0, 1) with
// 53 bits by hand, so the same seed draws the same tokens on every platform.
// A logit that is NaN or infinite is a tenet::error: a model that produced
// one has nothing to sample.
#pragma once

#include "../memory/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace tenet::infer {

struct sampling {
    float temperature = 1.0f;  // 0: greedy
    std::size_t top_k = 0;     // keep the k most likely tokens (0: every token)
    float top_p = 1.0f;        // then the fewest most likely whose probability reaches top_p, in (0, 1]
    std::uint64_t seed = 0;
};

// Throws a tenet::error naming what is wrong with s.
inline void check_sampling(const sampling& s)
{
    if (!(s.temperature >= 0.0f) || !std::isfinite(s.temperature))
        throw error("tenet: sampling: temperature must be finite and at least 0 (0: greedy), not " +
                    std::to_string(s.temperature));
    if (!(s.top_p > 0.0f && s.top_p <= 1.0f))
        throw error("tenet: sampling: top_p must lie in (0, 1], not " + std::to_string(s.top_p));
}

// The largest logit's token (the lower on ties).
inline std::size_t greedy_token(const float* logits, std::size_t n)
{
    std::size_t best = 0;
    for (std::size_t v = 1; v < n; ++v)
        if (logits[v] > logits[best]) best = v;
    return best;
}

class token_sampler {
public:
    // stream: one per sequence, so that a sequence draws the same tokens
    // whatever else is in the batch.
    token_sampler(const sampling& s, std::uint64_t stream) : s_(s), rng_(mix(s.seed, stream)) { check_sampling(s); }

    std::size_t operator()(const float* logits, std::size_t n)
    {
        for (std::size_t v = 0; v < n; ++v)
            if (!std::isfinite(logits[v]))
                throw error("tenet: sampling: logit " + std::to_string(v) + " is " + std::to_string(logits[v]) +
                            ": the model's output is not finite");
        if (s_.temperature == 0.0f || s_.top_k == 1) return greedy_token(logits, n);
        order_.resize(n);
        std::iota(order_.begin(), order_.end(), std::size_t{0});
        const auto higher = [&](std::size_t a, std::size_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
        const std::size_t k = s_.top_k == 0 ? n : std::min(s_.top_k, n);
        std::partial_sort(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(k), order_.end(), higher);
        weight_.resize(k);
        const double top = logits[order_[0]], t = s_.temperature;
        double total = 0;
        for (std::size_t i = 0; i < k; ++i) total += weight_[i] = std::exp((logits[order_[i]] - top) / t);
        std::size_t kept = k;  // the nucleus: the first tokens whose probability reaches top_p
        if (s_.top_p < 1.0f) {
            double sum = 0;
            for (kept = 0; kept < k;) {
                sum += weight_[kept++];
                if (sum >= s_.top_p * total) break;
            }
            total = sum;
        }
        const double u = uniform() * total;
        double sum = 0;
        for (std::size_t i = 0; i + 1 < kept; ++i)
            if ((sum += weight_[i]) > u) return order_[i];
        return order_[kept - 1];
    }

private:
    // [0, 1) from the top 53 bits of one draw
    double uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

    // splitmix64 of the seed and the stream: unrelated states for nearby streams
    static std::uint64_t mix(std::uint64_t seed, std::uint64_t stream)
    {
        std::uint64_t z = seed + 0x9E3779B97F4A7C15ull * (stream + 1);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }

    sampling s_;
    std::mt19937_64 rng_;
    std::vector<std::size_t> order_;
    std::vector<double> weight_;
};

}  // namespace tenet::infer
