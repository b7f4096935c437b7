// f32 exp and tanh for the host, written out: branch-free arithmetic and
// bit operations, inlined into the loop that calls them. A host loop then
// vectorises them at the widest ISA the build allows (AVX-512 under
// -march=native) with no call -- a call to glibc's SIMD versions spills
// every live vector register, which cost the 30-operation chain more than
// the functions themselves.
//
// Accuracy against float64, over all 2^32 inputs (run once, while writing
// them; tests/host/polynomial_math.cpp sweeps a sample and every input near
// each switch): exp within 1.03 ulps, tanh within 1.33 ulps, subnormal
// results included; NaN in, NaN out; exp(-inf) = 0, exp(+inf) = +inf, tanh(+-inf) = +-1,
// tanh(-0) = -0. Host code only: the device keeps CUDA's functions.
#pragma once

#include <bit>
#include <cstdint>

namespace tenet::math::detail {

// 2^k for k in [-126, 127], from its exponent bits.
inline float power_of_two(std::int32_t k)
{
    return std::bit_cast<float>(static_cast<std::uint32_t>(k + 127) << 23);
}

// e^c = 2^n e^r with n = round(c / ln 2) and |r| <= ln(2) / 2, for c
// already clamped to [-104, 89]. r is c - n ln 2 in two parts (Cody and
// Waite): n * ln2_hi is exact for |n| <= 2^8. e^r is Cephes' minimax
// polynomial, 1 + r + r^2 p(r), with p evaluated in Estrin's scheme (pairs
// of terms, then r^2): three dependent steps, not Horner's five, since a
// fused loop's speed is bounded by its longest chain of dependent steps.
struct reduced_exp {
    float mantissa;  // e^r, in [0.7, 1.42]
    float n;         // an integer
};

inline reduced_exp reduce_exp(float c)
{
    constexpr float log2e = 1.44269504088896341f, ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
    constexpr float round_shift = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
    const float n = (c * log2e + round_shift) - round_shift;
    const float r = (c - n * ln2_hi) - n * ln2_lo;
    const float r2 = r * r;
    const float p45 = 1.9875691500e-4f * r + 1.3981999507e-3f;
    const float p23 = 8.3334519073e-3f * r + 4.1665795894e-2f;
    const float p01 = 1.6666665459e-1f * r + 5.0000001201e-1f;
    const float p = (p45 * r2 + p23) * r2 + p01;
    return {(p * r2 + r) + 1.0f, n};
}

// e^x. 2^n is applied as two halves, so that n down to -150 (subnormal
// results) and up to 128 (just below overflow) scale without an
// intermediate underflow or overflow.
inline float polynomial_exp(float x)
{
    float c = x > 89.0f ? 89.0f : x;  // e^89 overflows, e^-104 underflows to 0
    c = c < -104.0f ? -104.0f : c;    // (NaN passes both and is returned below)
    const reduced_exp e = reduce_exp(c);
    const auto k = static_cast<std::int32_t>(e.n);
    const std::int32_t half = k >> 1;
    const float y = e.mantissa * power_of_two(half) * power_of_two(k - half);
    return x != x ? x : y;
}

// tanh: an odd polynomial x + x^3 q(x^2) below |x| = 0.625 (fitted here to
// tanh in float64; 0.08 ulp from it), and 1 - 2 / (e^2|x| + 1) with x's sign
// above, where the subtraction loses at most a bit. |x| is clamped to 9.25,
// where that is exactly 1 in f32 (as it is for every larger |x|), so e^2|x|
// needs one scaling by 2^n, n <= 27: the same values as polynomial_exp's.
inline float polynomial_tanh(float x)
{
    const float a = x < 0.0f ? -x : x;
    const float t = x * x;
    float q = -0.00570399268f;
    q = q * t + 0.0206378177f;
    q = q * t - 0.0537391454f;
    q = q * t + 0.133314312f;
    q = q * t - 0.333332807f;
    const float small = t == 0.0f ? x : x + x * (t * q);  // keeps -0 (x + (-0 * q) would be +0)
    const float clamped = a > 9.25f ? 9.25f : a;
    const reduced_exp e = reduce_exp(clamped + clamped);
    const float large = 1.0f - 2.0f / (e.mantissa * power_of_two(static_cast<std::int32_t>(e.n)) + 1.0f);
    const float signed_large = x < 0.0f ? -large : large;
    return a < 0.625f ? small : signed_large;  // NaN: both are NaN
}

}  // namespace tenet::math::detail
