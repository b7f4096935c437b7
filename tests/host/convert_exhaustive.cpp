// Every bit pattern of f16, bf16 and the fp8 types: decoded exactly, round
// trips through f32, and every tie between neighbours rounds to even.
#include <doctest/doctest.h>
#include <tenet/numeric/convert.hpp>

#include "mismatch_log.hpp"
#include "reference_float.hpp"

#include <bit>
#include <cmath>
#include <cstdint>

using namespace tenet;

namespace {

template <class T>
std::uint64_t bits_of(T x)
{
    return detail::numeric::to_bits(x);
}

// Decoding and the f32 round trip, for all 2^bits patterns of T. Infinities
// of a saturating format (f8e5m2) come back as its largest finite value.
template <class T>
void check_all_patterns(ref::format format, std::uint64_t canonical_nan)
{
    const std::uint64_t max_finite = detail::numeric::to_bits(numeric_traits<T>::max());
    mismatch_log log;
    for (std::uint64_t bits = 0; bits < (std::uint64_t{1} << (8 * sizeof(T))); ++bits) {
        const T x = detail::numeric::from_bits<T>(bits);
        const double exact = ref::decode(bits, format);
        const float wide = convert<f32>(x);
        const double wider = convert<f64>(x);
        const std::uint64_t back = bits_of(convert<T>(wide));
        if (std::isnan(exact)) {
            if (!std::isnan(wide) || !std::isnan(wider) || back != canonical_nan)
                log.add("NaN pattern %#llx -> %a -> %#llx", (unsigned long long)bits, wide, (unsigned long long)back);
            continue;
        }
        const std::uint64_t sign = bits & ~detail::numeric::format_of<T>::value.magnitude_mask();
        const std::uint64_t want_back = (std::isinf(exact) && format.saturate) ? (sign | max_finite) : bits;
        if (static_cast<double>(wide) != exact || wider != exact || std::signbit(wide) != std::signbit(exact) ||
            back != want_back) {
            log.add("pattern %#llx: exact %a, f32 %a, f64 %a, back %#llx", (unsigned long long)bits, exact, wide,
                    wider, (unsigned long long)back);
        }
    }
    CHECK_NO_MISMATCH(log);
}

// For every pair of neighbouring finite values (both signs): the midpoint
// rounds to the even encoding, and the floats just beside it round to the
// nearer neighbour. Midpoints of these formats are exact in f32.
template <class T>
void check_all_ties(ref::format format)
{
    const ref::rounder rounder(format);
    const auto& values = rounder.values();
    mismatch_log log;
    auto expect = [&](float x, std::uint64_t want) {
        const std::uint64_t got = bits_of(convert<T>(x));
        if (got != want || rounder(x) != want)
            log.add("%a -> %#llx, want %#llx (reference %#llx)", x, (unsigned long long)got,
                    (unsigned long long)want, (unsigned long long)rounder(x));
    };
    const std::uint64_t sign = std::uint64_t{1} << (format.exponent_bits + format.mantissa_bits);
    for (std::size_t i = 0; i + 1 < values.size(); ++i) {
        const float mid = static_cast<float>((values[i] + values[i + 1]) / 2);
        REQUIRE(static_cast<double>(mid) == (values[i] + values[i + 1]) / 2);
        const std::uint64_t even = (i % 2 == 0) ? i : i + 1;
        for (std::uint64_t s : {std::uint64_t{0}, sign}) {
            const float m = s ? -mid : mid;
            expect(m, s | even);
            expect(std::nextafter(m, s ? -INFINITY : INFINITY), s | (i + 1));
            if (mid != 0) expect(std::nextafter(m, 0.0f), s | i);
        }
    }
    CHECK_NO_MISMATCH(log);
}

}  // namespace

TEST_CASE("f16: all 65536 patterns decode exactly and round-trip through f32")
{
    check_all_patterns<f16>(ref::f16, 0x7FFF);
}

TEST_CASE("bf16: all 65536 patterns decode exactly and round-trip through f32")
{
    check_all_patterns<bf16>(ref::bf16, 0x7FFF);
}

TEST_CASE("f8e4m3 and f8e5m2: all 256 patterns decode exactly and round-trip through f32")
{
    check_all_patterns<f8e4m3>(ref::e4m3, 0x7F);
    check_all_patterns<f8e5m2>(ref::e5m2, 0x7F);
}

TEST_CASE("every tie between neighbouring values rounds to even")
{
    check_all_ties<f16>(ref::f16);
    check_all_ties<bf16>(ref::bf16);
    check_all_ties<f8e4m3>(ref::e4m3);
    check_all_ties<f8e5m2>(ref::e5m2);
}

TEST_CASE("NaN canonicalisation and the widening NaN rules")
{
    // Narrowing: any NaN, any sign or payload -> all magnitude bits, sign clear.
    for (std::uint32_t nan : {0x7F800001u, 0xFF800001u, 0x7FC00000u, 0xFFFFFFFFu, 0x7FAAAAAAu}) {
        const float x = std::bit_cast<float>(nan);
        CHECK(bits_of(convert<f16>(x)) == 0x7FFF);
        CHECK(bits_of(convert<bf16>(x)) == 0x7FFF);
        CHECK(bits_of(convert<f8e4m3>(x)) == 0x7F);
        CHECK(bits_of(convert<f8e5m2>(x)) == 0x7F);
        CHECK(bits_of(convert<f16>(static_cast<double>(x))) == 0x7FFF);
    }
    // Widening f16 and fp8 gives f32's canonical NaN (as the GPU's cvt).
    CHECK(std::bit_cast<std::uint32_t>(convert<f32>(detail::numeric::from_bits<f16>(0xFE01))) == 0x7FFFFFFFu);
    CHECK(std::bit_cast<std::uint32_t>(convert<f32>(detail::numeric::from_bits<f8e4m3>(0xFF))) == 0x7FFFFFFFu);
    CHECK(std::bit_cast<std::uint32_t>(convert<f32>(detail::numeric::from_bits<f8e5m2>(0xFD))) == 0x7FFFFFFFu);
    // bf16 -> f32 is a shift: sign and payload kept.
    CHECK(std::bit_cast<std::uint32_t>(convert<f32>(detail::numeric::from_bits<bf16>(0xFFAA))) == 0xFFAA0000u);
}

TEST_CASE("overflow: infinity for f16 and bf16, saturation for fp8; infinities")
{
    CHECK(bits_of(convert<f16>(65519.99f)) == 0x7BFF);
    CHECK(bits_of(convert<f16>(65520.0f)) == 0x7C00);  // the tie goes to the even encoding, infinity
    CHECK(bits_of(convert<f16>(-1e30f)) == 0xFC00);
    CHECK(bits_of(convert<bf16>(std::bit_cast<float>(0x7F7FFFFFu))) == 0x7F80);
    CHECK(bits_of(convert<f8e4m3>(1e30f)) == 0x7E);
    CHECK(bits_of(convert<f8e4m3>(-INFINITY)) == 0xFE);
    CHECK(bits_of(convert<f8e5m2>(INFINITY)) == 0x7B);
    CHECK(bits_of(convert<f8e5m2>(-1e9)) == 0xFB);
    CHECK(bits_of(convert<f16>(INFINITY)) == 0x7C00);
    CHECK(bits_of(convert<bf16>(-INFINITY)) == 0xFF80);
    CHECK(std::isinf(convert<f32>(detail::numeric::from_bits<f8e5m2>(0xFC))));
}

TEST_CASE("underflow keeps the sign of zero, and subnormals round correctly")
{
    CHECK(bits_of(convert<f16>(std::bit_cast<float>(0x80000001u))) == 0x8000);
    CHECK(bits_of(convert<f16>(std::ldexp(1.0f, -25))) == 0x0000);                 // tie with 0 -> 0
    CHECK(bits_of(convert<f16>(std::nextafter(std::ldexp(1.0f, -25), 1.0f))) == 0x0001);
    CHECK(bits_of(convert<f16>(std::ldexp(3.0f, -25))) == 0x0002);                 // 1.5 ulps -> 2 (even)
    CHECK(bits_of(convert<f16>(std::ldexp(1023.5f, -24))) == 0x0400);              // rounds up into the normals
    CHECK(bits_of(convert<bf16>(std::bit_cast<float>(0x00018000u))) == 0x0002);    // bf16 subnormal tie -> even
    CHECK(bits_of(convert<f8e4m3>(std::ldexp(1.0f, -10))) == 0x00);                // half the smallest subnormal
    CHECK(bits_of(convert<f8e4m3>(-std::ldexp(3.0f, -10))) == 0x82);
}
