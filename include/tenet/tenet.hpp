// tenet: static-shape tensors, one fused kernel per assignment, and the
// training stack around them. Include this one header.
#pragma once

#include "config.hpp"

#include "numeric/convert.hpp"
#include "numeric/precision.hpp"
#include "numeric/traits.hpp"
#include "numeric/types.hpp"

#include "memory/cuda_check.hpp"
#include "memory/device.hpp"
#include "memory/error.hpp"
