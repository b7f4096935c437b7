// Profiling and progress (tenet::profile): NVTX ranges for Nsight, a host
// timer, the training progress bar, the notice for unoptimized host code,
// TensorBoard event files, Chrome traces, and the per-layer profile (the
// step_observer protocol, layer_profile, event_marks).
#pragma once

#include "event_marks.hpp"
#include "json_text.hpp"
#include "layer_profile.hpp"
#include "nvtx.hpp"
#include "optimization_notice.hpp"
#include "progress.hpp"
#include "step_observer.hpp"
#include "tensorboard.hpp"
#include "trace.hpp"
#include "timer.hpp"
