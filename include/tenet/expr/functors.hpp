// The elementwise operations. Each is a small function object with a
// __host__ __device__ call operator that takes operands in their compute
// types, converts them to the type the operation computes in, and returns
// the result; name() is used in diagnostics. Floating results keep NaN (NaN
// in, NaN out, as PyTorch does); integer arithmetic wraps (two's complement)
// and integer division by zero gives 0 instead of undefined behaviour.
#pragma once

#include "../diagnostic.hpp"
#include "../numeric/compute.hpp"
#include "../numeric/convert.hpp"
#include "math.hpp"

#include <cstddef>
#include <cstdint>

namespace tenet::ops {

namespace detail {

template <class T>
TENET_HD constexpr bool is_nan(T x)
{
    return x != x;
}

template <class A, class B, class F>
TENET_HD constexpr auto arithmetic(A a, B b, F f)
{
    using R = arithmetic_t<A, B>;
    if constexpr (std::is_same_v<R, i32>) {
        // through uint32: defined wrap-around, as on the GPU
        return static_cast<i32>(f(static_cast<std::uint32_t>(convert<R>(a)), static_cast<std::uint32_t>(convert<R>(b))));
    } else {
        return static_cast<R>(f(convert<R>(a), convert<R>(b)));
    }
}

// f applied in the floating compute type of A.
template <class A, class F>
TENET_HD auto floating(A a, F f)
{
    using R = floating_t<A>;
    return static_cast<R>(f(convert<R>(a)));
}

}  // namespace detail

struct plus {
    static constexpr auto name() { return fixed_string("operator+"); }
    template <class A, class B>
    TENET_HD constexpr auto operator()(A a, B b) const
    {
        return detail::arithmetic(a, b, [](auto x, auto y) { return x + y; });
    }
};

struct minus {
    static constexpr auto name() { return fixed_string("operator-"); }
    template <class A, class B>
    TENET_HD constexpr auto operator()(A a, B b) const
    {
        return detail::arithmetic(a, b, [](auto x, auto y) { return x - y; });
    }
};

struct multiplies {
    static constexpr auto name() { return fixed_string("operator*"); }
    template <class A, class B>
    TENET_HD constexpr auto operator()(A a, B b) const
    {
        return detail::arithmetic(a, b, [](auto x, auto y) { return x * y; });
    }
};

struct divides {
    static constexpr auto name() { return fixed_string("operator/"); }
    template <class A, class B>
    TENET_HD constexpr auto operator()(A a, B b) const
    {
        using R = arithmetic_t<A, B>;
        if constexpr (std::is_same_v<R, i32>) {
            const i32 x = convert<R>(a), y = convert<R>(b);
            if (y == 0) return i32{0};
            if (y == -1) return static_cast<i32>(0u - static_cast<std::uint32_t>(x));  // INT_MIN / -1 wraps
            return static_cast<i32>(x / y);
        } else {
            return static_cast<R>(convert<R>(a) / convert<R>(b));
        }
    }
};

// min and max propagate NaN (as PyTorch's do). From sm_80 the GPU does that
// in one instruction (min.NaN / max.NaN); elsewhere, compare and select.
template <bool Greatest>
struct extremum {
    static constexpr auto name()
    {
        if constexpr (Greatest) return fixed_string("max");
        else return fixed_string("min");
    }
    template <class A, class B>
    TENET_HD constexpr auto operator()(A a, B b) const
    {
        using R = arithmetic_t<A, B>;
        const R x = convert<R>(a), y = convert<R>(b);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
        if constexpr (std::is_same_v<R, f32>) {
            if (!__builtin_is_constant_evaluated()) {
                f32 r;
                if constexpr (Greatest) asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(x), "f"(y));
                else asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(x), "f"(y));
                return r;
            }
        }
#endif
        // A NaN x is never passed over (the comparison is false): only y needs a check.
        const R chosen = Greatest ? (y > x ? y : x) : (y < x ? y : x);
        return detail::is_nan(y) ? y : chosen;
    }
};
using minimum = extremum<false>;
using maximum = extremum<true>;

struct power {
    static constexpr auto name() { return fixed_string("pow"); }
    template <class A, class B>
    TENET_HD auto operator()(A a, B b) const
    {
        using R = floating_t<arithmetic_t<A, B>>;
        return math::pow(convert<R>(a), convert<R>(b));
    }
};

// fmod(a, b) and a % b: the truncated remainder, with the sign of a (C's
// fmod, C++'s %, PyTorch's torch.fmod). Floats: fmod(a, 0), fmod(inf, b) and
// NaN operands give NaN; fmod(a, inf) = a. Integers: a % 0 gives 0 (as
// integer division by 0 does here) and INT_MIN % -1 gives 0.
struct fmod {
    static constexpr auto name() { return fixed_string("fmod"); }
    template <class A, class B>
    TENET_HD auto operator()(A a, B b) const
    {
        using R = arithmetic_t<A, B>;
        const R x = convert<R>(a), y = convert<R>(b);
        if constexpr (std::is_same_v<R, i32>) {
            if (y == 0 || y == -1) return i32{0};
            return static_cast<i32>(x % y);
        } else {
            return math::fmod(x, y);
        }
    }
};

// Comparisons compare in the operands' common arithmetic type and give bool.
template <class A, class B>
using compared_t = arithmetic_t<A, B>;

struct less {
    static constexpr auto name() { return fixed_string("operator<"); }
    template <class A, class B>
    TENET_HD constexpr bool operator()(A a, B b) const { return convert<compared_t<A, B>>(a) < convert<compared_t<A, B>>(b); }
};

struct less_equal {
    static constexpr auto name() { return fixed_string("operator<="); }
    template <class A, class B>
    TENET_HD constexpr bool operator()(A a, B b) const { return convert<compared_t<A, B>>(a) <= convert<compared_t<A, B>>(b); }
};

struct greater {
    static constexpr auto name() { return fixed_string("operator>"); }
    template <class A, class B>
    TENET_HD constexpr bool operator()(A a, B b) const { return convert<compared_t<A, B>>(a) > convert<compared_t<A, B>>(b); }
};

struct greater_equal {
    static constexpr auto name() { return fixed_string("operator>="); }
    template <class A, class B>
    TENET_HD constexpr bool operator()(A a, B b) const { return convert<compared_t<A, B>>(a) >= convert<compared_t<A, B>>(b); }
};

struct equal_to {
    static constexpr auto name() { return fixed_string("operator=="); }
    template <class A, class B>
    TENET_HD constexpr bool operator()(A a, B b) const { return convert<compared_t<A, B>>(a) == convert<compared_t<A, B>>(b); }
};

struct not_equal_to {
    static constexpr auto name() { return fixed_string("operator!="); }
    template <class A, class B>
    TENET_HD constexpr bool operator()(A a, B b) const { return convert<compared_t<A, B>>(a) != convert<compared_t<A, B>>(b); }
};


struct logical_and {
    static constexpr auto name() { return fixed_string("logical_and"); }
    template <class A, class B>
    TENET_HD constexpr bool operator()(A a, B b) const
    {
        return convert<bool>(a) && convert<bool>(b);
    }
};

struct logical_or {
    static constexpr auto name() { return fixed_string("logical_or"); }
    template <class A, class B>
    TENET_HD constexpr bool operator()(A a, B b) const
    {
        return convert<bool>(a) || convert<bool>(b);
    }
};

struct logical_xor {
    static constexpr auto name() { return fixed_string("logical_xor"); }
    template <class A, class B>
    TENET_HD constexpr bool operator()(A a, B b) const
    {
        return convert<bool>(a) != convert<bool>(b);
    }
};

struct logical_not {
    static constexpr auto name() { return fixed_string("logical_not"); }
    template <class A>
    TENET_HD constexpr bool operator()(A a) const
    {
        return !convert<bool>(a);
    }
};

struct negate {
    static constexpr auto name() { return fixed_string("operator-"); }
    template <class A>
    TENET_HD constexpr auto operator()(A a) const
    {
        return detail::arithmetic(i32{0}, a, [](auto x, auto y) { return x - y; });
    }
};

struct absolute {
    static constexpr auto name() { return fixed_string("abs"); }
    template <class A>
    TENET_HD auto operator()(A a) const
    {
        using R = arithmetic_t<A, A>;
        const R x = convert<R>(a);
        if constexpr (std::is_same_v<R, i32>) return x < 0 ? static_cast<i32>(0u - static_cast<std::uint32_t>(x)) : x;
        else return math::fabs(x);
    }
};

struct sign {
    static constexpr auto name() { return fixed_string("sign"); }
    template <class A>
    TENET_HD constexpr auto operator()(A a) const
    {
        using R = arithmetic_t<A, A>;
        const R x = convert<R>(a);
        return x > R(0) ? R(1) : (x < R(0) ? R(-1) : x);  // keeps 0, -0 and NaN
    }
};

struct square {
    static constexpr auto name() { return fixed_string("square"); }
    template <class A>
    TENET_HD constexpr auto operator()(A a) const
    {
        return multiplies{}(a, a);
    }
};

struct reciprocal {
    static constexpr auto name() { return fixed_string("reciprocal"); }
    template <class A>
    TENET_HD auto operator()(A a) const
    {
        return detail::floating(a, [](auto x) { return decltype(x)(1) / x; });
    }
};

struct relu {
    static constexpr auto name() { return fixed_string("relu"); }
    template <class A>
    TENET_HD constexpr auto operator()(A a) const
    {
        using R = arithmetic_t<A, A>;
        const R x = convert<R>(a);
        return x < R(0) ? R(0) : x;  // NaN stays NaN
    }
};

// Math functions compute in f32 (f64 for f64 operands), whatever the storage:
// ops::f applies math::f.
#define TENET_MATH_FUNCTOR(f)                                                                        \
    struct f {                                                                                       \
        static constexpr auto name() { return fixed_string(#f); }                   \
        template <class A>                                                                           \
        TENET_HD auto operator()(A a) const                                                          \
        {                                                                                            \
            return detail::floating(a, [](auto x) { return static_cast<decltype(x)>(math::f(x)); }); \
        }                                                                                            \
    };
TENET_MATH_FUNCTOR(exp)
TENET_MATH_FUNCTOR(exp2)
TENET_MATH_FUNCTOR(expm1)
TENET_MATH_FUNCTOR(log)
TENET_MATH_FUNCTOR(log2)
TENET_MATH_FUNCTOR(log1p)
TENET_MATH_FUNCTOR(sqrt)
TENET_MATH_FUNCTOR(rsqrt)
TENET_MATH_FUNCTOR(sin)
TENET_MATH_FUNCTOR(cos)
TENET_MATH_FUNCTOR(tanh)
#undef TENET_MATH_FUNCTOR

struct sigmoid {
    static constexpr auto name() { return fixed_string("sigmoid"); }
    template <class A>
    TENET_HD auto operator()(A a) const
    {
        return detail::floating(a, [](auto x) {
            using T = decltype(x);
            return static_cast<T>(T(1) / (T(1) + math::exp(-x)));
        });
    }
};

struct silu {
    static constexpr auto name() { return fixed_string("silu"); }
    template <class A>
    TENET_HD auto operator()(A a) const
    {
        return detail::floating(a, [](auto x) {
            using T = decltype(x);
            return static_cast<T>(x / (T(1) + math::exp(-x)));
        });
    }
};

// gelu, erf form: x * Phi(x)
struct gelu {
    static constexpr auto name() { return fixed_string("gelu"); }
    template <class A>
    TENET_HD auto operator()(A a) const
    {
        return detail::floating(a, [](auto x) {
            using T = decltype(x);
            return static_cast<T>(T(0.5) * x * (T(1) + math::erf(x * T(0.70710678118654752440))));
        });
    }
    // d/dx = Phi(x) + x phi(x) (gradients(...) and the Linear backward use it)
    template <std::size_t J, class A>
    TENET_HD auto derivative(A a) const
    {
        return detail::floating(a, [](auto x) {
            using T = decltype(x);
            const T cdf = T(0.5) * (T(1) + math::erf(x * T(0.70710678118654752440)));
            const T pdf = T(0.39894228040143267794) * math::exp(T(-0.5) * x * x);  // 1 / sqrt(2 pi)
            return static_cast<T>(cdf + x * pdf);
        });
    }
};

// gelu, tanh approximation (PyTorch's approximate="tanh")
struct gelu_tanh {
    static constexpr auto name() { return fixed_string("gelu_tanh"); }
    template <class A>
    TENET_HD auto operator()(A a) const
    {
        return detail::floating(a, [](auto x) {
            using T = decltype(x);
            return static_cast<T>(T(0.5) * x * (T(1) + math::tanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x))));
        });
    }
    // d/dx = (1 + t) / 2 + x (1 - t^2) k (1 + 3 c x^2) / 2, t = tanh(k (x + c x^3)),
    // k = sqrt(2 / pi), c = 0.044715
    template <std::size_t J, class A>
    TENET_HD auto derivative(A a) const
    {
        return detail::floating(a, [](auto x) {
            using T = decltype(x);
            const T k = T(0.79788456080286535588), c = T(0.044715);
            const T t = math::tanh(k * (x + c * x * x * x));
            return static_cast<T>(T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * k * (T(1) + T(3) * c * x * x));
        });
    }
};

// log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|)
struct softplus {
    static constexpr auto name() { return fixed_string("softplus"); }
    template <class A>
    TENET_HD auto operator()(A a) const
    {
        return detail::floating(a, [](auto x) {
            using T = decltype(x);
            return static_cast<T>((x > T(0) ? x : T(0)) + math::log1p(math::exp(-math::fabs(x))));
        });
    }
};


struct leaky_relu {
    static constexpr auto name() { return fixed_string("leaky_relu"); }
    f32 slope;
    template <class A>
    TENET_HD auto operator()(A a) const
    {
        return detail::floating(a, [s = slope](auto x) { return x > decltype(x)(0) ? x : static_cast<decltype(x)>(s) * x; });
    }
};

struct elu {
    static constexpr auto name() { return fixed_string("elu"); }
    f32 alpha;
    template <class A>
    TENET_HD auto operator()(A a) const
    {
        return detail::floating(a, [al = alpha](auto x) {
            return x > decltype(x)(0) ? x : static_cast<decltype(x)>(al) * math::expm1(x);
        });
    }
};

// clamp(x, lo, hi) = min(max(x, lo), hi); NaN stays NaN.
template <class V>
struct clamp {
    static constexpr auto name() { return fixed_string("clamp"); }
    V lo, hi;
    template <class A>
    TENET_HD constexpr auto operator()(A a) const
    {
        return minimum{}(maximum{}(a, lo), hi);
    }
};

struct select {
    static constexpr auto name() { return fixed_string("where"); }
    template <class C, class A, class B>
    TENET_HD constexpr auto operator()(C c, A a, B b) const
    {
        if constexpr (std::is_same_v<A, bool> && std::is_same_v<B, bool>) {
            return convert<bool>(c) ? a : b;
        } else {
            using R = arithmetic_t<A, B>;
            return convert<bool>(c) ? convert<R>(a) : convert<R>(b);
        }
    }
};

// cast<T>: round to T (tenet::convert's rules), then continue in T's compute type.
template <class T>
struct cast_to {
    static constexpr auto name() { return fixed_string("cast"); }
    template <class A>
    TENET_HD constexpr compute_t<T> operator()(A a) const
    {
        return convert<compute_t<T>>(convert<T>(a));
    }
};

}  // namespace tenet::ops
