// tenet: static-shape tensors, one fused kernel per assignment, and the
// training stack around them. Include this one header.
#pragma once

#include "config.hpp"
#include "diagnostic.hpp"

#include "numeric/numeric.hpp"
#include "shape/shape.hpp"
#include "memory/memory.hpp"
#include "profile/profile.hpp"
#include "io/io.hpp"
#include "tensor/tensor.hpp"
#include "expr/expr.hpp"
#include "exec/exec.hpp"
#include "reduce/reduce.hpp"
#include "index/index.hpp"
#include "rowwise/rowwise.hpp"
#include "linalg/linalg.hpp"
#include "autodiff/autodiff.hpp"
#include "nn/nn.hpp"
#include "prune/prune.hpp"
#include "train/train.hpp"
#include "quant/quant.hpp"
#include "data/data.hpp"
#include "infer/infer.hpp"
