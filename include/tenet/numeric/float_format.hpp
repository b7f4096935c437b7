// Bit-level model of binary floating-point formats, and the one rounding
// routine every narrowing conversion in tenet is built on.
//
// A format is described by its field widths; the routines below work on the
// raw bits in a std::uint64_t, so the same code serves fp8, bf16, f16, f32 and
// f64, on the host and on the device, and at compile time.
#pragma once

#include "../config.hpp"

#include <cstdint>

namespace tenet::detail::numeric {

// Index of the most significant set bit of x (x != 0).
TENET_HD constexpr int highest_bit(std::uint64_t x)
{
    if (!__builtin_is_constant_evaluated()) {
#if TENET_DEVICE_PASS
        return 63 - __clzll(static_cast<long long>(x));
#else
        return 63 - __builtin_clzll(x);
#endif
    }
    int n = 0;
    while (x >>= 1) ++n;
    return n;
}

template <class To, class From>
TENET_HD constexpr To bit_cast(const From& from)
{
    static_assert(sizeof(To) == sizeof(From), "tenet: bit_cast between types of different sizes");
    return __builtin_bit_cast(To, from);
}

struct float_format {
    int exponent_bits;
    int mantissa_bits;  // stored fraction bits (the leading 1 is implicit)
    bool has_infinity;  // E4M3 has none: its top exponent holds finite values
    bool saturate;      // overflow gives the largest finite value ("satfinite") instead of infinity

    TENET_HD constexpr int bias() const { return (1 << (exponent_bits - 1)) - 1; }
    TENET_HD constexpr int total_bits() const { return 1 + exponent_bits + mantissa_bits; }
    TENET_HD constexpr int min_normal_exponent() const { return 1 - bias(); }
    TENET_HD constexpr std::uint64_t sign_mask() const { return std::uint64_t{1} << (total_bits() - 1); }
    TENET_HD constexpr std::uint64_t magnitude_mask() const { return sign_mask() - 1; }
    TENET_HD constexpr std::uint64_t mantissa_mask() const { return (std::uint64_t{1} << mantissa_bits) - 1; }
    TENET_HD constexpr std::uint64_t infinity_bits() const { return magnitude_mask() & ~mantissa_mask(); }
    // Every NaN a conversion produces is this one: all magnitude bits set, sign
    // clear (0x7FFF, 0x7F, 0x7FFFFFFF) -- what NVIDIA GPUs' cvt produces.
    TENET_HD constexpr std::uint64_t canonical_nan_bits() const { return magnitude_mask(); }
    TENET_HD constexpr std::uint64_t max_finite_bits() const
    {
        return has_infinity ? infinity_bits() - 1 : magnitude_mask() - 1;
    }
    TENET_HD constexpr bool is_nan(std::uint64_t bits) const
    {
        const std::uint64_t mag = bits & magnitude_mask();
        return has_infinity ? mag > infinity_bits() : mag == magnitude_mask();
    }
    TENET_HD constexpr bool is_infinity(std::uint64_t bits) const
    {
        return has_infinity && (bits & magnitude_mask()) == infinity_bits();
    }
};

inline constexpr float_format binary16_format{5, 10, true, false};
inline constexpr float_format bfloat16_format{8, 7, true, false};
inline constexpr float_format e4m3_format{4, 3, false, true};
inline constexpr float_format e5m2_format{5, 2, true, true};
inline constexpr float_format binary32_format{8, 23, true, false};
inline constexpr float_format binary64_format{11, 52, true, false};

// A finite value as significand * 2^exponent, exactly.
struct unpacked_float {
    bool negative;
    std::uint64_t significand;
    int exponent;
};

template <float_format F>
TENET_HD constexpr unpacked_float unpack_finite(std::uint64_t bits)
{
    const std::uint64_t mag = bits & F.magnitude_mask();
    const int field = static_cast<int>(mag >> F.mantissa_bits);
    const std::uint64_t fraction = mag & F.mantissa_mask();
    const bool negative = (bits & F.sign_mask()) != 0;
    if (field == 0) return {negative, fraction, F.min_normal_exponent() - F.mantissa_bits};
    return {negative, fraction | (std::uint64_t{1} << F.mantissa_bits), field - F.bias() - F.mantissa_bits};
}

// Rounds the exact value (-1)^negative * significand * 2^exponent to format F,
// to nearest with ties to even. Overflow gives infinity, or the largest finite
// value for saturating formats. Requires significand < 2^63.
template <float_format F>
TENET_HD constexpr std::uint64_t round_to_format(bool negative, std::uint64_t significand, int exponent)
{
    const std::uint64_t sign = negative ? F.sign_mask() : 0;
    if (significand == 0) return sign;
    const int value_exponent = highest_bit(significand) + exponent;
    const bool normal = value_exponent >= F.min_normal_exponent();
    const int ulp_exponent = (normal ? value_exponent : F.min_normal_exponent()) - F.mantissa_bits;
    const int shift = ulp_exponent - exponent;  // low significand bits that fall below one ulp

    std::uint64_t ulps;  // the value in ulps, rounded; includes the implicit bit when normal
    if (shift <= 0) {
        ulps = significand << -shift;
    } else if (shift >= 64) {
        ulps = 0;  // below half an ulp of the smallest subnormal
    } else {
        ulps = significand >> shift;
        const std::uint64_t rest = significand & ((std::uint64_t{1} << shift) - 1);
        const std::uint64_t half = std::uint64_t{1} << (shift - 1);
        if (rest > half || (rest == half && (ulps & 1))) ++ulps;
    }
    // Adding (biased exponent - 1) above the mantissa lets a rounding carry out
    // of the mantissa step into the next binade, and a subnormal into the
    // smallest normal, with no special case.
    const std::uint64_t exponent_base =
        normal ? static_cast<std::uint64_t>(value_exponent + F.bias() - 1) << F.mantissa_bits : 0;
    std::uint64_t magnitude = exponent_base + ulps;
    if (magnitude > F.max_finite_bits()) magnitude = F.saturate ? F.max_finite_bits() : F.infinity_bits();
    return sign | magnitude;
}

// Converts the bits of a value in format From to format To (To narrower than
// From or of a disjoint range): NaN becomes To's canonical NaN, infinity
// becomes infinity (the largest finite value for saturating formats).
template <float_format To, float_format From>
TENET_HD constexpr std::uint64_t convert_format(std::uint64_t bits)
{
    if (From.is_nan(bits)) return To.canonical_nan_bits();
    const bool negative = (bits & From.sign_mask()) != 0;
    if (From.is_infinity(bits)) {
        const std::uint64_t sign = negative ? To.sign_mask() : 0;
        return sign | (To.saturate || !To.has_infinity ? To.max_finite_bits() : To.infinity_bits());
    }
    const unpacked_float value = unpack_finite<From>(bits);
    return round_to_format<To>(value.negative, value.significand, value.exponent);
}

}  // namespace tenet::detail::numeric

// For the folders above this one (see docs/ARCHITECTURE.md, "Namespaces").
namespace tenet::internal {
using detail::numeric::bit_cast;
}  // namespace tenet::internal
