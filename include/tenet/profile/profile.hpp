// Profiling and progress (tenet::profile): NVTX ranges for Nsight, a host
// timer, the training progress bar, and the notice for unoptimized host code.
#pragma once

#include "nvtx.hpp"
#include "optimization_notice.hpp"
#include "progress.hpp"
#include "timer.hpp"
