// Compile-time reverse-mode differentiation of elementwise expressions:
// var<I>(t) marks variables, gradients(e, dy) / gradient<I>(e, dy) evaluate
// their gradients in one fused pass (see gradients.hpp).
#pragma once

#include "derivatives.hpp"
#include "gradients.hpp"
#include "variable.hpp"
