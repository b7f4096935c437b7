// TensorView<T, Layout, Place> (its class: tensor_view.hpp) and make_view,
// ready to assign: the same as tensor.hpp, for code that names only views.
#pragma once

#include "tensor.hpp"
