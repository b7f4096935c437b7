// The local derivative of every differentiable elementwise operation.
//
// rule<Op>::adjoint<J>(op, g, y, x...) is the adjoint of operand J of
// y = op(x...) given the adjoint g of y: g * dy/dx_J. g has y's type (the
// compute type: f32 for 16-bit storage, f64 for f64); operands come in their
// own compute types. Rules reuse the forward value y where that is cheaper
// (exp: g*y, tanh: g*(1-y^2), sigmoid: g*y*(1-y)) -- the backward pass keeps
// every node's forward value in registers.
//
// rule<Op>::flows<J> is false where no gradient flows (where's condition).
// Operations with a non-floating result (comparisons, logical operations,
// casts to integers or bool) have no rule and need none: the backward pass
// treats any node whose value is not floating as a constant, so their
// gradient is zero.
//
// Conventions at the points where a derivative does not exist (as PyTorch):
//   relu, abs, sign-like kinks at 0: relu'(0) = 0, abs'(0) = 0 (sign(x)),
//     leaky_relu'(0) = slope, elu'(0) = alpha; sign' = 0 everywhere.
//   min/max: the whole gradient goes to the operand the forward selected; on
//     a tie that is the first operand; a NaN operand is the one selected.
//   clamp(x, lo, hi): gradient passes for lo <= x <= hi (bounds included).
//   pow(a, b): d/da = b * a^(b-1), and 0 where b == 0; d/db = y * log(a),
//     and 0 where a == 0 and b >= 0; for a < 0, d/db is NaN (no real log).
//   sqrt'(0) = +inf, log'(0) = +inf (the real limits).
//   cast<T> to a floating T passes the gradient unchanged: the rounding is
//     ignored (the straight-through convention); casts to integers or bool
//     stop it.
#pragma once

#include "../expr/functors.hpp"

#include <cstddef>
#include <type_traits>

namespace tenet::detail::ad {

// rule<Op>::defined is false for operations without a derivative rule.
template <class Op>
struct rule {
    static constexpr bool defined = false;
};

struct every_operand {
    static constexpr bool defined = true;
    template <std::size_t J>
    static constexpr bool flows = true;
};

template <class G, class X>
TENET_HD constexpr G as(X x)
{
    return convert<G>(x);
}

// A user's functor (tenet::map) that differentiates itself:
// op.derivative<J>(x...) is d op / d x_J at the operands' values.
template <class Op, class... X>
concept self_differentiating = requires(const Op& op, X... x) { op.template derivative<0>(x...); };

template <class Op>
struct self_rule : every_operand {
    template <std::size_t J, class G, class Y, class... X>
    TENET_HD static G adjoint(const Op& op, G g, Y, X... x)
    {
        return g * as<G>(op.template derivative<J>(x...));
    }
};

// The rule for Op applied to operands of value types X...: the library's,
// else the functor's own derivative.
template <class Op, class... X>
using rule_for =
    std::conditional_t<!rule<Op>::defined && self_differentiating<Op, X...>, self_rule<Op>, rule<Op>>;

template <>
struct rule<ops::plus> : every_operand {
    template <std::size_t J, class G, class Y, class A, class B>
    TENET_HD static G adjoint(const ops::plus&, G g, Y, A, B)
    {
        return g;
    }
};

template <>
struct rule<ops::minus> : every_operand {
    template <std::size_t J, class G, class Y, class A, class B>
    TENET_HD static G adjoint(const ops::minus&, G g, Y, A, B)
    {
        return J == 0 ? g : -g;
    }
};

template <>
struct rule<ops::multiplies> : every_operand {
    template <std::size_t J, class G, class Y, class A, class B>
    TENET_HD static G adjoint(const ops::multiplies&, G g, Y, A a, B b)
    {
        if constexpr (J == 0) return g * as<G>(b);
        else return g * as<G>(a);
    }
};

// y = a / b: dy/da = 1/b, dy/db = -a/b^2 = -y/b
template <>
struct rule<ops::divides> : every_operand {
    template <std::size_t J, class G, class Y, class A, class B>
    TENET_HD static G adjoint(const ops::divides&, G g, Y y, A, B b)
    {
        if constexpr (J == 0) return g / as<G>(b);
        else return -g * as<G>(y) / as<G>(b);
    }
};

// To the operand the forward selected (the first on a tie, a NaN if any).
template <bool Greatest>
struct rule<ops::extremum<Greatest>> : every_operand {
    template <std::size_t J, class G, class Y, class A, class B>
    TENET_HD static G adjoint(const ops::extremum<Greatest>&, G g, Y, A a, B b)
    {
        using R = arithmetic_t<A, B>;
        const R x = convert<R>(a), z = convert<R>(b);
        const bool beats = Greatest ? z > x : z < x;
        const bool first = x != x || (z == z && !beats);  // a NaN operand wins, as forward
        return first == (J == 0) ? g : G(0);
    }
};

template <>
struct rule<ops::power> : every_operand {
    template <std::size_t J, class G, class Y, class A, class B>
    TENET_HD static G adjoint(const ops::power&, G g, Y y, A a, B b)
    {
        const G base = as<G>(a), exponent = as<G>(b);
        if constexpr (J == 0) return exponent == G(0) ? G(0) : g * exponent * math::pow(base, exponent - G(1));
        else return base == G(0) && exponent >= G(0) ? G(0) : g * as<G>(y) * math::log(base);
    }
};

// fmod(a, b) = a - trunc(a / b) b: d/da = 1, d/db = -trunc(a / b).
template <>
struct rule<ops::fmod> : every_operand {
    template <std::size_t J, class G, class Y, class A, class B>
    TENET_HD static G adjoint(const ops::fmod&, G g, Y, A a, B b)
    {
        if constexpr (J == 0) return g;
        else return -g * math::trunc(as<G>(a) / as<G>(b));
    }
};

template <>
struct rule<ops::negate> : every_operand {
    template <std::size_t, class G, class Y, class X>
    TENET_HD static G adjoint(const ops::negate&, G g, Y, X)
    {
        return -g;
    }
};

template <>
struct rule<ops::absolute> : every_operand {
    template <std::size_t, class G, class Y, class X>
    TENET_HD static G adjoint(const ops::absolute&, G g, Y, X x)
    {
        return g * ops::sign{}(as<G>(x));  // 0 at 0, NaN for NaN
    }
};

// sign is piecewise constant: no gradient anywhere.
template <>
struct rule<ops::sign> {
    static constexpr bool defined = true;
    template <std::size_t J>
    static constexpr bool flows = false;
};

template <>
struct rule<ops::square> : every_operand {
    template <std::size_t, class G, class Y, class X>
    TENET_HD static G adjoint(const ops::square&, G g, Y, X x)
    {
        return G(2) * as<G>(x) * g;
    }
};

template <>
struct rule<ops::reciprocal> : every_operand {
    template <std::size_t, class G, class Y, class X>
    TENET_HD static G adjoint(const ops::reciprocal&, G g, Y y, X)
    {
        return -g * y * y;
    }
};

template <>
struct rule<ops::relu> : every_operand {
    template <std::size_t, class G, class Y, class X>
    TENET_HD static G adjoint(const ops::relu&, G g, Y, X x)
    {
        return x > X(0) ? g : G(0);
    }
};

template <>
struct rule<ops::exp> : every_operand {
    template <std::size_t, class G, class Y, class X>
    TENET_HD static G adjoint(const ops::exp&, G g, Y y, X)
    {
        return g * y;
    }
};

template <>
struct rule<ops::exp2> : every_operand {
    template <std::size_t, class G, class Y, class X>
    TENET_HD static G adjoint(const ops::exp2&, G g, Y y, X)
    {
        return g * y * G(0.69314718055994530942);  // ln 2
    }
};

template <>
struct rule<ops::expm1> : every_operand {
    template <std::size_t, class G, class Y, class X>
    TENET_HD static G adjoint(const ops::expm1&, G g, Y y, X)
    {
        return g * (y + G(1));
    }
};

template <>
struct rule<ops::log> : every_operand {
    template <std::size_t, class G, class Y, class X>
    TENET_HD static G adjoint(const ops::log&, G g, Y, X x)
    {
        return g / as<G>(x);
    }
};

template <>
struct rule<ops::log2> : every_operand {
    template <std::size_t, class G, class Y, class X>
    TENET_HD static G adjoint(const ops::log2&, G g, Y, X x)
    {
        return g / (as<G>(x) * G(0.69314718055994530942));
    }
};

template <>
struct rule<ops::log1p> : every_operand {
    template <std::size_t, class G, class Y, class X>
    TENET_HD static G adjoint(const ops::log1p&, G g, Y, X x)
    {
        return g / (G(1) + as<G>(x));
    }
};

template <>
struct rule<ops::sqrt> : every_operand {
    template <std::size_t, class G, class Y, class X>
    TENET_HD static G adjoint(const ops::sqrt&, G g, Y y, X)
    {
        return G(0.5) * g / y;
    }
};

// y = x^(-1/2): dy/dx = -x^(-3/2) / 2 = -y^3 / 2
template <>
struct rule<ops::rsqrt> : every_operand {
    template <std::size_t, class G, class Y, class X>
    TENET_HD static G adjoint(const ops::rsqrt&, G g, Y y, X)
    {
        return G(-0.5) * g * y * y * y;
    }
};

template <>
struct rule<ops::sin> : every_operand {
    template <std::size_t, class G, class Y, class X>
    TENET_HD static G adjoint(const ops::sin&, G g, Y, X x)
    {
        return g * math::cos(as<G>(x));
    }
};

template <>
struct rule<ops::cos> : every_operand {
    template <std::size_t, class G, class Y, class X>
    TENET_HD static G adjoint(const ops::cos&, G g, Y, X x)
    {
        return -g * math::sin(as<G>(x));
    }
};

template <>
struct rule<ops::tanh> : every_operand {
    template <std::size_t, class G, class Y, class X>
    TENET_HD static G adjoint(const ops::tanh&, G g, Y y, X)
    {
        return g * (G(1) - y * y);
    }
};

template <>
struct rule<ops::sigmoid> : every_operand {
    template <std::size_t, class G, class Y, class X>
    TENET_HD static G adjoint(const ops::sigmoid&, G g, Y y, X)
    {
        return g * y * (G(1) - y);
    }
};

// y = x s, s = sigmoid(x): dy/dx = s (1 + x (1 - s))
template <>
struct rule<ops::silu> : every_operand {
    template <std::size_t, class G, class Y, class X>
    TENET_HD static G adjoint(const ops::silu&, G g, Y, X x)
    {
        const G v = as<G>(x), s = G(1) / (G(1) + math::exp(-v));
        return g * s * (G(1) + v * (G(1) - s));
    }
};

// gelu and gelu_tanh carry their derivative<J> (expr/functors.hpp): self_rule.

// dy/dx = sigmoid(x) = 1 - e^-y, from the forward value y = log(1 + e^x)
template <>
struct rule<ops::softplus> : every_operand {
    template <std::size_t, class G, class Y, class X>
    TENET_HD static G adjoint(const ops::softplus&, G g, Y y, X)
    {
        return -g * math::expm1(-y);
    }
};

template <>
struct rule<ops::leaky_relu> : every_operand {
    template <std::size_t, class G, class Y, class X>
    TENET_HD static G adjoint(const ops::leaky_relu& op, G g, Y, X x)
    {
        return x > X(0) ? g : G(op.slope) * g;
    }
};

// x <= 0: y = alpha (e^x - 1), dy/dx = alpha e^x = y + alpha
template <>
struct rule<ops::elu> : every_operand {
    template <std::size_t, class G, class Y, class X>
    TENET_HD static G adjoint(const ops::elu& op, G g, Y y, X x)
    {
        return x > X(0) ? g : g * (y + G(op.alpha));
    }
};

template <class V>
struct rule<ops::clamp<V>> : every_operand {
    template <std::size_t, class G, class Y, class X>
    TENET_HD static G adjoint(const ops::clamp<V>& op, G g, Y, X x)
    {
        using R = arithmetic_t<X, V>;
        const R v = convert<R>(x);
        return v >= convert<R>(op.lo) && v <= convert<R>(op.hi) ? g : G(0);
    }
};

// where(c, a, b): to the chosen branch; none to the condition.
template <>
struct rule<ops::select> {
    static constexpr bool defined = true;
    template <std::size_t J>
    static constexpr bool flows = J != 0;

    template <std::size_t J, class G, class Y, class C, class A, class B>
    TENET_HD static G adjoint(const ops::select&, G g, Y, C c, A, B)
    {
        return convert<bool>(c) == (J == 1) ? g : G(0);
    }
};

// Straight-through: the rounding to T is ignored.
template <class T>
struct rule<ops::cast_to<T>> : every_operand {
    template <std::size_t, class G, class Y, class X>
    TENET_HD static G adjoint(const ops::cast_to<T>&, G g, Y, X)
    {
        return g;
    }
};

}  // namespace tenet::detail::ad

namespace tenet {

// Whether gradients(...) can differentiate F applied to operands of compute
// values X...: a built-in operation, or a tenet::map functor with a
// derivative<J>(x...) member.
template <class F, class... X>
concept has_derivative = detail::ad::rule_for<F, X...>::defined;

}  // namespace tenet
