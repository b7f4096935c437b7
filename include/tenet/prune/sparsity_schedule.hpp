// When to prune, and to what sparsity: a schedule maps a training step t to
// the target sparsity at(t) and says whether the masks are recomputed at t
// (prunes_at(t)).
//
// gradual_sparsity (Zhu & Gupta 2017, "To prune, or not to prune"): from
// step t0 = begin, every Δt = every steps, n = steps times, the sparsity rises
// from s_i = initial to s_f = final along
//   s_t = s_f + (s_i - s_f) (1 - (t - t0) / (n Δt))^3,   t0 <= t <= t0 + n Δt,
// fast at first (many redundant weights), slowly near the end (the network
// recovers between prunings). Before t0 it is s_i, after t0 + n Δt it is s_f.
// The masks are recomputed at t0 + j Δt, j = 0..n (n + 1 times).
//
// one_shot: the sparsity at one step, and from then on.
#pragma once

#include "../memory/error.hpp"

#include <concepts>
#include <cstdint>
#include <limits>
#include <string>

namespace tenet::prune {

namespace detail {

inline void check_sparsity(const char* who, const char* field, double s)
{
    if (!(s >= 0.0 && s <= 1.0))
        throw error(std::string("tenet: prune::") + who + ": " + field + " " + std::to_string(s) +
                    " is not in [0, 1]");
}

}  // namespace detail

struct gradual_sparsity {
    double initial = 0.0;
    double final = 0.9;
    std::uint64_t begin = 0;   // t0: the first pruning step
    std::uint64_t steps = 10;  // n: pruning steps after the first
    std::uint64_t every = 100;  // Δt: training steps between prunings

    std::uint64_t end() const { return begin + steps * every; }

    double at(std::uint64_t t) const
    {
        if (t <= begin) return initial;
        if (t >= end()) return final;
        const double remaining = 1.0 - static_cast<double>(t - begin) / (static_cast<double>(steps) * every);
        return final + (initial - final) * remaining * remaining * remaining;
    }

    bool prunes_at(std::uint64_t t) const { return t >= begin && t <= end() && (t - begin) % every == 0; }

    void check() const
    {
        detail::check_sparsity("gradual_sparsity", "initial sparsity", initial);
        detail::check_sparsity("gradual_sparsity", "final sparsity", final);
        if (initial > final)
            throw error("tenet: prune::gradual_sparsity: initial sparsity " + std::to_string(initial) +
                        " is above the final " + std::to_string(final));
        if (steps == 0 || every == 0)
            throw error("tenet: prune::gradual_sparsity: steps (" + std::to_string(steps) + ") and every (" +
                        std::to_string(every) + ") must be positive");
        if (every > (std::numeric_limits<std::uint64_t>::max() - begin) / steps)
            throw error("tenet: prune::gradual_sparsity: begin + steps * every overflows 64 bits");
    }
};

struct one_shot {
    double sparsity = 0.0;
    std::uint64_t step = 0;  // the step that prunes

    double at(std::uint64_t t) const { return t < step ? 0.0 : sparsity; }
    bool prunes_at(std::uint64_t t) const { return t == step; }
    void check() const { detail::check_sparsity("one_shot", "sparsity", sparsity); }
};

template <class S>
concept sparsity_schedule = requires(const S s, std::uint64_t t) {
    { s.at(t) } -> std::convertible_to<double>;
    { s.prunes_at(t) } -> std::same_as<bool>;
    s.check();
};

}  // namespace tenet::prune
