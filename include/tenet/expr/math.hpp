// Math functions callable from host and device code with one spelling: on
// the device they are CUDA's, on the host the C library's -- except f32 exp
// and tanh, which the host computes inline (polynomial_math.hpp). Each takes
// float or double.
//
// On x86-64 glibc with g++, host calls go through declarations of the same
// libm symbols that also announce glibc's SIMD versions (libmvec), and say
// that they do not touch errno: a host loop calling them then vectorises.
// These are our own declarations, under our own names; the user's expf and
// friends keep their ordinary meaning.
#pragma once

#include "../config.hpp"
#include "polynomial_math.hpp"

#include <math.h>

#include <type_traits>

#if !defined(__CUDACC__) && defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
    defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
#define TENET_HOST_VECTOR_MATH 1
#else
#define TENET_HOST_VECTOR_MATH 0
#endif

namespace tenet::math {
namespace detail {

#if TENET_HOST_VECTOR_MATH
namespace vector_libm {
#define TENET_LIBMVEC __attribute__((simd("notinbranch"), const, nothrow))
float exp2f(float) __asm__("exp2f") TENET_LIBMVEC;
float expm1f(float) __asm__("expm1f") TENET_LIBMVEC;
float logf(float) __asm__("logf") TENET_LIBMVEC;
float log2f(float) __asm__("log2f") TENET_LIBMVEC;
float log1pf(float) __asm__("log1pf") TENET_LIBMVEC;
float sinf(float) __asm__("sinf") TENET_LIBMVEC;
float cosf(float) __asm__("cosf") TENET_LIBMVEC;
float erff(float) __asm__("erff") TENET_LIBMVEC;
float powf(float, float) __asm__("powf") TENET_LIBMVEC;
double exp(double) __asm__("exp") TENET_LIBMVEC;
double exp2(double) __asm__("exp2") TENET_LIBMVEC;
double expm1(double) __asm__("expm1") TENET_LIBMVEC;
double log(double) __asm__("log") TENET_LIBMVEC;
double log2(double) __asm__("log2") TENET_LIBMVEC;
double log1p(double) __asm__("log1p") TENET_LIBMVEC;
double sin(double) __asm__("sin") TENET_LIBMVEC;
double cos(double) __asm__("cos") TENET_LIBMVEC;
double tanh(double) __asm__("tanh") TENET_LIBMVEC;
double erf(double) __asm__("erf") TENET_LIBMVEC;
double pow(double, double) __asm__("pow") TENET_LIBMVEC;
#undef TENET_LIBMVEC
}  // namespace vector_libm
namespace impl = vector_libm;
#else
namespace impl {  // the C library's, or CUDA's on the device
using ::cos, ::cosf, ::erf, ::erff, ::exp, ::exp2, ::exp2f, ::expf, ::expm1, ::expm1f, ::log, ::log1p, ::log1pf, ::log2,
    ::log2f, ::logf, ::pow, ::powf, ::sin, ::sinf, ::tanh, ::tanhf;
}  // namespace impl
#endif

template <class T>
inline constexpr bool is_single = std::is_same_v<T, float>;

}  // namespace detail

template <class T> TENET_HD T exp2(T x) { if constexpr (detail::is_single<T>) return detail::impl::exp2f(x); else return detail::impl::exp2(x); }
template <class T> TENET_HD T expm1(T x) { if constexpr (detail::is_single<T>) return detail::impl::expm1f(x); else return detail::impl::expm1(x); }
template <class T> TENET_HD T log(T x) { if constexpr (detail::is_single<T>) return detail::impl::logf(x); else return detail::impl::log(x); }
template <class T> TENET_HD T log2(T x) { if constexpr (detail::is_single<T>) return detail::impl::log2f(x); else return detail::impl::log2(x); }
template <class T> TENET_HD T log1p(T x) { if constexpr (detail::is_single<T>) return detail::impl::log1pf(x); else return detail::impl::log1p(x); }
template <class T> TENET_HD T sin(T x) { if constexpr (detail::is_single<T>) return detail::impl::sinf(x); else return detail::impl::sin(x); }
template <class T> TENET_HD T cos(T x) { if constexpr (detail::is_single<T>) return detail::impl::cosf(x); else return detail::impl::cos(x); }
template <class T> TENET_HD T erf(T x) { if constexpr (detail::is_single<T>) return detail::impl::erff(x); else return detail::impl::erf(x); }
template <class T> TENET_HD T pow(T x, T y) { if constexpr (detail::is_single<T>) return detail::impl::powf(x, y); else return detail::impl::pow(x, y); }

// f32 exp and tanh on the host are inline polynomials (polynomial_math.hpp),
// which vectorise without a call; f64 and the device use the libraries'.
template <class T>
TENET_HD T exp(T x)
{
#if TENET_DEVICE_PASS
    if constexpr (detail::is_single<T>) return detail::impl::expf(x);
#else
    if constexpr (detail::is_single<T>) return detail::polynomial_exp(x);
#endif
    else return detail::impl::exp(x);
}
template <class T>
TENET_HD T tanh(T x)
{
#if TENET_DEVICE_PASS
    if constexpr (detail::is_single<T>) return detail::impl::tanhf(x);
#else
    if constexpr (detail::is_single<T>) return detail::polynomial_tanh(x);
#endif
    else return detail::impl::tanh(x);
}

// sqrt and fabs are single instructions; g++ vectorises sqrt only without
// errno (-fno-math-errno).
template <class T> TENET_HD T sqrt(T x) { if constexpr (detail::is_single<T>) return ::sqrtf(x); else return ::sqrt(x); }
template <class T> TENET_HD T fabs(T x) { if constexpr (detail::is_single<T>) return ::fabsf(x); else return ::fabs(x); }
template <class T> TENET_HD T fmod(T x, T y) { if constexpr (detail::is_single<T>) return ::fmodf(x, y); else return ::fmod(x, y); }
template <class T> TENET_HD T trunc(T x) { if constexpr (detail::is_single<T>) return ::truncf(x); else return ::trunc(x); }

template <class T>
TENET_HD T rsqrt(T x)
{
#if TENET_DEVICE_PASS
    if constexpr (detail::is_single<T>) return ::rsqrtf(x);
    else return ::rsqrt(x);
#else
    return T(1) / sqrt(x);
#endif
}

}  // namespace tenet::math
