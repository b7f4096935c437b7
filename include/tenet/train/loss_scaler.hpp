// Dynamic loss scaling, as PyTorch's GradScaler does it: the loss gradient is
// multiplied by `scale` so small fp16 gradients do not flush to zero, and the
// optimizer divides it out again. A step whose gradients hold an inf or NaN is
// skipped and the scale shrinks; after `growth_interval` finite steps in a row
// it grows. The state lives in the model's place and is advanced inside the
// optimizer kernel, so no step waits for the host.
#pragma once

#include "../config.hpp"

#include <cstdint>

namespace tenet::train {

struct loss_scaler_options {
    float initial_scale = 65536.0f;  // 2^16
    float growth_factor = 2.0f;
    float backoff_factor = 0.5f;
    std::uint32_t growth_interval = 2000;
};

// Everything a training step keeps between steps apart from tensors.
struct step_state {
    float loss_scale = 1.0f;          // stays 1 without dynamic loss scaling
    std::uint32_t good_steps = 0;     // finite steps since the scale last changed
    std::uint64_t iteration = 0;      // optimizer calls so far: the LR schedule's step
    std::uint64_t applied = 0;        // updates applied: Adam's bias-correction count
    std::uint64_t skipped = 0;        // updates skipped for a non-finite gradient
    float last_lr = 0.0f;             // the learning rate of the last call
    float last_grad_norm = 0.0f;      // global L2 norm of the last unscaled gradient (when computed)
    std::uint32_t last_skipped = 0;   // 1 when the last call skipped its update
    std::uint64_t nonfinite = 0;      // calls whose gradient held an inf or NaN (skipped or not)
};

// The state after one optimizer call. skipped: its update was skipped (for an
// inf/NaN gradient); found_nonfinite: its gradient held an inf or NaN.
TENET_HD inline step_state advance(step_state s, bool skipped, bool found_nonfinite, bool dynamic_scaling,
                                   const loss_scaler_options& o, float lr, float grad_norm)
{
    ++s.iteration;
    s.last_lr = lr;
    s.last_grad_norm = grad_norm;
    s.last_skipped = skipped ? 1u : 0u;
    if (found_nonfinite) ++s.nonfinite;
    if (skipped) {
        ++s.skipped;
    } else {
        ++s.applied;
    }
    if (dynamic_scaling) {
        if (skipped) {
            s.loss_scale *= o.backoff_factor;
            s.good_steps = 0;
        } else if (++s.good_steps == o.growth_interval) {
            s.loss_scale *= o.growth_factor;
            s.good_steps = 0;
        }
    }
    return s;
}

// Why `s` (read from a file) is no state advance() can reach, or "" when it
// could be: a loss scale that is not finite and positive (exactly 1 without
// dynamic scaling), counters that do not add up or would wrap (Adam's bias
// correction divides by 1 - beta^(applied + 1)), a non-finite last lr or norm.
inline const char* implausible(const step_state& s, bool dynamic_scaling, const loss_scaler_options& o)
{
    if (!(s.loss_scale > 0.0f && s.loss_scale <= 3.4028235e38f)) return "the loss scale is not finite and positive";
    if (!dynamic_scaling && s.loss_scale != 1.0f) return "the loss scale is not 1 for a policy without loss scaling";
    if (dynamic_scaling && s.good_steps >= o.growth_interval) return "good_steps reaches the growth interval";
    if (s.iteration == ~std::uint64_t{0}) return "the iteration count would wrap";
    if (s.skipped > s.iteration || s.applied != s.iteration - s.skipped)
        return "applied + skipped updates differ from the iteration count";
    if (s.nonfinite < s.skipped || s.nonfinite > s.iteration) return "the non-finite step count is out of range";
    if (s.last_skipped > 1) return "last_skipped is neither 0 nor 1";
    if (!(s.last_lr >= -3.4028235e38f && s.last_lr <= 3.4028235e38f)) return "the last learning rate is not finite";
    if (!(s.last_grad_norm >= 0.0f && s.last_grad_norm <= 3.4028235e38f))
        return "the last gradient norm is not finite and non-negative";
    return "";
}

}  // namespace tenet::train
