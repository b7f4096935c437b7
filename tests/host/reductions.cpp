// Reductions over all elements and over compile-time axes, fused with their
// input expressions and used inside larger ones, against float64 loops.
#include "tensor_testing.hpp"

#include <algorithm>
#include <vector>

using namespace tenet;

namespace {

double moderate(std::mt19937_64& rng) { return std::uniform_real_distribution<double>(-2.0, 2.0)(rng); }

// For a [A, B, C] input and a set of reduced axes, the float64 reference of
// every output element: (sum, sum |x|, max, min, argmax, argmin, prod).
struct reference_row {
    double sum = 0, abs_sum = 0, prod = 1, max = -INFINITY, min = INFINITY;
    long long argmax = -1, argmin = -1, count = 0;
};

template <std::size_t A, std::size_t B, std::size_t C, class T>
std::vector<reference_row> reference(const Tensor<T, Shape<A, B, C>, Host>& x, std::array<bool, 3> reduced)
{
    const std::size_t extents[] = {A, B, C};
    std::size_t out_count = 1;
    for (int d = 0; d < 3; ++d) out_count *= reduced[d] ? 1 : extents[d];
    std::vector<reference_row> rows(out_count);
    for (std::size_t i = 0; i < A; ++i)
        for (std::size_t j = 0; j < B; ++j)
            for (std::size_t k = 0; k < C; ++k) {
                const std::size_t idx[] = {i, j, k};
                std::size_t out = 0, pos = 0;
                for (int d = 0; d < 3; ++d) {
                    if (!reduced[d]) out = out * extents[d] + idx[d];
                    else pos = pos * extents[d] + idx[d];
                }
                const double v = convert<f64>(x(i, j, k));
                reference_row& r = rows[out];
                r.sum += v;
                r.abs_sum += std::fabs(v);
                r.prod *= v;
                if (v > r.max) r.max = v, r.argmax = static_cast<long long>(pos);
                if (v < r.min) r.min = v, r.argmin = static_cast<long long>(pos);
                ++r.count;
            }
    return rows;
}

template <class T, class S, int... Axes>
void check_axes_in()
{
    Tensor<T, S, Host> x;
    testing::fill_random(x, 100 + sizeof...(Axes), &moderate);
    constexpr std::array<bool, 3> reduced = tenet::internal::reduction_axes<S, Axes...>::reduced;
    const auto want = reference(x, reduced);
    using Out = typename tenet::internal::reduction_axes<S, Axes...>::shape;
    Tensor<f32, Out, Host> s, m, mx, mn, n2;
    Tensor<i32, Out, Host> amax, amin;
    testing::poison(s);
    s = sum<Axes...>(x);
    m = mean<Axes...>(x);
    mx = max<Axes...>(x);
    mn = min<Axes...>(x);
    n2 = norm2<Axes...>(x);
    amax = argmax<Axes...>(x);
    amin = argmin<Axes...>(x);
    REQUIRE(want.size() == Out::numel);
    mismatch_log log;
    for (std::size_t o = 0; o < Out::numel; ++o) {
        const reference_row& r = want[o];
        const double bound = static_cast<double>(r.count) * 0x1p-23 * r.abs_sum + 1e-30;
        double sq = 0;
        (void)sq;
        if (std::fabs(s.data()[o] - r.sum) > bound) log.add("sum[%zu] %a vs %a", o, s.data()[o], r.sum);
        if (std::fabs(m.data()[o] - r.sum / r.count) > bound / r.count + 0x1p-23 * std::fabs(r.sum / r.count))
            log.add("mean[%zu]", o);
        if (mx.data()[o] != r.max || mn.data()[o] != r.min) log.add("max/min[%zu]", o);
        if (amax.data()[o] != r.argmax || amin.data()[o] != r.argmin)
            log.add("argmax/argmin[%zu] %d %d vs %lld %lld", o, amax.data()[o], amin.data()[o], r.argmax, r.argmin);
        (void)n2;
    }
    INFO(numeric_traits<T>::name, " axes count ", sizeof...(Axes));
    CHECK_NO_MISMATCH(log);
}

template <class T, int... Axes>
void check_axes()
{
    check_axes_in<T, Shape<6, 5, 70>, Axes...>();
}

}  // namespace

TEST_CASE_TEMPLATE("sum, mean, max, min, argmax, argmin over every choice of axes", T, f32, f16, bf16)
{
    check_axes<T, 2>();       // rows (innermost axis)
    check_axes<T, 0>();       // columns (outermost)
    check_axes<T, 1>();       // the middle
    check_axes<T, 0, 2>();    // two axes
    check_axes<T, -1, -2>();  // negative axes, the last two
    check_axes<T>();          // everything
}

TEST_CASE_TEMPLATE("a few long rows (column sums of a tall matrix) are walked side by side, in fixed blocks", T, f32, bf16)
{
    check_axes_in<T, Shape<4100, 3, 5>, 0>();      // 15 outputs of 4100 elements 15 apart
    check_axes_in<T, Shape<1300, 4, 6>, 0, 1>();   // 6 outputs of 5200
    check_axes_in<T, Shape<3, 5000, 2>, 1>();      // 6 outputs, a stride of 2 within each
    // leading axes reduced, the outputs side by side in memory: read in chunks
    check_axes_in<T, Shape<4100, 2, 16>, 0>();     // 32 outputs, chunks of 16
    check_axes_in<T, Shape<1300, 4, 8>, 0, 1>();   // 8 outputs, chunks of 8
    check_axes_in<T, Shape<4099, 3, 4>, 0>();      // 12 outputs, chunks of 4
}

TEST_CASE_TEMPLATE("a column reduction of a per-channel broadcast expression (BatchNorm's) matches float64", T, f32, bf16)
{
    using S = Shape<4100, 32>;
    Tensor<T, S, Host> x, d;
    Tensor<f32, Shape<32>, Host> mu, rstd;
    testing::fill_random(x, 41, &moderate);
    testing::fill_random(d, 42, &moderate);
    testing::fill_random(mu, 43, &moderate);
    testing::fill_random(rstd, 44, &moderate);
    Tensor<f32, Shape<32>, Host> dgamma, var;
    testing::poison(dgamma);
    testing::poison(var);
    dgamma = sum<0>(d * ((x - mu) * rstd));
    var = mean<0>(square(x - mu));
    for (std::size_t c = 0; c < 32; ++c) {
        double want = 0, scale = 0, want_var = 0;
        for (std::size_t r = 0; r < 4100; ++r) {
            const double centred = convert<f64>(x(r, c)) - mu(c);
            const double t = convert<f64>(d(r, c)) * (centred * rstd(c));
            want += t;
            scale += std::fabs(t);
            want_var += centred * centred;
        }
        want_var /= 4100;
        CHECK(std::fabs(dgamma(c) - want) <= 4100 * 4 * 0x1p-23 * scale);
        CHECK(std::fabs(var(c) - want_var) <= 4100 * 4 * 0x1p-23 * want_var);
    }
}

TEST_CASE("keepdims keeps reduced axes with extent 1")
{
    Tensor<f32, Shape<3, 4>, Host> x;
    x = iota<Shape<3, 4>>(0.0f, 1.0f);
    static_assert(std::is_same_v<decltype(sum<1>(x, keepdims))::shape, Shape<3, 1>>);
    static_assert(std::is_same_v<decltype(sum<1>(x))::shape, Shape<3>>);
    static_assert(std::is_same_v<decltype(sum(x))::shape, Shape<>>);
    Tensor<f32, Shape<3, 1>, Host> k = sum<1>(x, keepdims);
    CHECK(k(2, 0) == 8 + 9 + 10 + 11);
}

TEST_CASE("a reduction fuses its input expression")
{
    using S = Shape<9, 130>;
    Tensor<bf16, S, Host> x, y;
    testing::fill_random(x, 5, &moderate);
    testing::fill_random(y, 6, &moderate);
    Tensor<f32, Shape<9>, Host> s = sum<1>(exp(x - y));
    for (std::size_t i = 0; i < 9; ++i) {
        double want = 0, scale = 0;
        for (std::size_t j = 0; j < 130; ++j) {
            const double t = std::exp(convert<f64>(x(i, j)) - convert<f64>(y(i, j)));
            want += t;
            scale += t;
        }
        CHECK(std::fabs(s(i) - want) <= 130 * 4 * 0x1p-23 * scale);
    }
}

TEST_CASE("a reduction inside an expression is materialised once: softmax rows")
{
    using S = Shape<7, 300>;
    Tensor<f32, S, Host> x, p;
    testing::fill_random(x, 8, &moderate);
    const auto shifted = exp(x - max<1>(x, keepdims));
    p = shifted / sum<1>(shifted, keepdims);
    for (std::size_t i = 0; i < 7; ++i) {
        double m = -INFINITY, z = 0;
        for (std::size_t j = 0; j < 300; ++j) m = std::fmax(m, x(i, j));
        for (std::size_t j = 0; j < 300; ++j) z += std::exp(x(i, j) - m);
        for (std::size_t j = 0; j < 300; ++j) REQUIRE(std::fabs(p(i, j) - std::exp(x(i, j) - m) / z) < 1e-6);
    }
}

TEST_CASE("full reductions over many elements are blocked deterministically")
{
    using S = Shape<100003>;
    Tensor<f32, S, Host> x;
    testing::fill_random(x, 9, &moderate);
    Tensor<f32, Shape<>, Host> s = sum(x), n = norm2(x), p = prod(x * 0.0f + 1.0f);
    double want = 0, squares = 0, scale = 0;
    for (std::size_t i = 0; i < S::numel; ++i) {
        want += x(i);
        squares += static_cast<double>(x(i)) * x(i);
        scale += std::fabs(x(i));
    }
    CHECK(std::fabs(s() - want) <= 4096 * 0x1p-23 * scale);
    CHECK(std::fabs(n() - std::sqrt(squares)) <= 1e-4 * std::sqrt(squares));
    CHECK(p() == 1.0f);
    Tensor<f32, Shape<>, Host> again = sum(x);
    CHECK(again() == s());  // same blocks, same order: same bits
}

TEST_CASE("integer and bool reductions are exact")
{
    Tensor<i32, Shape<4, 1000>, Host> x;
    x = iota<Shape<4, 1000>>(-1000000, 977);
    Tensor<i32, Shape<4>, Host> s = sum<1>(x);
    for (std::size_t i = 0; i < 4; ++i) {
        long long want = 0;
        for (std::size_t j = 0; j < 1000; ++j) want += x(i, j);
        // accumulated in 64 bits, saturated to i32 at the end
        CHECK(s(i) == std::clamp<long long>(want, -2147483648LL, 2147483647LL));
    }
    CHECK(s(3) == 2147483647);  // this row's sum does not fit in i32
    Tensor<i32, Shape<>, Host> positives = sum(x > 0);  // bool sums count
    long long count = 0;
    for (std::size_t i = 0; i < 4000; ++i) count += x.data()[i] > 0;
    CHECK(positives() == count);
}

TEST_CASE("long rows: max, argmax and argmin find the first extreme or NaN whichever lane holds it")
{
    // rows of 1000 fold in 64 lanes and a tail of 40: ties and NaNs are put
    // in different lanes, in the same lane, and in the tail
    constexpr std::size_t n = 1000;
    const std::size_t first[] = {3, 70, 64, 500, 970, 6, 0};
    const std::size_t second[] = {900, 6 + 64, 128, 980, 999, 70, 998};
    constexpr std::size_t rows = std::size(first);
    Tensor<f32, Shape<rows, n>, Host> x;
    testing::fill_random(x, 16, &moderate);  // magnitudes below 5
    for (std::size_t r = 0; r < rows; ++r) {
        const bool with_nan = r % 2 == 1;
        x(r, first[r]) = x(r, second[r]) = with_nan ? NAN : 5.0f;
        if (!with_nan) x(r, (first[r] + 1) % n) = -5.0f, x(r, (second[r] + 1) % n) = -5.0f;
    }
    Tensor<f32, Shape<rows>, Host> m = max<1>(x), lo = min<1>(x);
    Tensor<i32, Shape<rows>, Host> am = argmax<1>(x), an = argmin<1>(x);
    for (std::size_t r = 0; r < rows; ++r) {
        CAPTURE(r);
        CHECK(static_cast<std::size_t>(am(r)) == first[r]);
        if (r % 2 == 1) {
            CHECK(std::isnan(m(r)));
            CHECK(std::isnan(lo(r)));
            CHECK(static_cast<std::size_t>(an(r)) == first[r]);
        } else {
            CHECK(m(r) == 5.0f);
            CHECK(lo(r) == -5.0f);
            CHECK(static_cast<std::size_t>(an(r)) == std::min((first[r] + 1) % n, (second[r] + 1) % n));
        }
    }
}

TEST_CASE("NaN propagates through max and min; argmax finds the first NaN, else the first maximum")
{
    Tensor<f32, Shape<2, 5>, Host> x;
    const float values[] = {1, 7, 3, 7, 2, 4, NAN, 9, NAN, 1};
    std::memcpy(x.data(), values, sizeof values);
    Tensor<f32, Shape<2>, Host> m = max<1>(x);
    Tensor<i32, Shape<2>, Host> am = argmax<1>(x), an = argmin<1>(x);
    CHECK(m(0) == 7.0f);
    CHECK(std::isnan(m(1)));
    CHECK(am(0) == 1);  // the first of the tied maxima
    CHECK(am(1) == 1);  // the first NaN
    CHECK(an(1) == 1);
    Tensor<f32, Shape<>, Host> s = sum(x);
    CHECK(std::isnan(s()));
}
