// Learning-rate schedules: small trivially copyable structs that the
// optimizer kernel evaluates on the device from the device step counter, so
// the host never synchronises to learn the step. `s(step)` is the rate of the
// update numbered `step`, counting from 0 (the first update uses step 0): the
// closed forms of PyTorch's schedulers with `scheduler.step()` after every
// `optimizer.step()`. Rates are computed in f32. `check()` (host) throws
// tenet::error for a configuration whose formula is undefined or whose rate
// is negative, not finite, or zero for the whole schedule (parameters that
// never move); the optimizer calls it once, at construction.
#pragma once

#include "../config.hpp"
#include "../expr/math.hpp"
#include "../memory/error.hpp"
#include "hyperparameters.hpp"

#include <concepts>
#include <cstdint>
#include <limits>
#include <numbers>
#include <string>
#include <type_traits>

namespace tenet::train {

template <class S>
concept lr_schedule = std::is_trivially_copyable_v<S> && requires(const S& s, std::uint64_t step) {
    { s(step) } -> std::convertible_to<float>;
};

namespace detail {

// A peak rate: positive and finite (NaN fails both comparisons).
inline void require_rate(float lr, const char* schedule, const char* name)
{
    if (!(lr > 0 && lr <= std::numeric_limits<float>::max()))
        throw error(std::string("tenet: ") + schedule + ": " + name + " must be positive and finite (got " +
                    std::to_string(lr) + "; a rate of 0 never moves the parameters)");
}

// A floor: >= 0 and finite.
inline void require_floor(float lr, const char* schedule, const char* name)
{
    if (!(lr >= 0 && lr <= std::numeric_limits<float>::max()))
        throw error(std::string("tenet: ") + schedule + ": " + name + " must be >= 0 and finite");
}

// PyTorch's _annealing_cos: from `start` at pct 0 to `end` at pct 1.
TENET_HD inline float annealing_cos(float start, float end, float pct)
{
    return end + (start - end) / 2 * (1 + math::cos(std::numbers::pi_v<float> * pct));
}

}  // namespace detail

// The same rate at every step.
struct constant_lr {
    float lr;

    void check() const { detail::require_rate(lr, "constant_lr", "lr"); }
    TENET_HD constexpr float operator()(std::uint64_t) const { return lr; }
};

// StepLR: lr * gamma^floor(step / step_size).
struct step_lr {
    float lr;
    std::uint64_t step_size;
    float gamma;

    void check() const
    {
        detail::require_rate(lr, "step_lr", "lr");
        detail::require_hyperparameter(step_size > 0, "step_lr", "step_size must be positive");
        detail::require_rate(gamma, "step_lr", "gamma");
    }
    TENET_HD float operator()(std::uint64_t step) const
    {
        return lr * math::pow(gamma, static_cast<float>(step / step_size));
    }
};

// Linear warm-up, then cosine decay to min_lr. Steps 0 .. warmup_steps-1
// rise as lr * (step+1) / warmup_steps, so the first update is not wasted at
// rate 0 and step warmup_steps-1 reaches lr. From step warmup_steps the rate
// is min_lr + (lr - min_lr) * (1 + cos(pi p)) / 2 with
// p = (step - warmup_steps) / (total_steps - warmup_steps) clamped to [0, 1]:
// lr again at step warmup_steps, min_lr from step total_steps on (the last
// update, total_steps-1, is one step short of it).
struct warmup_cosine_lr {
    float lr;
    std::uint64_t warmup_steps;
    std::uint64_t total_steps;
    float min_lr = 0;

    void check() const
    {
        detail::require_rate(lr, "warmup_cosine_lr", "lr");
        detail::require_floor(min_lr, "warmup_cosine_lr", "min_lr");
        detail::require_hyperparameter(warmup_steps <= total_steps, "warmup_cosine_lr",
                                 "warmup_steps must not exceed total_steps");
    }
    TENET_HD float operator()(std::uint64_t step) const
    {
        if (step < warmup_steps) return lr * static_cast<float>(step + 1) / static_cast<float>(warmup_steps);
        if (step >= total_steps) return min_lr;
        const float p = static_cast<float>(step - warmup_steps) / static_cast<float>(total_steps - warmup_steps);
        return detail::annealing_cos(lr, min_lr, p);
    }
};

// OneCycleLR, anneal_strategy='cos', three_phase=False: from max_lr/div_factor
// up to max_lr by step pct_start*total_steps - 1, then down to
// max_lr/div_factor/final_div_factor at step total_steps-1. PyTorch raises
// past total_steps; here later steps keep the final rate.
struct one_cycle_lr {
    float max_lr;
    std::uint64_t total_steps;
    float pct_start = 0.3f;
    float div_factor = 25;
    float final_div_factor = 1e4f;

    void check() const
    {
        detail::require_rate(max_lr, "one_cycle_lr", "max_lr");
        detail::require_rate(div_factor, "one_cycle_lr", "div_factor");
        detail::require_rate(final_div_factor, "one_cycle_lr", "final_div_factor");
        // Both phases need a positive length: 0 < pct_start*total_steps - 1 < total_steps - 1.
        const double warm_end = static_cast<double>(pct_start) * static_cast<double>(total_steps) - 1;
        detail::require_hyperparameter(pct_start > 0 && pct_start < 1 && warm_end > 0 &&
                                     warm_end < static_cast<double>(total_steps) - 1,
                                 "one_cycle_lr", "pct_start * total_steps must lie in (1, total_steps)");
    }
    TENET_HD float operator()(std::uint64_t step) const
    {
        const float initial = max_lr / div_factor;
        const float warm_end = pct_start * static_cast<float>(total_steps) - 1;
        const float last = static_cast<float>(total_steps - 1);
        const float s = static_cast<float>(step);
        if (s <= warm_end) return detail::annealing_cos(initial, max_lr, s / warm_end);
        if (s >= last) return initial / final_div_factor;
        return detail::annealing_cos(max_lr, initial / final_div_factor, (s - warm_end) / (last - warm_end));
    }
};

// What an optimizer or trainer given no schedule trains with: the rule's
// conventional rate (Rule::default_lr: AdamW's 1e-3 as in PyTorch, LAMB's
// 1e-3 as in apex's FusedLAMB) at every step. A rule without one (SGD) must
// be given its rate: a compile error otherwise. A schedule type named without
// a value is value-initialised, and its check() rejects the zero rate.
template <class Rule>
concept has_default_lr = requires {
    { Rule::default_lr } -> std::convertible_to<float>;
};

template <class Rule, class Schedule>
Schedule default_schedule()
{
    if constexpr (!std::is_same_v<Schedule, constant_lr>) {
        return Schedule{};
    } else {
        static_assert(has_default_lr<Rule>, "tenet: this optimizer rule has no conventional learning rate (SGD): "
                                            "give it a schedule, e.g. train::constant_lr{0.01f}");
        if constexpr (has_default_lr<Rule>) return constant_lr{Rule::default_lr};
        else return constant_lr{0};
    }
}

}  // namespace tenet::train
