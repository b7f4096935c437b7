// The host's inline f32 exp and tanh (expr/polynomial_math.hpp) against
// float64 over the float range: a sweep of every 509th bit pattern (all
// signs, exponents and NaN payload kinds), and every float where the
// functions change method or scale (tanh's switch at 0.625, exp's overflow
// and subnormal edges). A run over all 2^32 inputs, made once while writing
// them, found 1.03 ulps for exp and 1.33 for tanh at worst.
#include <doctest/doctest.h>
#include <tenet/expr/math.hpp>

#include "mismatch_log.hpp"
#include "tensor_testing.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

using namespace tenet;

namespace {

constexpr double exp_ulps = 1.1, tanh_ulps = 1.5;

struct worst {
    double ulps = 0;
    float at = 0;
};

// got against want (float64), in f32 ulps of want (subnormal results: the
// smallest normal's ulp); an infinite want must be met exactly.
void check_one(mismatch_log& log, worst& w, const char* name, float x, float got, double want, double bound)
{
    if (std::isnan(want)) {
        if (!std::isnan(got)) log.add("%s(%a) = %a, want NaN", name, x, got);
        return;
    }
    if (std::fabs(want) > std::numeric_limits<float>::max()) {  // beyond f32: +-inf, or FLT_MAX within the bound
        const double limit = std::copysign(double(std::numeric_limits<float>::max()), want);
        if (!(std::isinf(got) && (got > 0) == (want > 0)) &&
            std::fabs(got - limit) > bound * testing::storage_ulp<f32>(limit))
            log.add("%s(%a) = %a, want %a", name, x, got, want);
        return;
    }
    const double ulps = std::fabs(double(got) - want) / testing::storage_ulp<f32>(want);
    if (!(ulps <= bound)) log.add("%s(%a) = %a, want %a (%g ulps)", name, x, got, want, ulps);
    if (ulps > w.ulps) w = {ulps, x};
}

struct sweep {
    mismatch_log log;
    worst exp, tanh;

    void at(float x)
    {
        check_one(log, exp, "exp", x, math::exp(x), std::exp(double(x)), exp_ulps);
        check_one(log, tanh, "tanh", x, math::tanh(x), std::tanh(double(x)), tanh_ulps);
        const float t = math::tanh(x);
        if (!std::isnan(x) && std::signbit(t) != std::signbit(x)) log.add("tanh(%a) = %a: the sign is lost", x, t);
    }

    // Every float from a to b (same sign, |a| <= |b|), every step-th one.
    void range(float a, float b, std::uint32_t step = 1)
    {
        for (std::uint32_t bits = std::bit_cast<std::uint32_t>(a); bits <= std::bit_cast<std::uint32_t>(b); bits += step)
            at(std::bit_cast<float>(bits));
    }
};

}  // namespace

TEST_CASE("host f32 exp and tanh stay within 1.1 and 1.5 ulps of float64 over the float range")
{
    sweep s;
    for (std::uint64_t bits = 0; bits < (std::uint64_t{1} << 32); bits += 509) s.at(std::bit_cast<float>(std::uint32_t(bits)));
    s.range(0.5f, 0.75f);                // tanh: the polynomial meets 1 - 2 / (e^2x + 1) at 0.625
    s.range(-0.5f, -0.75f);
    s.range(88.0f, 89.5f);               // exp: 2^128 scaled in halves, overflow at 88.72
    s.range(-87.5f, -104.5f, 3);         // exp: subnormal results, underflow to 0
    s.range(0x1p-30f, 0x1p-20f, 5);      // tanh: tiny x (x + x^3 q: x itself)
    INFO("exp worst ", s.exp.ulps, " ulps at ", s.exp.at, "; tanh worst ", s.tanh.ulps, " ulps at ", s.tanh.at);
    CHECK_NO_MISMATCH(s.log);
    CHECK(s.exp.ulps > 0.5);  // the sweep reached inputs that are not exact
    CHECK(s.tanh.ulps > 0.5);
}

TEST_CASE("host f32 exp and tanh: special values")
{
    constexpr float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    CHECK(math::exp(0.0f) == 1.0f);
    CHECK(math::exp(-0.0f) == 1.0f);
    CHECK(math::exp(inf) == inf);
    CHECK(math::exp(-inf) == 0.0f);
    CHECK(math::exp(89.0f) == inf);
    CHECK(math::exp(-104.0f) == 0.0f);
    CHECK(math::exp(-103.0f) > 0.0f);  // a subnormal, not flushed
    CHECK(std::isnan(math::exp(nan)));
    CHECK(std::isnan(math::exp(-nan)));
    CHECK(math::tanh(inf) == 1.0f);
    CHECK(math::tanh(-inf) == -1.0f);
    CHECK(math::tanh(50.0f) == 1.0f);  // e^100 overflows inside: still exactly 1
    CHECK(std::bit_cast<std::uint32_t>(math::tanh(-0.0f)) == std::bit_cast<std::uint32_t>(-0.0f));
    CHECK(std::bit_cast<std::uint32_t>(math::tanh(0.0f)) == 0u);
    CHECK(math::tanh(0x1p-100f) == 0x1p-100f);
    CHECK(math::tanh(-0x1p-149f) == -0x1p-149f);
    CHECK(std::isnan(math::tanh(nan)));
}
