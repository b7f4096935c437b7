// The expression protocol. Tensors, views and every node built from them
// satisfy `expression`:
//   E::shape       Shape<...> of its value
//   E::value_type  the compute type of its elements (f32 for 16-bit floats)
//   E::place       Host, HostPinned, Device, or AnyPlace (scalars, generators)
//   e.prepare(ctx) the evaluator: a trivially copyable object, passed by value
//                  into a kernel, with
//                    at(i)        element i (row-major linear index), and
//                    chunk<K>(i)  elements i..i+K-1 (i a multiple of K),
//                                 using vector loads where the layout allows.
// User-facing nodes may own things (a moved-in Tensor); evaluators own
// nothing: they hold pointers and static layouts only.
#pragma once

#include "../numeric/traits.hpp"
#include "../shape/shape.hpp"

#include <concepts>
#include <type_traits>

namespace tenet {

template <class E>
concept expression = requires {
    typename E::shape;
    typename E::value_type;
    typename E::place;
} && shape_type<typename E::shape>;

// Plain numbers usable as scalar operands (x * 0.5f, 2 + x).
template <class S>
concept scalar_value = std::is_arithmetic_v<S>;

template <class Dst, class Src>
void assign(const Dst& destination, const Src& source);

}  // namespace tenet
