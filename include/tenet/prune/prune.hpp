// prune/: pruning masks, magnitude pruning per layer or global, N:M
// structured (2:4) pruning, sparsity schedules, the pruner that drives them
// while a model trains (the fused optimizer keeps pruned weights at zero),
// sparsity reports, and export: CSR, 2:4 compressed, sparse files and host
// sparse inference.
#pragma once

#include "compressed_24.hpp"
#include "csr.hpp"
#include "magnitude.hpp"
#include "masks.hpp"
#include "pruner.hpp"
#include "report.hpp"
#include "sparse_file.hpp"
#include "sparse_model.hpp"
#include "sparsity_schedule.hpp"
#include "structured.hpp"
