// The training stack: optimizers (SGD, AdamW, LAMB) fused into one launch,
// dynamic loss scaling, LR schedules, early stopping, the trainer (eager or
// CUDA Graph), checkpoints.
#pragma once

#include "early_stopping.hpp"
#include "lr_schedule.hpp"
#include "optimizer.hpp"
#include "trainer.hpp"
