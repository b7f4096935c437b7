// Profiling and progress (tenet::profile): NVTX ranges for Nsight, a host
// timer, and the training progress bar.
#pragma once

#include "nvtx.hpp"
#include "progress.hpp"
#include "timer.hpp"
