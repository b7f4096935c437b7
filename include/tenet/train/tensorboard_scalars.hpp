// A trainer's progress as TensorBoard scalars (profile::tensorboard_writer):
//
//   profile::tensorboard_writer log("runs/cnn.bf16");
//   ... every so many steps (reading the loss waits for the stream; data
//   parallel: every rank reads it, rank 0 writes):
//   train::log_progress(log, trainer.state(), trainer.mean_loss(), step, samples_per_second);
//
// writes, at `step`:
//   train/loss               the loss given (NaN: left out)
//   train/lr                 the last step's learning rate
//   train/grad_norm          the last step's global gradient norm, where the
//                            step computes one (clipping, loss scaling, a
//                            layerwise rule or skip_nonfinite; else left out)
//   train/loss_scale         the dynamic loss scale (1 without scaling)
//   train/skipped_steps      updates skipped so far for non-finite gradients
//   train/samples_per_second what the caller measured
// Per-epoch figures (test accuracy, ...) the caller writes itself with
// tensorboard_writer::scalar.
#pragma once

#include "../profile/tensorboard.hpp"
#include "loss_scaler.hpp"

#include <cmath>
#include <cstdint>

namespace tenet::train {

inline void log_progress(profile::tensorboard_writer& log, const step_state& state, double loss, std::int64_t step,
                         double samples_per_second)
{
    if (!std::isnan(loss)) log.scalar("train/loss", loss, step);  // (an empty window has no loss)
    log.scalar("train/lr", state.last_lr, step);
    if (state.last_grad_norm > 0.0f) log.scalar("train/grad_norm", state.last_grad_norm, step);
    log.scalar("train/loss_scale", state.loss_scale, step);
    log.scalar("train/skipped_steps", static_cast<double>(state.skipped), step);
    log.scalar("train/samples_per_second", samples_per_second, step);
}

}  // namespace tenet::train
