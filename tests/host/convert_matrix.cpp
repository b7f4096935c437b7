// All 81 (To, From) pairs of element types, each checked against the
// independent reference applied to the exact value of the input.
#include <doctest/doctest.h>
#include <tenet/numeric/convert.hpp>

#include "mismatch_log.hpp"
#include "reference_float.hpp"
#include "samples.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <optional>
#include <tuple>

using namespace tenet;

namespace {

using all_elements = std::tuple<f32, f64, f16, bf16, f8e4m3, f8e5m2, i8, i32, bool>;

template <class F>
void for_each_element(F&& f)
{
    std::apply([&](auto... types) { (f(types), ...); }, all_elements{});
}

template <class T>
constexpr ref::format reference_format()
{
    if constexpr (std::is_same_v<T, f16>) return ref::f16;
    else if constexpr (std::is_same_v<T, bf16>) return ref::bf16;
    else if constexpr (std::is_same_v<T, f8e4m3>) return ref::e4m3;
    else return ref::e5m2;
}

// The exact value of x (every element value is a double).
template <class T>
double exact_value(T x)
{
    if constexpr (narrow_floating<T>) return ref::decode(detail::numeric::to_bits(x), reference_format<T>());
    else return static_cast<double>(x);
}

template <class To, class From>
void check_pair(const std::vector<From>& inputs)
{
    mismatch_log log;
    std::optional<ref::rounder> table;
    if constexpr (narrow_floating<To>) table.emplace(reference_format<To>());
    for (From x : inputs) {
        const double v = exact_value(x);
        const To got = convert<To>(x);
        bool ok;
        if constexpr (std::is_same_v<To, From>) {
            ok = std::memcmp(&got, &x, sizeof x) == 0;  // the identity, NaN payloads included
        } else if constexpr (is_bool_v<To>) {
            ok = got == (std::isnan(v) || v != 0);
        } else if constexpr (is_integer_v<To>) {
            ok = got == ref::round_to_integer<To>(v, numeric_traits<To>::lowest(), numeric_traits<To>::max());
        } else if constexpr (narrow_floating<To>) {
            const std::uint64_t want = (*table)(v);
            ok = detail::numeric::to_bits(got) == want;
        } else {
            const To want = static_cast<To>(v);  // f32: one IEEE rounding of the exact value; f64: exact
            ok = std::isnan(v) ? std::isnan(got) : detail::numeric::to_bits(got) == detail::numeric::to_bits(want);
        }
        if (!ok) log.add("%s -> %s: input %a", numeric_traits<From>::name, numeric_traits<To>::name, v);
    }
    CHECK_NO_MISMATCH(log);
}

}  // namespace

TEST_CASE("every pair of element types converts as the reference does")
{
    int pairs = 0;
    for_each_element([&](auto from) {
        using From = decltype(from);
        const std::vector<From> inputs = samples::values_of<From>(20'000);
        for_each_element([&](auto to) {
            check_pair<decltype(to), From>(inputs);
            ++pairs;
        });
    });
    CHECK(pairs == 81);
}

TEST_CASE("integer -> integer saturates; integer -> float is exact or rounds once")
{
    CHECK(convert<i8>(i32{300}) == 127);
    CHECK(convert<i8>(i32{-300}) == -128);
    CHECK(convert<i8>(i32{-77}) == -77);
    CHECK(convert<i32>(i8{-128}) == -128);
    CHECK(convert<f32>(i32{16777217}) == 16777216.0f);                          // tie -> even
    CHECK(detail::numeric::to_bits(convert<f16>(i32{65520})) == 0x7C00);                  // overflow -> inf
    CHECK(detail::numeric::to_bits(convert<f16>(i32{2049})) == detail::numeric::to_bits(convert<f16>(2048.0f)));
    CHECK(detail::numeric::to_bits(convert<f8e4m3>(i8{127})) == detail::numeric::to_bits(convert<f8e4m3>(128.0f)));
}

TEST_CASE("bool converts as 0 and 1, and anything nonzero or NaN is true")
{
    CHECK(convert<f32>(true) == 1.0f);
    CHECK(detail::numeric::to_bits(convert<bf16>(true)) == 0x3F80);
    CHECK(convert<i8>(false) == 0);
    CHECK(convert<bool>(-0.0f) == false);
    CHECK(convert<bool>(NAN) == true);
    CHECK(convert<bool>(detail::numeric::from_bits<f16>(0x0001)) == true);  // the smallest subnormal
    CHECK(convert<bool>(i32{-7}) == true);
}

TEST_CASE("convert is usable at compile time")
{
    static_assert(detail::numeric::to_bits(convert<f16>(1.0f)) == 0x3C00);
    static_assert(detail::numeric::to_bits(convert<bf16>(1.0f / 3)) == 0x3EAB);
    static_assert(detail::numeric::to_bits(convert<f8e4m3>(1000.0)) == 0x7E);
    static_assert(convert<f32>(convert<f16>(0.1f)) == 0.0999755859375f);
    static_assert(convert<i8>(-2.5f) == -2 && convert<i8>(3.5) == 4);
    static_assert(convert<i32>(convert<bf16>(-1.5f)) == -2);
    CHECK(true);
}
