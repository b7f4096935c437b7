// The numeric layer: element types (f32, bf16, fp8, ...), their traits and
// bit formats, exact conversions, compute types, vec<T, K> and the precision
// policies. (Each header also stands alone.)
#pragma once

#include "compute.hpp"
#include "convert.hpp"
#include "float_format.hpp"
#include "precision.hpp"
#include "traits.hpp"
#include "types.hpp"
#include "vec.hpp"
