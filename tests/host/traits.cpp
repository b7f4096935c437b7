// numeric_traits against std::numeric_limits and the formats' known limits.
#include <doctest/doctest.h>
#include <tenet/numeric/convert.hpp>
#include <tenet/numeric/traits.hpp>

#include <cmath>
#include <limits>
#include <string>

using namespace tenet;

namespace {

template <class T>
void check_like_std()
{
    using std_limits = std::numeric_limits<T>;
    using traits = numeric_traits<T>;
    CHECK(traits::max() == std_limits::max());
    CHECK(traits::lowest() == std_limits::lowest());
    CHECK(traits::epsilon() == std_limits::epsilon());
    CHECK(traits::digits == std_limits::digits);
    CHECK(traits::bits == 8 * static_cast<int>(sizeof(T)));
    CHECK(traits::is_floating == std_limits::is_iec559);
    if constexpr (is_floating_v<T>) {
        CHECK(traits::max_exponent == std_limits::max_exponent);
        CHECK(traits::min_normal() == std_limits::min());
        CHECK(traits::denorm_min() == std_limits::denorm_min());
        CHECK(traits::infinity() == std_limits::infinity());
        CHECK(std::isnan(traits::quiet_nan()));
    }
}

struct expected_limits {
    double max, epsilon, min_normal, denorm_min;
    int bits, digits, max_exponent;
    bool has_infinity;
};

template <class T>
void check_narrow(expected_limits want)
{
    using traits = numeric_traits<T>;
    CHECK(convert<f64>(traits::max()) == want.max);
    CHECK(convert<f64>(traits::lowest()) == -want.max);
    CHECK(convert<f64>(traits::epsilon()) == want.epsilon);
    CHECK(convert<f64>(traits::min_normal()) == want.min_normal);
    CHECK(convert<f64>(traits::denorm_min()) == want.denorm_min);
    CHECK(std::isnan(convert<f32>(traits::quiet_nan())));
    CHECK(traits::bits == want.bits);
    CHECK(traits::digits == want.digits);
    CHECK(traits::max_exponent == want.max_exponent);
    CHECK(traits::has_infinity == want.has_infinity);
    CHECK(traits::is_floating);
    // epsilon is the gap above 1: 1 + eps is representable, 1 + eps/2 rounds to 1.
    CHECK(convert<f64>(convert<T>(1.0 + want.epsilon)) == 1.0 + want.epsilon);
    CHECK(convert<f64>(convert<T>(1.0 + want.epsilon / 2)) == 1.0);
}

}  // namespace

TEST_CASE("traits of f32, f64, i8 and i32 agree with std::numeric_limits")
{
    check_like_std<f32>();
    check_like_std<f64>();
    check_like_std<i8>();
    check_like_std<i32>();
}

TEST_CASE("traits of the 16- and 8-bit floats")
{
    check_narrow<f16>({65504.0, 0x1p-10, 0x1p-14, 0x1p-24, 16, 11, 16, true});
    check_narrow<bf16>({0x1.FEp127, 0x1p-7, 0x1p-126, 0x1p-133, 16, 8, 128, true});
    check_narrow<f8e4m3>({448.0, 0x1p-3, 0x1p-6, 0x1p-9, 8, 4, 9, false});
    check_narrow<f8e5m2>({57344.0, 0x1p-2, 0x1p-14, 0x1p-16, 8, 3, 16, true});
    CHECK(std::isinf(convert<f32>(numeric_traits<f16>::infinity())));
    CHECK(std::isinf(convert<f32>(numeric_traits<f8e5m2>::infinity())));
}

TEST_CASE("element categories and names")
{
    static_assert(element<f16> && element<i8> && !element<int64_t> && !element<unsigned>);
    static_assert(narrow_floating<bf16> && narrow_floating<f8e4m3> && !narrow_floating<f32>);
    static_assert(is_integer_v<i32> && !is_floating_v<i32>);
    static_assert(element<bool> && is_bool_v<bool> && !is_integer_v<bool>);
    CHECK(numeric_traits<bool>::max() == true);
    CHECK(numeric_traits<bool>::lowest() == false);
    CHECK(std::string(numeric_traits<f8e5m2>::name) == "f8e5m2");
    CHECK(std::string(numeric_traits<bf16>::name) == "bf16");
}
