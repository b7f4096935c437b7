// quantize / dequantize / fake_quantize as fused elementwise expressions.
//
//   q = clamp(round_half_even(x * (1 / scale)) + zero_point, qmin, qmax)
//   x' = (q - zero_point) * scale
//
// as PyTorch's quantize_per_tensor / fake_quantize_per_tensor_affine compute
// them (multiplying by the reciprocal of the scale, as PyTorch does, so that
// both give the same integers). NaN quantizes to the zero point (round gives
// 0); +-inf saturate to qmax / qmin.
//
// x, scale and zero_point are tensors, views, expressions or plain numbers
// and broadcast NumPy-style: per channel is a scale (and zero point) tensor
// with the channel count at the axis and 1 elsewhere (quant::param_shape_t).
// The results are expressions: assign them (one kernel / one loop) or fuse
// them into larger ones. quantize gives the integers in i32, the compute type
// of i8 (assigning to an i8 tensor is exact); the others give f32 / bool.
//
// The functors are public so that other fused kernels (dequantize + bias +
// activation after an int8 GEMM, QAT) can use the same arithmetic.
#pragma once

#include "../expr/operators.hpp"
#include "../expr/scalar.hpp"
#include "../tensor/tensor.hpp"
#include "qparams.hpp"

#include <cstdint>
#include <type_traits>
#include <utility>

namespace tenet::quant {

// round(x / scale) + zero_point before clamping, in 64 bits. The scaled
// value is first clamped to just outside what any int8 zero point can reach
// (NaN to 0), so that rounding to nearest even is exact by adding and
// subtracting 1.5 * 2^(digits - 1): no branches, and host loops vectorise
// (the device rounds with cvt.rni instead).
// Values beyond the clamp still land outside [qmin, qmax] (the mask sees them).
template <class X>
TENET_HD constexpr std::int64_t unclamped_quantize(X x, f32 scale, i32 zero_point)
{
    using R = floating_t<compute_t<X>>;
    constexpr R reach = 512;  // > |q - zero_point| for any int8 q and zero point
    constexpr R magic = std::is_same_v<R, f32> ? R(0x1.8p23) : R(0x1.8p52);
    const R inverse = R(1) / convert<R>(scale);
    R v = convert<R>(x) * inverse;
#if TENET_DEVICE_PASS
    // cvt.rni is one instruction here (and nothing can fuse the multiply into the rounding)
    if (!__builtin_is_constant_evaluated()) return std::int64_t{convert<i32>(v)} + zero_point;
#endif
    v = v != v ? R(0) : (v < -reach ? -reach : (v > reach ? reach : v));
    const R rounded = (v + magic) - magic;
    return static_cast<std::int64_t>(rounded) + zero_point;
}

TENET_HD constexpr i32 clamp_to(std::int64_t q, scheme s)
{
    return static_cast<i32>(q < s.qmin() ? s.qmin() : (q > s.qmax() ? s.qmax() : q));
}

TENET_HD constexpr f32 dequantize_value(i32 q, i32 zero_point, f32 scale)
{
    return static_cast<f32>(std::int64_t{q} - zero_point) * scale;
}

struct quantize_op {
    scheme s;
    static constexpr auto name() { return fixed_string("quantize"); }
    template <class X, class S, class Z>
    TENET_HD constexpr i32 operator()(X x, S scale, Z zero_point) const
    {
        return clamp_to(unclamped_quantize(x, convert<f32>(scale), convert<i32>(zero_point)), s);
    }
};

struct dequantize_op {
    static constexpr auto name() { return fixed_string("dequantize"); }
    template <class Q, class S, class Z>
    TENET_HD constexpr f32 operator()(Q q, S scale, Z zero_point) const
    {
        return dequantize_value(convert<i32>(q), convert<i32>(zero_point), convert<f32>(scale));
    }
};

struct fake_quantize_op {
    scheme s;
    static constexpr auto name() { return fixed_string("fake_quantize"); }
    template <class X, class S, class Z>
    TENET_HD constexpr f32 operator()(X x, S scale, Z zero_point) const
    {
        const f32 sc = convert<f32>(scale);
        const i32 zp = convert<i32>(zero_point);
        return dequantize_value(clamp_to(unclamped_quantize(x, sc, zp), s), zp, sc);
    }
};

// PyTorch's FakeQuantize backward mask (the clipped straight-through
// estimator): the gradient passes where the unclamped integer is in range.
struct fake_quantize_mask_op {
    scheme s;
    static constexpr auto name() { return fixed_string("fake_quantize_mask"); }
    template <class X, class S, class Z>
    TENET_HD constexpr bool operator()(X x, S scale, Z zero_point) const
    {
        const std::int64_t q = unclamped_quantize(x, convert<f32>(scale), convert<i32>(zero_point));
        return q >= s.qmin() && q <= s.qmax();
    }
};

namespace detail {

// A plain number becomes a scalar of type V; expressions pass through.
template <class V, class E>
decltype(auto) operand_as(E&& e)
{
    if constexpr (scalar_value<std::decay_t<E>>) return ::tenet::scalar_expr<V>{::tenet::internal::scalar_as<V>(e)};
    else return std::forward<E>(e);
}

template <class Op, class X, class S, class Z>
auto make_affine(Op op, X&& x, S&& scale, Z&& zero_point)
{
    return ::tenet::internal::make_map(op, operand_as<f32>(std::forward<X>(x)), operand_as<f32>(std::forward<S>(scale)),
                                     operand_as<i32>(std::forward<Z>(zero_point)));
}

}  // namespace detail

template <class X, class S, class Z>
auto quantize(X&& x, S&& scale, Z&& zero_point, scheme s = activation_scheme)
{
    return detail::make_affine(quantize_op{s}, std::forward<X>(x), std::forward<S>(scale), std::forward<Z>(zero_point));
}

template <class Q, class S, class Z>
auto dequantize(Q&& q, S&& scale, Z&& zero_point)
{
    return ::tenet::internal::make_map(dequantize_op{}, detail::operand_as<i32>(std::forward<Q>(q)),
                                     detail::operand_as<f32>(std::forward<S>(scale)),
                                     detail::operand_as<i32>(std::forward<Z>(zero_point)));
}

// dequantize(quantize(x)) in one functor.
template <class X, class S, class Z>
auto fake_quantize(X&& x, S&& scale, Z&& zero_point, scheme s = activation_scheme)
{
    return detail::make_affine(fake_quantize_op{s}, std::forward<X>(x), std::forward<S>(scale),
                               std::forward<Z>(zero_point));
}

template <class X, class S, class Z>
auto fake_quantize_mask(X&& x, S&& scale, Z&& zero_point, scheme s = activation_scheme)
{
    return detail::make_affine(fake_quantize_mask_op{s}, std::forward<X>(x), std::forward<S>(scale),
                               std::forward<Z>(zero_point));
}

}  // namespace tenet::quant
