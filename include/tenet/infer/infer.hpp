// Inference: infer::decoder (a token model decoding one position per step
// over key/value caches, a CUDA Graph per step on a device), the sampling
// of the next token (greedy, temperature, top-k, top-p), and generate.
#pragma once

#include "decoder.hpp"
#include "generate.hpp"
#include "sampling.hpp"
