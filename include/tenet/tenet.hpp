// tenet: static-shape tensors, one fused kernel per assignment, and the
// training stack around them. Include this one header.
#pragma once

#include "config.hpp"
#include "diagnostic.hpp"

#include "numeric/compute.hpp"
#include "numeric/convert.hpp"
#include "numeric/precision.hpp"
#include "numeric/traits.hpp"
#include "numeric/types.hpp"

#include "shape/broadcast.hpp"
#include "shape/layout.hpp"
#include "shape/shape.hpp"

#include "memory/cuda_check.hpp"
#include "memory/device.hpp"
#include "memory/error.hpp"
#include "memory/place.hpp"
#include "memory/stream.hpp"

#include "tensor/tensor.hpp"
#include "tensor/view.hpp"

#include "tensor/copy.hpp"

#include "expr/operators.hpp"
#include "expr/random.hpp"
#include "expr/views.hpp"

#include "exec/assign.hpp"

#include "reduce/reduce.hpp"

#include "rowwise/rowwise.hpp"

#include "linalg/linalg.hpp"

#include "autodiff/autodiff.hpp"

#include "nn/layers.hpp"
#include "profile/profile.hpp"
#include "train/train.hpp"
#include "prune/prune.hpp"
#include "quant/quant.hpp"
#include "data/data.hpp"
