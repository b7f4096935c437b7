// Every elementwise operation on the host, for f32, f16 and bf16 storage,
// against float64 references on random inputs (including tiny, huge, zero,
// infinite and NaN values), with tolerances derived from the storage type.
#include "op_cases.hpp"

#include <cmath>
#include <cstring>
#include <string>

using namespace tenet;
using testing::close;
using testing::tolerance;

namespace {

std::uint64_t seed_of(const char* name)
{
    std::uint64_t h = 1469598103934665603ULL;
    for (const char* c = name; *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 1099511628211ULL;
    return h;
}

template <class T>
struct host_runner {
    using S = Shape<37, 29>;  // 1073 elements: not a multiple of any chunk length

    template <class Make, class Ref, class Scale>
    void unary(const char* name, Make make, Ref ref, tolerance tol, Scale scale)
    {
        Tensor<T, S, Host> x, y;
        testing::fill_random(x, seed_of(name));
        testing::poison(y);
        y = make(x);
        mismatch_log log;
        for (std::size_t i = 0; i < S::numel; ++i) {
            const double in = convert<f64>(x.data()[i]), got = convert<f64>(y.data()[i]), want = ref(in);
            if (!close<T>(got, want, scale(in), tol)) log.add("%s(%a) = %a, want %a", name, in, got, want);
        }
        INFO(name, " / ", numeric_traits<T>::name);
        CHECK_NO_MISMATCH(log);
    }

    template <class Make, class Ref, class Scale>
    void binary(const char* name, Make make, Ref ref, tolerance tol, Scale scale)
    {
        Tensor<T, S, Host> a, b, y;
        testing::fill_random(a, seed_of(name));
        testing::fill_random(b, seed_of(name) + 1);
        testing::poison(y);
        y = make(a, b);
        mismatch_log log;
        for (std::size_t i = 0; i < S::numel; ++i) {
            const double x = convert<f64>(a.data()[i]), z = convert<f64>(b.data()[i]);
            const double got = convert<f64>(y.data()[i]), want = ref(x, z);
            if (!close<T>(got, want, scale(x, z), tol)) log.add("%s(%a, %a) = %a, want %a", name, x, z, got, want);
        }
        INFO(name, " / ", numeric_traits<T>::name);
        CHECK_NO_MISMATCH(log);
    }
};

}  // namespace

TEST_CASE_TEMPLATE("unary operations match float64 references", T, f32, f16, bf16)
{
    host_runner<T> run;
    testing::unary_cases(run);
}

TEST_CASE_TEMPLATE("binary operations match float64 references", T, f32, f16, bf16)
{
    host_runner<T> run;
    testing::binary_cases(run);
}

TEST_CASE("comparisons and logical operations give exact bool masks")
{
    using S = Shape<1000>;
    Tensor<f32, S, Host> a, b;
    testing::fill_random(a, 1);
    testing::fill_random(b, 2);
    for (std::size_t i = 0; i < 100; ++i) b.data()[i] = a.data()[i];  // equal pairs too
    Tensor<bool, S, Host> lt, le, gt, ge, eq, ne, both, either, one, none;
    tie(lt, le, gt, ge, eq, ne) = pack(a < b, a <= b, a > b, a >= b, a == b, a != b);
    tie(both, either, one, none) = pack(logical_and(a > 0, b > 0), logical_or(a > 0, b > 0),
                                        logical_xor(a > 0, b > 0), !(a > 0));
    mismatch_log log;
    for (std::size_t i = 0; i < S::numel; ++i) {
        const float x = a.data()[i], y = b.data()[i];
        const bool want[] = {x < y, x <= y, x > y, x >= y, x == y, x != y, x > 0 && y > 0, x > 0 || y > 0,
                             (x > 0) != (y > 0), !(x > 0)};
        const bool got[] = {lt(i), le(i), gt(i), ge(i), eq(i), ne(i), both(i), either(i), one(i), none(i)};
        for (int k = 0; k < 10; ++k)
            if (want[k] != got[k]) log.add("op %d at %a, %a", k, x, y);
    }
    CHECK_NO_MISMATCH(log);
}

TEST_CASE("integer arithmetic wraps, divides by zero to 0, and promotes with floats")
{
    using S = Shape<6>;
    Tensor<i32, S, Host> a, b, sum_, quotient, mixed_i;
    Tensor<f32, S, Host> mixed;
    const i32 av[] = {2147483647, -2147483647 - 1, 7, -7, 5, 0};
    const i32 bv[] = {1, -1, 2, 2, 0, 3};
    for (int i = 0; i < 6; ++i) {
        a(i) = av[i];
        b(i) = bv[i];
    }
    sum_ = a + b;
    quotient = a / b;
    mixed = a * 0.5f;      // a floating scalar makes integer math f32
    mixed_i = a * 2 + 1;   // an integer scalar keeps it i32
    CHECK(sum_(0) == -2147483647 - 1);  // wraps
    CHECK(quotient(1) == -2147483647 - 1);  // INT_MIN / -1 wraps
    CHECK(quotient(2) == 3);
    CHECK(quotient(3) == -3);  // truncates toward zero
    CHECK(quotient(4) == 0);   // division by zero gives 0
    CHECK(mixed(2) == 3.5f);
    CHECK(mixed_i(3) == -13);
    Tensor<i8, S, Host> narrow = a;  // saturates when stored
    CHECK(narrow(0) == 127);
    CHECK(narrow(1) == -128);
    CHECK(narrow(3) == -7);
}

TEST_CASE("fmod and % on integers: truncated, the sign of the dividend, 0 for % 0 and INT_MIN % -1")
{
    constexpr i32 int_min = -2147483647 - 1;
    using S = Shape<12>;
    Tensor<i32, S, Host> a, b, r, f;
    const i32 av[] = {7, -7, 7, -7, 5, 0, int_min, int_min, 2147483647, 13, -13, 6};
    const i32 bv[] = {3, 3, -3, -3, 0, 4, -1, 7, -2, 13, 1, -4};
    for (int i = 0; i < 12; ++i) {
        a(i) = av[i];
        b(i) = bv[i];
    }
    testing::poison(r);
    testing::poison(f);
    r = a % b;
    f = fmod(a, b);
    for (int i = 0; i < 12; ++i) {
        CAPTURE(i);
        const i32 want = (bv[i] == 0 || bv[i] == -1) ? 0 : av[i] % bv[i];  // C++ %: truncated
        CHECK(r(i) == want);
        CHECK(f(i) == want);
    }
    CHECK(r(1) == -1);  // the sign of the dividend, as torch.fmod
    CHECK(r(2) == 1);
    // i8 storage computes in i32; an integer scalar keeps it integral, a float makes it f32
    Tensor<i8, Shape<4>, Host> small, small_r;
    const i8 sv[] = {-128, 127, -5, 9};
    for (int i = 0; i < 4; ++i) small(i) = sv[i];
    small_r = small % 7;
    for (int i = 0; i < 4; ++i) CHECK(small_r(i) == sv[i] % 7);
    Tensor<f32, Shape<4>, Host> mixed;
    mixed = small % 2.5f;
    for (int i = 0; i < 4; ++i) CHECK(mixed(i) == std::fmod(static_cast<float>(sv[i]), 2.5f));
}

TEST_CASE("fmod on floats: NaN for a zero divisor or an infinite dividend, the dividend for an infinite divisor")
{
    using S = Shape<8>;
    Tensor<f32, S, Host> a, b, r;
    const float av[] = {5.5f, -5.5f, 1.0f, INFINITY, 3.0f, NAN, -0.0f, 1e30f};
    const float bv[] = {2.0f, 2.0f, 0.0f, 2.0f, INFINITY, 1.0f, 3.0f, 7.0f};
    for (int i = 0; i < 8; ++i) {
        a(i) = av[i];
        b(i) = bv[i];
    }
    r = a % b;
    for (int i = 0; i < 8; ++i) {
        CAPTURE(i);
        const float want = std::fmod(av[i], bv[i]);
        if (std::isnan(want)) CHECK(std::isnan(r(i)));
        else CHECK(std::memcmp(&r(i), &want, sizeof want) == 0);  // -0.0 stays -0.0
    }
}

TEST_CASE("in-place elementwise assignment reads each element before writing it")
{
    Tensor<f32, Shape<1031>, Host> x;
    x = iota<Shape<1031>>(0.5f, 1.0f);
    x = x * 2 + x;
    for (std::size_t i = 0; i < 1031; ++i) REQUIRE(x(i) == 3.0f * (0.5f + static_cast<float>(i)));
}

TEST_CASE("16-bit storage computes in f32 and rounds once, at the store")
{
    // (1 + 2^-9) * 3 - 2 computed in bf16 steps would round three times.
    Tensor<bf16, Shape<1>, Host> x, y;
    x(0) = convert<bf16>(1.0f);
    y = (x + 0x1p-9f) * 3.0f - 2.0f;  // in f32: 1.005859375 -> rounds once to bf16
    CHECK(convert<f64>(y(0)) == convert<f64>(convert<bf16>((1.0f + 0x1p-9f) * 3.0f - 2.0f)));
    CHECK(convert<f64>(y(0)) != 1.0);
}
