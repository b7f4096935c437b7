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
};

// The state after one optimizer call. found_nonfinite: the call's gradient held
// an inf or NaN (its update was skipped).
TENET_HD inline step_state advance(step_state s, bool found_nonfinite, bool dynamic_scaling,
                                   const loss_scaler_options& o, float lr, float grad_norm)
{
    ++s.iteration;
    s.last_lr = lr;
    s.last_grad_norm = grad_norm;
    s.last_skipped = found_nonfinite ? 1u : 0u;
    if (found_nonfinite) {
        ++s.skipped;
    } else {
        ++s.applied;
    }
    if (dynamic_scaling) {
        if (found_nonfinite) {
            s.loss_scale *= o.backoff_factor;
            s.good_steps = 0;
        } else if (++s.good_steps == o.growth_interval) {
            s.loss_scale *= o.growth_factor;
            s.good_steps = 0;
        }
    }
    return s;
}

}  // namespace tenet::train
