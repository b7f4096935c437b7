// Narrowing conversions on ten million random floats and a million random
// doubles, against the independent table reference and, for floats, against
// the CUDA Toolkit's own host conversion functions.
#include <doctest/doctest.h>
#include <tenet/numeric/convert.hpp>

#include "mismatch_log.hpp"
#include "reference_float.hpp"
#include "samples.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>

using namespace tenet;

namespace {

constexpr std::size_t random_floats = 5'000'000;  // x2: all patterns, and the formats' ranges
constexpr std::size_t random_doubles = 500'000;

std::uint64_t cuda_host_bits(f16, float x) { return __half_raw(__float2half_rn(x)).x; }
std::uint64_t cuda_host_bits(bf16, float x) { return __nv_bfloat16_raw(__float2bfloat16_rn(x)).x; }
std::uint64_t cuda_host_bits(f8e4m3, float x) { return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3); }
std::uint64_t cuda_host_bits(f8e5m2, float x) { return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2); }

template <class T>
void check_random_floats(ref::format format)
{
    const ref::rounder rounder(format);
    const std::vector<float> inputs = samples::f32_values(random_floats);
    mismatch_log log;
    for (float x : inputs) {
        const std::uint64_t got = detail::numeric::to_bits(convert<T>(x));
        const std::uint64_t want = rounder(x);
        const std::uint64_t cuda = cuda_host_bits(T{}, x);
        if (got != want || got != cuda)
            log.add("%a (%#x): tenet %#llx, reference %#llx, CUDA host %#llx", x, std::bit_cast<std::uint32_t>(x),
                    (unsigned long long)got, (unsigned long long)want, (unsigned long long)cuda);
    }
    CHECK(inputs.size() >= 10'000'000);
    CHECK_NO_MISMATCH(log);
}

// Doubles round once, straight to the target: never through f32 (which would
// round twice). Values a hair beside the target's midpoints tell the two apart.
template <class T>
void check_random_doubles(ref::format format)
{
    const ref::rounder rounder(format);
    std::vector<double> inputs = samples::f64_values(random_doubles);
    const auto& values = rounder.values();
    for (std::size_t i = 0; i + 1 < values.size(); i += 7) {
        const double mid = (values[i] + values[i + 1]) / 2;
        inputs.push_back(mid * (1 + 0x1p-40));
        inputs.push_back(-mid * (1 - 0x1p-40));
    }
    mismatch_log log;
    std::size_t double_rounding_cases = 0;
    for (double x : inputs) {
        const std::uint64_t got = detail::numeric::to_bits(convert<T>(x));
        if (got != rounder(x))
            log.add("%a: tenet %#llx, reference %#llx", x, (unsigned long long)got, (unsigned long long)rounder(x));
        double_rounding_cases += got != detail::numeric::to_bits(convert<T>(static_cast<float>(x)));
    }
    CHECK_NO_MISMATCH(log);
    CHECK(double_rounding_cases > 0);  // the hair-beside-midpoint inputs do exercise the difference
}

template <class I>
void check_to_integer()
{
    const double lo = numeric_traits<I>::lowest(), hi = numeric_traits<I>::max();
    mismatch_log log;
    for (float x : samples::f32_values(random_floats / 10)) {
        if (convert<I>(x) != ref::round_to_integer<I>(x, lo, hi))
            log.add("f32 %a -> %lld, want %lld", x, (long long)convert<I>(x),
                    (long long)ref::round_to_integer<I>(x, lo, hi));
    }
    for (double x : samples::f64_values(random_doubles)) {
        if (convert<I>(x) != ref::round_to_integer<I>(x, lo, hi))
            log.add("f64 %a -> %lld, want %lld", x, (long long)convert<I>(x),
                    (long long)ref::round_to_integer<I>(x, lo, hi));
    }
    for (int k = -600; k <= 600; ++k) {  // every half-integer over and past the i8 range
        const double x = k / 2.0;
        if (convert<I>(x) != ref::round_to_integer<I>(x, lo, hi) ||
            convert<I>(static_cast<float>(x)) != ref::round_to_integer<I>(x, lo, hi))
            log.add("%g -> %lld", x, (long long)convert<I>(x));
    }
    CHECK_NO_MISMATCH(log);
}

}  // namespace

TEST_CASE("f32 -> f16 on 10^7 random floats")
{
    check_random_floats<f16>(ref::f16);
}
TEST_CASE("f32 -> bf16 on 10^7 random floats")
{
    check_random_floats<bf16>(ref::bf16);
}
TEST_CASE("f32 -> f8e4m3 and f8e5m2 on 10^7 random floats")
{
    check_random_floats<f8e4m3>(ref::e4m3);
    check_random_floats<f8e5m2>(ref::e5m2);
}

TEST_CASE("f64 -> f16, bf16, fp8 round once")
{
    check_random_doubles<f16>(ref::f16);
    check_random_doubles<bf16>(ref::bf16);
    check_random_doubles<f8e4m3>(ref::e4m3);
    check_random_doubles<f8e5m2>(ref::e5m2);
}

TEST_CASE("f32 and f64 -> i8, i32: nearest even, saturating, NaN -> 0")
{
    check_to_integer<i8>();
    check_to_integer<i32>();
    CHECK(convert<i8>(NAN) == 0);
    CHECK(convert<i32>(-INFINITY) == numeric_traits<i32>::lowest());
    CHECK(convert<i8>(127.5f) == 127);
    CHECK(convert<i8>(-128.5f) == -128);
    CHECK(convert<i8>(-0.5f) == 0);
    CHECK(convert<i8>(1.5f) == 2);
    CHECK(convert<i32>(2147483520.0f) == 2147483520);
    CHECK(convert<i32>(2147483647.5) == 2147483647);
    CHECK(convert<i32>(-2147483648.5) == -2147483647 - 1);
}
