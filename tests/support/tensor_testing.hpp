// Helpers for tensor tests: random inputs that include the awkward values,
// poisoned outputs, and comparison against float64 references with
// tolerances derived from the storage type.
#pragma once

#include <doctest/doctest.h>
#include <tenet/tenet.hpp>

#include "mismatch_log.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>

namespace testing {

using namespace tenet;

// Values for storage T: mostly moderate, some tiny and huge (within T's
// range), and the specials: zeros of both signs, +-1, +-inf, NaN.
template <class T>
double draw(std::mt19937_64& rng)
{
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    const double max = convert<f64>(numeric_traits<T>::max());
    const double min_normal = convert<f64>(numeric_traits<T>::min_normal());
    const double u = unit(rng);
    const double sign = unit(rng) < 0.5 ? -1.0 : 1.0;
    if (u < 0.60) return sign * 4.0 * unit(rng);
    if (u < 0.90) {  // log-uniform over the whole normal range
        const double lo = std::log(min_normal), hi = std::log(max);
        return sign * std::exp(lo + (hi - lo) * unit(rng));
    }
    const double specials[] = {0.0, -0.0, 1.0, -1.0, INFINITY, -INFINITY, NAN, 0.5, min_normal, max};
    return specials[std::uniform_int_distribution<int>(0, 9)(rng)];
}

template <class T, class S, class P>
void fill_random(Tensor<T, S, P>& t, std::uint64_t seed, double (*source)(std::mt19937_64&) = &draw<T>)
{
    std::mt19937_64 rng(seed);
    for (std::size_t i = 0; i < S::numel; ++i) t.data()[i] = convert<T>(source(rng));
}

// i32 tokens drawn uniformly from [0, vocab).
template <class S>
Tensor<i32, S, Host> random_tokens(std::uint64_t seed, int vocab)
{
    Tensor<i32, S, Host> t;
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int> pick(0, vocab - 1);
    for (std::size_t i = 0; i < S::numel; ++i) t.data()[i] = pick(rng);
    return t;
}

// Bytes that no honest computation produces in bulk: unwritten outputs show.
template <class T, class S, class P>
void poison(Tensor<T, S, P>& t)
{
    std::memset(static_cast<void*>(t.data()), 0xA5, sizeof(T) * S::numel);
}

// Tolerance of a computed value against the exact (float64) result:
//   the final rounding to T (half an ulp of T; a little more for 16-bit
//   storage, whose f32 result may sit on the other side of a tie), plus the
//   f32 computation's own error, relative (ulps of f32) and absolute (for
//   results that cancel: ulps of f32 at the operands' scale).
struct tolerance {
    double f32_ulps_relative = 0.5;
    double f32_ulps_absolute = 0;
};

template <class T>
double storage_ulp(double value)
{
    const double magnitude = std::fabs(value);
    const double min_normal = convert<f64>(numeric_traits<T>::min_normal());
    const double eps = convert<f64>(numeric_traits<T>::epsilon());
    return (magnitude < min_normal ? min_normal : std::exp2(std::floor(std::log2(magnitude)))) * eps;
}

template <class T>
bool close(double got, double want, double scale, tolerance tol)
{
    if (std::isnan(want)) return std::isnan(got);
    if (std::isinf(scale)) return true;  // the case makes no claim (e.g. an intermediate may overflow)
    if (std::isnan(got)) return false;
    if (std::isinf(got) || std::isinf(want)) {
        if (std::isinf(got) && std::isinf(want)) return got == want;
        // one overflowed, the other did not: fine only at the edge of T's range
        const double finite = std::isinf(got) ? want : got;
        const double max = convert<f64>(numeric_traits<T>::max());
        return std::signbit(got) == std::signbit(want) && std::fabs(finite) >= max * (1 - 0x1p-6);
    }
    const double f32_eps = 0x1p-23;
    double allowed = tol.f32_ulps_relative * f32_eps * std::fabs(want) + tol.f32_ulps_absolute * f32_eps * scale;
    if constexpr (!std::is_same_v<T, f32>) allowed += storage_ulp<T>(want) * 0.5;
    allowed += convert<f64>(numeric_traits<T>::denorm_min()) * 0.5;  // T's resolution near zero
    return std::fabs(got - want) <= allowed;
}

}  // namespace testing
