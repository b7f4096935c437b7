// Float arithmetic that gives the same bits on host and device: each
// operation rounds once (IEEE), and nothing is fused into an FMA behind our
// back -- on the device through the _rn intrinsics, on the host through an
// optimisation barrier that keeps the compiler from contracting a*b+c.
// Used where results must match exactly across backends (random normals).
#pragma once

#include "../config.hpp"

#include <math.h>

namespace tenet::exact {

TENET_HD inline float opaque(float x)
{
#if !TENET_DEVICE_PASS && (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
    __asm__("" : "+x"(x));
#elif !TENET_DEVICE_PASS && (defined(__GNUC__) || defined(__clang__)) && defined(__aarch64__)
    __asm__("" : "+w"(x));
#endif
    return x;
}

TENET_HD inline float add(float a, float b)
{
#if TENET_DEVICE_PASS
    return __fadd_rn(a, b);
#else
    return opaque(a + b);
#endif
}

TENET_HD inline float mul(float a, float b)
{
#if TENET_DEVICE_PASS
    return __fmul_rn(a, b);
#else
    return opaque(a * b);
#endif
}

TENET_HD inline float fma(float a, float b, float c)
{
#if TENET_DEVICE_PASS
    return __fmaf_rn(a, b, c);
#else
    return ::fmaf(a, b, c);
#endif
}

TENET_HD inline float div(float a, float b)
{
#if TENET_DEVICE_PASS
    return __fdiv_rn(a, b);
#else
    return opaque(a / b);
#endif
}

TENET_HD inline float sqrt(float x)
{
#if TENET_DEVICE_PASS
    return __fsqrt_rn(x);
#else
    return opaque(::sqrtf(x));
#endif
}

// Natural logarithm of a positive normal x (2^-126 <= x < 2^128), within a
// few ulps: x = m * 2^e with m in [sqrt(1/2), sqrt(2)), log(m) = 2 atanh(s),
// s = (m - 1) / (m + 1). Only that domain: zero, subnormals, negatives,
// infinities and NaN give meaningless values (random_normal passes u in
// [2^-24, 1]).
TENET_HD inline float log(float x)
{
    unsigned bits = __builtin_bit_cast(unsigned, x);
    int e = static_cast<int>(bits >> 23) - 127;
    bits = (bits & 0x007FFFFFu) | 0x3F800000u;  // m in [1, 2)
    float m = __builtin_bit_cast(float, bits);
    if (m > 1.41421356f) {
        m = mul(m, 0.5f);
        ++e;
    }
    const float s = div(add(m, -1.0f), add(m, 1.0f));
    const float s2 = mul(s, s);
    // 2 atanh(s) = 2s (1 + s^2/3 + s^4/5 + s^6/7 + s^8/9), |s| <= 0.1716
    float p = fma(s2, 0.11111111f, 0.14285715f);
    p = fma(s2, p, 0.2f);
    p = fma(s2, p, 0.33333334f);
    p = fma(s2, p, 1.0f);
    const float log_m = mul(mul(2.0f, s), p);
    const float ef = static_cast<float>(e);
    return fma(ef, 0.693145752f, fma(ef, 1.42860677e-06f, log_m));  // ln 2 split in two
}

// sin(pi t) and cos(pi t) for t in [0, 2).
struct sin_cos {
    float sin, cos;
};
TENET_HD inline sin_cos sincospi(float t)
{
    const float twice = mul(t, 2.0f);
    const int quadrant = static_cast<int>(twice + 0.5f);  // nearest multiple of 1/2
    const float r = add(t, mul(static_cast<float>(quadrant), -0.5f));  // in [-1/4, 1/4], exact
    const float r2 = mul(r, r);
    // Taylor series of sin(pi r) and cos(pi r); |pi r| <= pi/4
    float s = fma(r2, 0.0821458866f, -0.599264529f);
    s = fma(r2, s, 2.55016404f);
    s = fma(r2, s, -5.16771278f);
    s = fma(r2, s, 3.14159265f);
    s = mul(s, r);
    float c = fma(r2, -0.0258068913f, 0.235330630f);
    c = fma(r2, c, -1.33526277f);
    c = fma(r2, c, 4.05871213f);
    c = fma(r2, c, -4.93480220f);
    c = fma(r2, c, 1.0f);
    switch (quadrant & 3) {
        case 0: return {s, c};
        case 1: return {c, -s};
        case 2: return {-s, -c};
        default: return {-c, s};
    }
}

}  // namespace tenet::exact
