// Profiling and progress (tenet::profile): NVTX ranges for Nsight, a host
// timer, the training progress bar, the notice for unoptimized host code,
// and TensorBoard event files.
#pragma once

#include "nvtx.hpp"
#include "optimization_notice.hpp"
#include "progress.hpp"
#include "tensorboard.hpp"
#include "timer.hpp"
