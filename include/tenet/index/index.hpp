// Integer-indexed access: index range checks, take (the gather), and the
// deterministic scatter-add that is its backward.
#pragma once

#include "index_range.hpp"
#include "scatter_add.hpp"
#include "take.hpp"
