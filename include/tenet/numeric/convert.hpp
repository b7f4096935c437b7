// tenet::convert<To>(x): the one conversion every cast in tenet goes through.
//
// Rules (the same bits on host, device and at compile time):
//  - floating -> floating: exact when representable, else round to nearest,
//    ties to even. Overflow gives infinity, except for the fp8 types, which
//    saturate to their largest finite value ("satfinite", as cvt.satfinite).
//  - NaN: a narrowing conversion gives the target's canonical NaN (all
//    magnitude bits set, sign clear), and so does widening f16 or fp8 to f32,
//    as the GPU's cvt does. bf16 -> f32 is a shift that keeps sign and payload,
//    and f32 <-> f64 keep them as IEEE hardware does (quieting signalling NaNs).
//  - floating -> integer: round to nearest, ties to even, saturate to the
//    integer's range; NaN gives 0.
//  - integer -> floating: exact, or one rounding to nearest even.
//  - integer -> integer: saturate.
//  - to bool: x != 0 (NaN is true); from bool: 0 or 1.
// On the device the fast hardware conversions are used where they give these
// bits (tests/gpu checks that they do); elsewhere the bit-level routines of
// float_format.hpp run.
#pragma once

#include "float_format.hpp"
#include "traits.hpp"

#include <cstdint>
#include <type_traits>

namespace tenet {
namespace detail::numeric {

#if TENET_HAS_FP8_CVT
template <class T>
inline constexpr __nv_fp8_interpretation_t fp8_interpretation = std::is_same_v<T, f8e4m3> ? __NV_E4M3 : __NV_E5M2;
#endif

// f16 <-> f32 on the host: the generic routines specialised to the binary16
// layout with the common case (normal numbers) first and straight-line, since
// the host backend converts every f16 element it loads or stores.
TENET_HD constexpr f32 f16_bits_to_f32(std::uint32_t h)
{
    // All three cases computed and one selected by bit masks: g++ turns a
    // ?: whose arms hold a float multiply back into branches (the multiply
    // might trap, so it is not run unconditionally), and loops with
    // branches do not vectorise.
    const std::uint32_t sign = (h & 0x8000u) << 16, mag = h & 0x7FFFu;
    const std::uint32_t special = mag == 0x7C00u ? 0x7F800000u : 0x7FFFFFFFu;  // infinity, else the canonical NaN
    const std::uint32_t normal = (mag << 13) + (std::uint32_t{127 - 15} << 23);
    // exact: an integer below 2^10 times 2^-24
    const std::uint32_t subnormal = bit_cast<std::uint32_t>(static_cast<f32>(static_cast<std::int32_t>(mag)) * 0x1p-24f);
    const std::uint32_t is_subnormal = 0u - std::uint32_t{mag < 0x0400u}, is_special = 0u - std::uint32_t{mag >= 0x7C00u},
                        is_nan = 0u - std::uint32_t{mag > 0x7C00u};
    const std::uint32_t finite = (subnormal & is_subnormal) | (normal & ~is_subnormal);
    return bit_cast<f32>((sign & ~is_nan) | (special & is_special) | (finite & ~is_special));
}

TENET_HD constexpr std::uint32_t f32_bits_to_f16(std::uint32_t u)
{
    const std::uint32_t sign = (u >> 16) & 0x8000u, mag = u & 0x7FFFFFFFu;
    // f16 normal: rebias, round away 13 bits to nearest even
    const std::uint32_t rebiased = mag - (std::uint32_t{127 - 15} << 23);
    const std::uint32_t normal = (rebiased + 0x0FFFu + ((rebiased >> 13) & 1u)) >> 13;
    // f16 subnormal (and zero): the significand shifted right by 126 - exponent
    // (14 or more), rounded to nearest even; shifts past 31 give 0 anyway
    const std::uint32_t exponent = mag >> 23;
    const std::uint32_t shift = exponent > 112 ? 14 : (126 - exponent < 31 ? 126 - exponent : 31);
    const std::uint32_t significand = (mag & 0x007FFFFFu) | (exponent ? 0x00800000u : 0u);
    // (the normal case's rounding: just under half, plus the kept lsb, then truncate)
    const std::uint32_t subnormal = (significand + ((1u << (shift - 1)) - 1u) + ((significand >> shift) & 1u)) >> shift;
    // all cases computed, one selected: no branches, so host loops vectorise
    const std::uint32_t magnitude = mag >= 0x38800000u ? normal : subnormal;
    return mag > 0x7F800000u ? 0x7FFFu : (mag >= 0x477FF000u ? sign | 0x7C00u : sign | magnitude);
}

// Exact: every 16- and 8-bit float value is an f32 value.
template <narrow_floating T>
TENET_HD constexpr f32 widen_to_f32(T x)
{
    if constexpr (std::is_same_v<T, bf16>) {
        return bit_cast<f32>(static_cast<std::uint32_t>(to_bits(x)) << 16);
    } else {
#if TENET_DEVICE_PASS
        if (!__builtin_is_constant_evaluated()) {
            if constexpr (std::is_same_v<T, f16>) return __half2float(x);
#if TENET_HAS_FP8_CVT
            else return __half2float(__half(__nv_cvt_fp8_to_halfraw(x.__x, fp8_interpretation<T>)));
#endif
        }
#endif
        if constexpr (std::is_same_v<T, f16>) return f16_bits_to_f32(static_cast<std::uint32_t>(to_bits(x)));
        else return from_bits<f32>(convert_format<binary32_format, format_of<T>::value>(to_bits(x)));
    }
}

template <narrow_floating T>
TENET_HD constexpr T narrow_from_f32(f32 x)
{
#if TENET_DEVICE_PASS
    if (!__builtin_is_constant_evaluated()) {
        if constexpr (std::is_same_v<T, f16>) return __float2half_rn(x);
        else if constexpr (std::is_same_v<T, bf16>) return __float2bfloat16_rn(x);
#if TENET_HAS_FP8_CVT
        else return from_bits<T>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, fp8_interpretation<T>));
#endif
    }
#endif
    const std::uint64_t bits = to_bits(x);
    if constexpr (std::is_same_v<T, bf16>) {
        // bf16 keeps the top half of an f32: add just under half of the dropped
        // half (plus one when the kept part is odd) and truncate. In 32 bits
        // and branch-free, so host loops vectorise it (no non-NaN input wraps).
        const auto b = static_cast<std::uint32_t>(bits);
        const std::uint32_t rounded = (b + 0x7FFFu + ((b >> 16) & 1u)) >> 16;
        const auto nan = static_cast<std::uint32_t>(bfloat16_format.canonical_nan_bits());
        return from_bits<T>((b & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded);
    } else if constexpr (std::is_same_v<T, f16>) {
        return from_bits<T>(f32_bits_to_f16(static_cast<std::uint32_t>(bits)));
    } else {
        return from_bits<T>(convert_format<format_of<T>::value, binary32_format>(bits));
    }
}

template <class I>
TENET_HD constexpr I saturate_to(std::int64_t x)
{
    constexpr std::int64_t hi = numeric_traits<I>::max(), lo = numeric_traits<I>::lowest();
    return static_cast<I>(x > hi ? hi : (x < lo ? lo : x));
}

// Round to nearest, ties to even, then saturate; NaN -> 0. Written without the
// floating-point environment, so it does not depend on the rounding mode.
template <class I, class F>
TENET_HD constexpr I round_to_integer(F x)
{
    if (x != x) return I{0};  // (cvt.rni.s32.f64 would give INT_MIN)
#if TENET_DEVICE_PASS
    if (!__builtin_is_constant_evaluated()) {
        // cvt.rni.s32: nearest-even, saturating.
        if constexpr (std::is_same_v<F, f32>) return saturate_to<I>(__float2int_rn(x));
        else return saturate_to<I>(__double2int_rn(x));
    }
#endif
    constexpr F limit = static_cast<F>(std::uint64_t{1} << 62);
    if (!(x > -limit && x < limit)) return x > 0 ? numeric_traits<I>::max() : numeric_traits<I>::lowest();
    std::int64_t t = static_cast<std::int64_t>(x);  // toward zero
    const F rest = x - static_cast<F>(t);            // exact
    if (rest > F(0.5) || (rest == F(0.5) && (t & 1))) ++t;
    else if (rest < F(-0.5) || (rest == F(-0.5) && (t & 1))) --t;
    return saturate_to<I>(t);
}

}  // namespace detail::numeric

template <class To, class From>
TENET_HD constexpr To convert(From x)
{
    static_assert(element<To> && element<From>,
                  "tenet: convert<To>(x): To and x's type must be tenet element types "
                  "(f32, f64, f16, bf16, f8e4m3, f8e5m2, i8, i32, bool)");
    if constexpr (std::is_same_v<To, From>) {
        return x;
    } else if constexpr (is_bool_v<From>) {
        return convert<To>(static_cast<i32>(x));
    } else if constexpr (is_bool_v<To>) {
        if constexpr (narrow_floating<From>) return detail::numeric::widen_to_f32(x) != 0.0f;
        else return x != From{0};
    } else if constexpr (narrow_floating<From>) {
        return convert<To>(detail::numeric::widen_to_f32(x));
    } else if constexpr (is_integer_v<From>) {
        if constexpr (is_integer_v<To>) return detail::numeric::saturate_to<To>(x);
        else if constexpr (!narrow_floating<To>) return static_cast<To>(x);
        else if constexpr (std::is_same_v<From, i8>) return convert<To>(static_cast<f32>(x));  // exact
        else return convert<To>(static_cast<f64>(x));                                        // exact
    } else if constexpr (is_integer_v<To>) {
        return detail::numeric::round_to_integer<To>(x);
    } else if constexpr (!narrow_floating<To>) {
        return static_cast<To>(x);  // f32 <-> f64
    } else if constexpr (std::is_same_v<From, f32>) {
        return detail::numeric::narrow_from_f32<To>(x);
    } else {
        return detail::numeric::from_bits<To>(
            detail::numeric::convert_format<detail::numeric::format_of<To>::value, detail::numeric::binary64_format>(detail::numeric::to_bits(x)));
    }
}

}  // namespace tenet
