// Expressions: nodes, the elementwise operations (ops::), host/device math,
// operators and named functions, views of expressions, random numbers.
// (Each header also stands alone.)
#pragma once

#include "../tensor/tensor.hpp"
#include "exact_math.hpp"
#include "functors.hpp"
#include "generator.hpp"
#include "lanes.hpp"
#include "map.hpp"
#include "math.hpp"
#include "node.hpp"
#include "operators.hpp"
#include "random.hpp"
#include "remap.hpp"
#include "scalar.hpp"
#include "views.hpp"
