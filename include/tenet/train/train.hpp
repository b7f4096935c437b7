// The training stack: optimizers (SGD, AdamW, LAMB) fused into one launch,
// dynamic loss scaling, LR schedules, early stopping, the trainer (eager or
// CUDA Graph), checkpoints; fine-tuning recipes: parameter groups, weight
// averaging, the LR range test.
#pragma once

#include "early_stopping.hpp"
#include "ema.hpp"
#include "lr_range_test.hpp"
#include "lr_schedule.hpp"
#include "optimizer.hpp"
#include "parameter_groups.hpp"
#include "step_profiler.hpp"
#include "tensorboard_scalars.hpp"
#include "trainer.hpp"
