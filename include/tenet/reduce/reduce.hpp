// Reductions: sum, mean, prod, norm2, max, min, argmax, argmin over all
// elements or compile-time axes (reductions.hpp), their monoids (ops.hpp),
// and the row engine they share with rowwise/ (row_engine.hpp).
#pragma once

#include "ops.hpp"
#include "reductions.hpp"
#include "row_engine.hpp"
