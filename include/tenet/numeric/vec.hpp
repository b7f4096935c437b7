// vec<T, K>: K values in registers, the unit a thread loads, computes and
// stores when evaluating K consecutive elements.
#pragma once

#include "../config.hpp"

#include <cstddef>

namespace tenet {

template <class T, std::size_t K>
struct vec {
    T v[K];

    TENET_HD constexpr T& operator[](std::size_t i) { return v[i]; }
    TENET_HD constexpr const T& operator[](std::size_t i) const { return v[i]; }
};

template <std::size_t K, class T>
TENET_HD constexpr vec<T, K> splat(T value)
{
    vec<T, K> r;
TENET_UNROLL
    for (std::size_t k = 0; k < K; ++k) r[k] = value;
    return r;
}

// chunk<K>(i) of an evaluator without vector loads there: K calls of at().
template <std::size_t K, class E, class Index>
TENET_HD vec<typename E::value_type, K> chunk_by_elements(const E& e, Index i)
{
    vec<typename E::value_type, K> r;
TENET_UNROLL
    for (std::size_t k = 0; k < K; ++k) r[k] = e.at(static_cast<Index>(i + k));
    return r;
}

}  // namespace tenet

