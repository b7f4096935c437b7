// Row-wise fused NN ops over the last axis: softmax, log_softmax,
// layernorm, softmax cross-entropy, mean squared error, and their backwards;
// uncertainty scores of logits (entropy, margin, least confidence).
// Inputs may be any expressions (evaluated inside the op); 16-bit storage
// accumulates in f32; each is one loop nest on the host and one kernel on the
// device. See reduce/row_engine.hpp for how rows are split across threads.
#pragma once

#include "cross_entropy.hpp"
#include "layernorm.hpp"
#include "mse.hpp"
#include "softmax.hpp"
#include "uncertainty.hpp"
