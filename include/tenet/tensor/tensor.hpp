// Tensor<T, Shape, Place> and its views, ready to assign, and copy between
// places: the tensor layer's one header. The classes (owning_tensor.hpp,
// tensor_view.hpp, on the protocol in expression.hpp) come first, then the
// assignment their operator= calls, which exec/ builds on top of them.
// Including this header alone is enough to create, assign, view and copy
// tensors.
#pragma once

#include "owning_tensor.hpp"

#include "../exec/assign.hpp"  // completion: defines the assign these types' operator= calls
#include "copy.hpp"
