// Compute types: what elements become in registers. 16- and 8-bit floats
// compute in f32 and round once, at the store; integers compute in i32.
#pragma once

#include "traits.hpp"

#include <type_traits>

namespace tenet {

template <class T>
using compute_t = std::conditional_t<
    std::is_same_v<T, f64>, f64,
    std::conditional_t<is_floating_v<T>, f32, std::conditional_t<is_integer_v<T>, i32, bool>>>;

// The type arithmetic on A and B computes in: f64 > f32 > i32 (bool counts as i32).
template <class A, class B>
using arithmetic_t = std::conditional_t<
    std::is_same_v<A, f64> || std::is_same_v<B, f64>, f64,
    std::conditional_t<std::is_same_v<A, f32> || std::is_same_v<B, f32>, f32, i32>>;

// The type math functions (exp, sin, ...) compute in: f64 for f64, else f32.
template <class A>
using floating_t = std::conditional_t<std::is_same_v<A, f64>, f64, f32>;

}  // namespace tenet
