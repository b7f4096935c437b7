// Integer-indexed access: index range checks, take (the gather), the
// deterministic scatter-add that is its backward, and top_k (the positions of
// the largest scores).
#pragma once

#include "index_range.hpp"
#include "scatter_add.hpp"
#include "take.hpp"
#include "top_k.hpp"
