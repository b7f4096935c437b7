// Math functions callable from host and device code with one spelling: on
// the device they are CUDA's, on the host the C library's. Each takes float
// or double.
#pragma once

#include "../config.hpp"

#include <math.h>

#include <type_traits>

namespace tenet::math {

template <class T>
inline constexpr bool is_single = std::is_same_v<T, float>;

template <class T> TENET_HD T exp(T x) { if constexpr (is_single<T>) return ::expf(x); else return ::exp(x); }
template <class T> TENET_HD T exp2(T x) { if constexpr (is_single<T>) return ::exp2f(x); else return ::exp2(x); }
template <class T> TENET_HD T expm1(T x) { if constexpr (is_single<T>) return ::expm1f(x); else return ::expm1(x); }
template <class T> TENET_HD T log(T x) { if constexpr (is_single<T>) return ::logf(x); else return ::log(x); }
template <class T> TENET_HD T log2(T x) { if constexpr (is_single<T>) return ::log2f(x); else return ::log2(x); }
template <class T> TENET_HD T log1p(T x) { if constexpr (is_single<T>) return ::log1pf(x); else return ::log1p(x); }
template <class T> TENET_HD T sqrt(T x) { if constexpr (is_single<T>) return ::sqrtf(x); else return ::sqrt(x); }
template <class T> TENET_HD T sin(T x) { if constexpr (is_single<T>) return ::sinf(x); else return ::sin(x); }
template <class T> TENET_HD T cos(T x) { if constexpr (is_single<T>) return ::cosf(x); else return ::cos(x); }
template <class T> TENET_HD T tanh(T x) { if constexpr (is_single<T>) return ::tanhf(x); else return ::tanh(x); }
template <class T> TENET_HD T erf(T x) { if constexpr (is_single<T>) return ::erff(x); else return ::erf(x); }
template <class T> TENET_HD T fabs(T x) { if constexpr (is_single<T>) return ::fabsf(x); else return ::fabs(x); }
template <class T> TENET_HD T pow(T x, T y) { if constexpr (is_single<T>) return ::powf(x, y); else return ::pow(x, y); }

template <class T>
TENET_HD T rsqrt(T x)
{
#if TENET_DEVICE_PASS
    if constexpr (is_single<T>) return ::rsqrtf(x);
    else return ::rsqrt(x);
#else
    return T(1) / sqrt(x);
#endif
}

}  // namespace tenet::math
