// Tensor<T, Shape, Place> and its views, ready to assign: the classes
// (owning_tensor.hpp, tensor_view.hpp) and then the assignment their
// operator= calls, which exec/ builds on top of them. Including this header
// alone is enough to create, assign and view tensors.
#pragma once

#include "owning_tensor.hpp"

#include "../exec/assign.hpp"  // completion: defines the assign these types' operator= calls
