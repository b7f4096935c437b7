// The reductions as monoids: an accumulator type, its identity, lift (one
// element, with its position along the reduced axes), combine (associative
// and commutative, so any tree order gives the same answer up to rounding)
// and finalize. Floating types accumulate in f32 (f64 for f64): the
// accumulate type of every predefined precision policy; integers accumulate
// in 64 bits and saturate to i32 at the end.
#pragma once

#include "../numeric/compute.hpp"
#include "../numeric/convert.hpp"
#include "../expr/math.hpp"

#include <cstdint>
#include <type_traits>

namespace tenet::reductions {

namespace detail {

template <class V>
using sum_accumulator = std::conditional_t<is_floating_v<V>, V, long long>;

TENET_HD constexpr i32 saturate_i32(long long x)
{
    return static_cast<i32>(x > 2147483647LL ? 2147483647LL : (x < -2147483648LL ? -2147483648LL : x));
}

template <class A>
TENET_HD constexpr bool is_nan(A x)
{
    return x != x;
}

}  // namespace detail

template <class V>
struct sum {
    using accumulator = detail::sum_accumulator<V>;
    using result = std::conditional_t<is_floating_v<V>, V, i32>;
    TENET_HD static constexpr accumulator identity() { return accumulator(0); }
    TENET_HD static constexpr accumulator lift(V v, long long) { return static_cast<accumulator>(v); }
    TENET_HD constexpr accumulator operator()(accumulator a, accumulator b) const { return a + b; }
    TENET_HD static constexpr result finalize(accumulator a, long long)
    {
        if constexpr (is_floating_v<V>) return a;
        else return detail::saturate_i32(a);
    }
};

template <class V>
struct mean {
    using accumulator = std::conditional_t<std::is_same_v<V, f64>, f64, f32>;
    using result = accumulator;
    TENET_HD static constexpr accumulator identity() { return accumulator(0); }
    TENET_HD static constexpr accumulator lift(V v, long long) { return convert<accumulator>(v); }
    TENET_HD constexpr accumulator operator()(accumulator a, accumulator b) const { return a + b; }
    TENET_HD static constexpr result finalize(accumulator a, long long count) { return a / static_cast<accumulator>(count); }
};

template <class V>
struct product {
    using accumulator = detail::sum_accumulator<V>;
    using result = std::conditional_t<is_floating_v<V>, V, i32>;
    TENET_HD static constexpr accumulator identity() { return accumulator(1); }
    TENET_HD static constexpr accumulator lift(V v, long long) { return static_cast<accumulator>(v); }
    TENET_HD constexpr accumulator operator()(accumulator a, accumulator b) const
    {
        if constexpr (is_floating_v<V>) return a * b;
        else return static_cast<long long>(static_cast<unsigned long long>(a) * static_cast<unsigned long long>(b));
    }
    TENET_HD static constexpr result finalize(accumulator a, long long)
    {
        if constexpr (is_floating_v<V>) return a;
        else return detail::saturate_i32(a);
    }
};

// sqrt(sum of squares)
template <class V>
struct norm2 {
    using accumulator = floating_t<V>;
    using result = accumulator;
    TENET_HD static constexpr accumulator identity() { return accumulator(0); }
    TENET_HD static constexpr accumulator lift(V v, long long)
    {
        const accumulator x = convert<accumulator>(v);
        return x * x;
    }
    TENET_HD constexpr accumulator operator()(accumulator a, accumulator b) const { return a + b; }
    TENET_HD static accumulator finalize(accumulator a, long long) { return math::sqrt(a); }
};

// max and min propagate NaN, as PyTorch's do.
template <class V, bool Greatest>
struct extreme {
    using accumulator = V;
    using result = V;
    TENET_HD static constexpr accumulator identity()
    {
        if constexpr (std::is_same_v<V, bool>) return !Greatest;
        else if constexpr (is_floating_v<V>) return Greatest ? -numeric_traits<V>::infinity() : numeric_traits<V>::infinity();
        else return Greatest ? numeric_traits<V>::lowest() : numeric_traits<V>::max();
    }
    TENET_HD static constexpr accumulator lift(V v, long long) { return v; }
    // (a NaN a is kept by the comparison: b > NaN is false)
    TENET_HD constexpr accumulator operator()(accumulator a, accumulator b) const
    {
        if (detail::is_nan(b)) return b;
        return Greatest ? (b > a ? b : a) : (b < a ? b : a);
    }
    TENET_HD static constexpr result finalize(accumulator a, long long) { return a; }
};

template <class V>
struct indexed {
    V value;
    long long index;
};

// The position (along the reduced axes, row-major) of the greatest or least
// element: the first one on ties, the first NaN if there is one.
template <class V, bool Greatest>
struct arg_extreme {
    using accumulator = indexed<V>;
    using result = i32;
    TENET_HD static constexpr accumulator identity() { return {extreme<V, Greatest>::identity(), -1}; }
    TENET_HD static constexpr accumulator lift(V v, long long position) { return {v, position}; }
    TENET_HD constexpr accumulator operator()(accumulator a, accumulator b) const
    {
        if (a.index < 0) return b;
        if (b.index < 0) return a;
        const bool a_nan = detail::is_nan(a.value), b_nan = detail::is_nan(b.value);
        if (a_nan || b_nan) return (a_nan && (!b_nan || a.index < b.index)) ? a : b;
        if (a.value == b.value) return a.index < b.index ? a : b;
        return ((a.value > b.value) == Greatest) ? a : b;
    }
    TENET_HD static constexpr result finalize(accumulator a, long long) { return static_cast<i32>(a.index); }
};

}  // namespace tenet::reductions
