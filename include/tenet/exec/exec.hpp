// Execution: assign, tie/pack, aliasing checks, the host loop and its
// thread count, the CUDA kernel and its launch, the assignment context.
// (Each header also stands alone.)
#pragma once

#include "aliasing.hpp"
#include "assign.hpp"
#include "context.hpp"
#include "host_loop.hpp"
#include "host_threads.hpp"
#include "launch.hpp"
