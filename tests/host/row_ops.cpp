// Row-wise NN ops on the host: every forward against float64 references on
// random inputs (f32, bf16, f16; rows of 1, 7, 16, 33, 64 and 1500 elements; rank 3;
// large magnitudes), every backward against central finite differences
// computed in float64 (the gradient of sum(r * f(x)), or of the loss), and the
// 16-bit backwards against their formulas evaluated in float64 on the stored
// inputs. Outputs are poisoned before every op.
#include "tensor_testing.hpp"

#include <tenet/io/safetensors.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

using namespace tenet;

namespace {

template <class S>
constexpr std::size_t row_length = S::extents[S::rank - 1];
template <class S>
constexpr std::size_t row_count = S::numel / row_length<S>;
template <class S>
using rows_of = detail::rowwise::rows_shape_t<S>;
template <class S>
using columns_of = Shape<row_length<S>>;

// f32, f64, and tenet's names for the 16-bit types, for INFO lines.
template <class T>
const char* type_name = numeric_traits<T>::name;

// offset + spread * N(0, 1), rounded to T.
template <class T, class S>
void fill_normal(Tensor<T, S, Host>& t, std::uint64_t seed, double offset = 0, double spread = 1)
{
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (std::size_t i = 0; i < S::numel; ++i) t.data()[i] = convert<T>(offset + spread * normal(rng));
}

template <class T, class S>
std::vector<double> values(const Tensor<T, S, Host>& t)
{
    std::vector<double> v(S::numel);
    for (std::size_t i = 0; i < S::numel; ++i) v[i] = convert<f64>(t.data()[i]);
    return v;
}

// ---------------------------------------------------------------- references

// softmax (or log_softmax) of every row of x, rows of n, in float64. NaN
// propagates through max; a row of -inf gives -inf - -inf = NaN.
std::vector<double> softmax_ref(const std::vector<double>& x, std::size_t n, bool log)
{
    std::vector<double> y(x.size());
    for (std::size_t base = 0; base < x.size(); base += n) {
        double m = -INFINITY;
        for (std::size_t j = 0; j < n; ++j) m = (std::isnan(x[base + j]) || x[base + j] > m) ? x[base + j] : m;
        double s = 0;
        for (std::size_t j = 0; j < n; ++j) s += std::exp(x[base + j] - m);
        for (std::size_t j = 0; j < n; ++j)
            y[base + j] = log ? (x[base + j] - m) - std::log(s) : std::exp(x[base + j] - m) / s;
    }
    return y;
}

struct layernorm_result {
    std::vector<double> y, mean, rstd;
};

layernorm_result layernorm_ref(const std::vector<double>& x, const std::vector<double>& gamma,
                               const std::vector<double>& beta, std::size_t n, double eps)
{
    layernorm_result r{std::vector<double>(x.size()), {}, {}};
    for (std::size_t base = 0; base < x.size(); base += n) {
        double mean = 0, var = 0;
        for (std::size_t j = 0; j < n; ++j) mean += x[base + j];
        mean /= static_cast<double>(n);
        for (std::size_t j = 0; j < n; ++j) var += (x[base + j] - mean) * (x[base + j] - mean);
        const double rstd = 1 / std::sqrt(var / static_cast<double>(n) + eps);
        for (std::size_t j = 0; j < n; ++j) r.y[base + j] = (x[base + j] - mean) * rstd * gamma[j] + beta[j];
        r.mean.push_back(mean);
        r.rstd.push_back(rstd);
    }
    return r;
}

// mean over valid rows of -log softmax(x)[label]; 0 without valid rows.
// Label smoothing e: each row's loss is (1 - e) of that plus e times the
// mean over its classes of -log softmax(x)[j] (PyTorch's definition).
double cross_entropy_ref(const std::vector<double>& x, const std::vector<int>& labels, const std::vector<bool>& valid,
                         std::size_t n, double e = 0)
{
    double sum = 0, count = 0;
    for (std::size_t r = 0; r < labels.size(); ++r) {
        if (!valid[r]) continue;
        const std::vector<double> row(x.begin() + static_cast<long>(r * n), x.begin() + static_cast<long>((r + 1) * n));
        const std::vector<double> logp = softmax_ref(row, n, true);
        double uniform = 0;
        for (const double l : logp) uniform -= l / static_cast<double>(n);
        sum += (1 - e) * -logp[static_cast<std::size_t>(labels[r])] + e * uniform;
        ++count;
    }
    return count > 0 ? sum / count : 0.0;
}

double mse_ref(const std::vector<double>& p, const std::vector<double>& t, const std::vector<bool>& valid,
               std::size_t n)
{
    double sum = 0, count = 0;
    for (std::size_t r = 0; r < valid.size(); ++r) {
        if (!valid[r]) continue;
        for (std::size_t j = 0; j < n; ++j) sum += (p[r * n + j] - t[r * n + j]) * (p[r * n + j] - t[r * n + j]);
        ++count;
    }
    return count > 0 ? sum / (count * static_cast<double>(n)) : 0.0;
}

double dot(const std::vector<double>& a, const std::vector<double>& b)
{
    double s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
}

// Central differences in float64 of a scalar function f of the vector x.
template <class F>
std::vector<double> central_differences(std::vector<double> x, F&& f)
{
    std::vector<double> g(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double xi = x[i], h = 1e-5 * std::max(1.0, std::fabs(xi));
        x[i] = xi + h;
        const double up = f(x);
        x[i] = xi - h;
        const double down = f(x);
        x[i] = xi;
        g[i] = (up - down) / (2 * h);
    }
    return g;
}

// ---------------------------------------------------------------- comparisons

template <class T>
void expect_close(mismatch_log& log, const char* what, std::size_t i, double got, double want, double scale,
                  testing::tolerance tol)
{
    if (!testing::close<T>(got, want, scale, tol)) log.add("%s[%zu]: got %.9g, want %.9g", what, i, got, want);
}

// Analytic gradient vs finite differences: |got - want| <= rel * (|want| + the
// largest |want|), for every element.
void expect_gradient(mismatch_log& log, const char* what, const std::vector<double>& got,
                     const std::vector<double>& want, double rel)
{
    double largest = 0;
    for (double w : want) largest = std::max(largest, std::fabs(w));
    for (std::size_t i = 0; i < want.size(); ++i)
        if (!(std::fabs(got[i] - want[i]) <= rel * (std::fabs(want[i]) + largest)))
            log.add("%s[%zu]: got %.12g, finite differences %.12g", what, i, got[i], want[i]);
}

// How closely an analytic gradient in T matches float64 finite differences:
// f64 is limited by the differences themselves; f32 by rows of n values.
template <class T>
double gradient_tolerance(std::size_t n)
{
    if constexpr (std::is_same_v<T, f64>) return 1e-7;
    else return (16.0 + 2.0 * static_cast<double>(n)) * 0x1p-23;
}

// f32 ulps allowed for a sum over n terms.
double sum_ulps(std::size_t n) { return 8.0 + static_cast<double>(n) / 2; }

// ------------------------------------------------------------------ softmax

template <class T, class S>
void check_softmax_forward(std::uint64_t seed, double offset, double spread)
{
    constexpr std::size_t n = row_length<S>;
    Tensor<T, S, Host> x, y, ly;
    fill_normal(x, seed, offset, spread);
    testing::poison(y);
    testing::poison(ly);
    y = softmax(x);
    ly = log_softmax(x);
    const auto xs = values(x);
    const auto want = softmax_ref(xs, n, false), log_want = softmax_ref(xs, n, true);
    mismatch_log log;
    for (std::size_t base = 0; base < S::numel; base += n) {
        const auto row = xs.begin() + static_cast<long>(base);
        const double m = *std::max_element(row, row + static_cast<long>(n));
        for (std::size_t i = base; i < base + n; ++i) {
            // log_softmax = (x - max) - log(sum): its error scales with both terms
            const double log_sum = (xs[i] - m) - log_want[i];
            const double scale = std::fabs(xs[i] - m) + std::fabs(log_sum) + 1;
            expect_close<T>(log, "softmax", i, convert<f64>(y.data()[i]), want[i], 1.0, {sum_ulps(n), 4});
            expect_close<T>(log, "log_softmax", i, convert<f64>(ly.data()[i]), log_want[i], scale, {4, sum_ulps(n)});
        }
    }
    INFO(type_name<T>, " rows of ", n, ", offset ", offset, ", spread ", spread);
    CHECK_NO_MISMATCH(log);
}

template <class T>
void check_softmax_shapes(double offset, double spread)
{
    check_softmax_forward<T, Shape<4, 1>>(1, offset, spread);
    check_softmax_forward<T, Shape<5, 7>>(2, offset, spread);
    check_softmax_forward<T, Shape<6, 33>>(3, offset, spread);
    check_softmax_forward<T, Shape<3, 1500>>(4, offset, spread);
    check_softmax_forward<T, Shape<9, 16>>(7, offset, spread);  // rows in chunks of 16 (f16: written in chunks)
    check_softmax_forward<T, Shape<2, 4, 64>>(8, offset, spread);
    check_softmax_forward<T, Shape<2, 3, 33>>(5, offset, spread);
    check_softmax_forward<T, Shape<33>>(6, offset, spread);
}

// Backward of softmax (Log: log_softmax): the analytic result with dy = r
// against finite differences of sum(r * f(x)) in float64.
template <bool Log, class T, class S>
void check_softmax_gradient(std::uint64_t seed)
{
    constexpr std::size_t n = row_length<S>;
    Tensor<T, S, Host> x, r, y, dx;
    fill_normal(x, seed, 0, 2);
    fill_normal(r, seed + 100);
    testing::poison(y);
    testing::poison(dx);
    if constexpr (Log) {
        y = log_softmax(x);
        log_softmax_backward(dx, r, y);
    } else {
        y = softmax(x);
        softmax_backward(dx, r, y);
    }
    const auto rs = values(r);
    const auto want = central_differences(values(x), [&](const std::vector<double>& v) {
        return dot(rs, softmax_ref(v, n, Log));
    });
    mismatch_log log;
    expect_gradient(log, Log ? "log_softmax dx" : "softmax dx", values(dx), want, gradient_tolerance<T>(n));
    INFO(type_name<T>, " rows of ", n);
    CHECK_NO_MISMATCH(log);
}

// 16-bit storage: the backward against its formula in float64 on the stored
// dy and y (f32 accumulation, one rounding at the store).
template <bool Log, class T, class S>
void check_softmax_backward_formula(std::uint64_t seed)
{
    constexpr std::size_t n = row_length<S>;
    Tensor<T, S, Host> x, dy, y, dx;
    fill_normal(x, seed, 0, 2);
    fill_normal(dy, seed + 1);
    testing::poison(y);
    testing::poison(dx);
    if constexpr (Log) {
        y = log_softmax(x);
        log_softmax_backward(dx, dy, y);
    } else {
        y = softmax(x);
        softmax_backward(dx, dy, y);
    }
    const auto g = values(dy), v = values(y);
    mismatch_log log;
    for (std::size_t base = 0; base < S::numel; base += n) {
        double s = 0, magnitude = 0;
        for (std::size_t j = 0; j < n; ++j) {
            s += Log ? g[base + j] : g[base + j] * v[base + j];
            magnitude += Log ? std::fabs(g[base + j]) : std::fabs(g[base + j] * v[base + j]);
        }
        for (std::size_t j = 0; j < n; ++j) {
            const std::size_t i = base + j;
            const double p = Log ? std::exp(v[i]) : v[i];
            const double want = Log ? g[i] - p * s : v[i] * (g[i] - s);
            const double scale = Log ? std::fabs(g[i]) + p * magnitude : v[i] * (std::fabs(g[i]) + magnitude);
            expect_close<T>(log, "dx", i, convert<f64>(dx.data()[i]), want, scale, {4, sum_ulps(n)});
        }
    }
    INFO(type_name<T>, Log ? " log_softmax" : " softmax", " rows of ", n);
    CHECK_NO_MISMATCH(log);
}

}  // namespace

TEST_CASE_TEMPLATE("softmax and log_softmax match float64 over the last axis", T, f32, bf16, f16)
{
    check_softmax_shapes<T>(0, 2);
    check_softmax_shapes<T>(1e4, 3);  // a large common offset: needs the max subtracted
    check_softmax_shapes<T>(0, 1e4);  // logits ~ 1e4: nearly one-hot rows, exp would overflow
}

TEST_CASE("softmax: NaN spreads to its row; rows of -inf or with +inf are NaN, as in PyTorch")
{
    Tensor<f32, Shape<5, 4>, Host> x, y, ly;
    const float inf = INFINITY, nan = NAN;
    const float rows[5][4] = {
        {1, 2, 3, 4}, {1, nan, 3, 4}, {-inf, -inf, -inf, -inf}, {1, inf, 3, 4}, {0, -inf, 1, -inf}};
    for (int r = 0; r < 5; ++r)
        for (int j = 0; j < 4; ++j) x(r, j) = rows[r][j];
    testing::poison(y);
    testing::poison(ly);
    y = softmax(x);
    ly = log_softmax(x);
    for (int j = 0; j < 4; ++j) {
        CHECK(std::isfinite(y(0, j)));
        for (int r = 1; r <= 3; ++r) {
            CHECK(std::isnan(y(r, j)));
            CHECK(std::isnan(ly(r, j)));
        }
    }
    // -inf entries of an otherwise finite row: probability 0, log-probability -inf
    CHECK(y(4, 1) == 0.0f);
    CHECK(ly(4, 3) == -inf);
    CHECK(std::fabs(y(4, 0) + y(4, 2) - 1.0f) < 1e-6f);
}

TEST_CASE("softmax: a NaN or +inf anywhere in a long row makes the row NaN; -inf entries give 0")
{
    // rows of 1000: the host folds them in 64 lanes and a tail of 40; the
    // special values sit in different lanes and in the tail
    constexpr std::size_t n = 1000;
    Tensor<f32, Shape<6, n>, Host> x, y, ly;
    fill_normal(x, 13, 0, 2);
    const std::size_t nan_at[] = {0, 63, 64, 517, 960, 999};
    for (std::size_t r = 0; r < 5; ++r) x(r, nan_at[r + 1]) = r % 2 == 0 ? NAN : INFINITY;
    for (std::size_t j = 0; j < n; j += 7) x(5, j) = -INFINITY;
    testing::poison(y);
    testing::poison(ly);
    y = softmax(x);
    ly = log_softmax(x);
    for (std::size_t r = 0; r < 5; ++r)
        for (std::size_t j = 0; j < n; ++j) {
            CHECK(std::isnan(y(r, j)));
            CHECK(std::isnan(ly(r, j)));
        }
    double total = 0;
    for (std::size_t j = 0; j < n; ++j) {
        CHECK((j % 7 == 0 ? y(5, j) == 0.0f && ly(5, j) == -INFINITY : std::isfinite(ly(5, j))));
        total += y(5, j);
    }
    CHECK(std::fabs(total - 1) < 1e-5);
}

TEST_CASE("softmax of an expression with a per-column operand, long rows: matches float64")
{
    // x + bias reads the bias in chunks on the host; rows of 1040 = 16 x 65
    constexpr std::size_t n = 1040;
    using S = Shape<3, n>;
    Tensor<f32, S, Host> x, y;
    Tensor<f32, Shape<n>, Host> bias;
    fill_normal(x, 14, 0, 3);
    fill_normal(bias, 15, 0, 3);
    std::vector<double> shifted = values(x);
    for (std::size_t i = 0; i < S::numel; ++i) shifted[i] += bias.data()[i % n];
    const auto want = softmax_ref(shifted, n, false);
    testing::poison(y);
    y = softmax(x + bias);
    mismatch_log log;
    for (std::size_t i = 0; i < S::numel; ++i)
        expect_close<f32>(log, "softmax(x + bias)", i, y.data()[i], want[i], 1, {sum_ulps(n), 4});
    CHECK_NO_MISMATCH(log);
}

TEST_CASE("softmax is lazy: fused with its input, materialised inside larger expressions, in place, on views")
{
    using S = Shape<6, 33>;
    Tensor<f32, S, Host> x, y, z;
    fill_normal(x, 11, 0, 3);
    std::vector<double> half = values(x);
    for (double& v : half) v *= 0.5;
    const auto want_half = softmax_ref(half, 33, false);
    const auto want = softmax_ref(values(x), 33, false);
    const auto want_log = softmax_ref(values(x), 33, true);
    mismatch_log log;

    testing::poison(y);
    y = softmax(x * 0.5f);  // the input expression is evaluated inside the op
    for (std::size_t i = 0; i < S::numel; ++i)
        expect_close<f32>(log, "softmax(x * 0.5)", i, y.data()[i], want_half[i], 1, {32, 4});

    testing::poison(z);
    z = softmax(x) * 2.0f + log_softmax(x);  // each materialised once, then one elementwise pass
    for (std::size_t i = 0; i < S::numel; ++i)
        expect_close<f32>(log, "2 softmax + log_softmax", i, z.data()[i], 2 * want[i] + want_log[i],
                          std::fabs(want_log[i]) + 2, {32, 32});

    Tensor<f32, S, Host> inplace;
    copy(inplace, x);
    inplace = softmax(inplace);  // same layout: each element is read before it is written
    for (std::size_t i = 0; i < S::numel; ++i)
        expect_close<f32>(log, "in place", i, inplace.data()[i], want[i], 1, {32, 4});

    Tensor<f32, Shape<33, 6>, Host> xt;
    xt = transpose(x);
    testing::poison(y);
    y = softmax(transpose(xt));  // a strided input
    for (std::size_t i = 0; i < S::numel; ++i)
        expect_close<f32>(log, "transposed input", i, y.data()[i], want[i], 1, {32, 4});

    Tensor<f32, Shape<8, 33>, Host> big;
    testing::poison(big);
    slice<0, 1, 7>(big) = softmax(x);  // into a view: rows 1..6 written, 0 and 7 untouched
    for (std::size_t i = 0; i < S::numel; ++i)
        expect_close<f32>(log, "into a slice", i, big.data()[33 + i], want[i], 1, {32, 4});
    std::uint32_t first_bits = 0, last_bits = 0;
    std::memcpy(&first_bits, &big.data()[0], 4);
    std::memcpy(&last_bits, &big.data()[7 * 33 + 32], 4);
    CHECK(first_bits == 0xA5A5A5A5u);
    CHECK(last_bits == 0xA5A5A5A5u);
    CHECK_NO_MISMATCH(log);

    Tensor<f32, Shape<5, 5>, Host> square;
    fill_normal(square, 12);
    CHECK_THROWS_AS(square = softmax(transpose(square)), aliasing_error);
}

TEST_CASE_TEMPLATE("softmax and log_softmax backwards match central finite differences", T, f64, f32)
{
    check_softmax_gradient<false, T, Shape<4, 1>>(20);
    check_softmax_gradient<false, T, Shape<5, 7>>(21);
    check_softmax_gradient<false, T, Shape<3, 33>>(22);
    check_softmax_gradient<false, T, Shape<2, 3, 5>>(23);
    check_softmax_gradient<true, T, Shape<4, 1>>(24);
    check_softmax_gradient<true, T, Shape<5, 7>>(25);
    check_softmax_gradient<true, T, Shape<3, 33>>(26);
    check_softmax_gradient<true, T, Shape<2, 3, 5>>(27);
}

TEST_CASE_TEMPLATE("softmax and log_softmax backwards match their float64 formulas", T, f32, bf16, f16)
{
    check_softmax_backward_formula<false, T, Shape<5, 7>>(30);
    check_softmax_backward_formula<false, T, Shape<3, 1500>>(31);
    check_softmax_backward_formula<false, T, Shape<2, 3, 33>>(32);
    check_softmax_backward_formula<true, T, Shape<5, 7>>(33);
    check_softmax_backward_formula<true, T, Shape<3, 1500>>(34);
    check_softmax_backward_formula<true, T, Shape<2, 3, 33>>(35);
    check_softmax_backward_formula<false, T, Shape<9, 16>>(36);
    check_softmax_backward_formula<true, T, Shape<9, 16>>(37);
}

// ---------------------------------------------------------------- layernorm

namespace {

template <class T, class S>
void check_layernorm_forward(std::uint64_t seed, double offset, double spread)
{
    constexpr std::size_t n = row_length<S>, rows = row_count<S>;
    constexpr float eps = 1e-5f;
    Tensor<T, S, Host> x, y;
    Tensor<T, columns_of<S>, Host> gamma, beta;
    Tensor<f32, rows_of<S>, Host> mean, rstd;
    fill_normal(x, seed, offset, spread);
    fill_normal(gamma, seed + 1, 1, 0.5);
    fill_normal(beta, seed + 2, 0, 0.5);
    testing::poison(y);
    testing::poison(mean);
    testing::poison(rstd);
    layernorm_forward(y, mean, rstd, x, gamma, beta, eps);
    const auto g = values(gamma), b = values(beta);
    const auto want = layernorm_ref(values(x), g, b, n, eps);
    mismatch_log log;
    for (std::size_t r = 0; r < rows; ++r) {
        const double deviation = 1 / want.rstd[r];
        expect_close<f32>(log, "mean", r, mean.data()[r], want.mean[r], std::fabs(want.mean[r]) + deviation,
                          {4, sum_ulps(n)});
        expect_close<f32>(log, "rstd", r, rstd.data()[r], want.rstd[r], 0, {4 * sum_ulps(n), 0});
        for (std::size_t j = 0; j < n; ++j) {
            const std::size_t i = r * n + j;
            const double xhat = (convert<f64>(x.data()[i]) - want.mean[r]) * want.rstd[r];
            const double scale = (std::fabs(xhat) + 1) * std::fabs(g[j]) + std::fabs(b[j]);
            expect_close<T>(log, "y", i, convert<f64>(y.data()[i]), want.y[i], scale, {4, 4 * sum_ulps(n)});
        }
    }
    INFO(type_name<T>, " rows of ", n, ", offset ", offset, ", spread ", spread);
    CHECK_NO_MISMATCH(log);
}

template <class T>
void check_layernorm_shapes(double offset, double spread)
{
    check_layernorm_forward<T, Shape<4, 1>>(40, offset, spread);
    check_layernorm_forward<T, Shape<5, 7>>(41, offset, spread);
    check_layernorm_forward<T, Shape<6, 33>>(42, offset, spread);
    check_layernorm_forward<T, Shape<3, 1500>>(43, offset, spread);
    check_layernorm_forward<T, Shape<3, 1040>>(45, offset, spread);  // gamma and beta read in chunks of 16
    check_layernorm_forward<T, Shape<2, 3, 33>>(44, offset, spread);
}

// dx, dgamma, dbeta with dy = r against finite differences of
// sum(r * layernorm(x; gamma, beta)) with respect to x, gamma and beta.
template <class T, class S>
void check_layernorm_gradient(std::uint64_t seed)
{
    constexpr std::size_t n = row_length<S>;
    constexpr float eps = 1e-5f;
    using C = columns_of<S>;
    Tensor<T, S, Host> x, r, y, dx;
    Tensor<T, C, Host> gamma, beta, dgamma, dbeta;
    Tensor<T, rows_of<S>, Host> mean, rstd;  // saved in T (f64 keeps the test exact)
    fill_normal(x, seed, 0.5, 2);
    fill_normal(r, seed + 1);
    fill_normal(gamma, seed + 2, 1, 0.5);
    fill_normal(beta, seed + 3, 0, 0.5);
    testing::poison(y);
    testing::poison(dx);
    testing::poison(dgamma);
    testing::poison(dbeta);
    layernorm_forward(y, mean, rstd, x, gamma, beta, eps);
    layernorm_backward(dx, dgamma, dbeta, r, x, mean, rstd, gamma);
    const auto xs = values(x), rs = values(r), g = values(gamma), b = values(beta);
    const auto loss_x = [&](const std::vector<double>& v) { return dot(rs, layernorm_ref(v, g, b, n, eps).y); };
    const auto loss_g = [&](const std::vector<double>& v) { return dot(rs, layernorm_ref(xs, v, b, n, eps).y); };
    const auto loss_b = [&](const std::vector<double>& v) { return dot(rs, layernorm_ref(xs, g, v, n, eps).y); };
    mismatch_log log;
    const double tol = gradient_tolerance<T>(n) * 4;
    expect_gradient(log, "dx", values(dx), central_differences(xs, loss_x), tol);
    expect_gradient(log, "dgamma", values(dgamma), central_differences(g, loss_g), tol);
    expect_gradient(log, "dbeta", values(dbeta), central_differences(b, loss_b), tol);
    INFO(type_name<T>, " rows of ", n);
    CHECK_NO_MISMATCH(log);
}

// 16-bit storage: the backward against its formula in float64 on the stored
// dy, x, gamma and saved mean/rstd; dgamma and dbeta in f32.
template <class T, class S>
void check_layernorm_backward_formula(std::uint64_t seed)
{
    constexpr std::size_t n = row_length<S>, rows = row_count<S>;
    using C = columns_of<S>;
    Tensor<T, S, Host> x, dy, y, dx;
    Tensor<T, C, Host> gamma, beta;
    Tensor<f32, C, Host> dgamma, dbeta;
    Tensor<f32, rows_of<S>, Host> mean, rstd;
    fill_normal(x, seed, 1, 2);
    fill_normal(dy, seed + 1);
    fill_normal(gamma, seed + 2, 1, 0.5);
    fill_normal(beta, seed + 3, 0, 0.5);
    testing::poison(dx);
    testing::poison(dgamma);
    testing::poison(dbeta);
    layernorm_forward(y, mean, rstd, x, gamma, beta);
    layernorm_backward(dx, dgamma, dbeta, dy, x, mean, rstd, gamma);
    const auto xs = values(x), g = values(dy), w = values(gamma);
    std::vector<double> want_dg(n, 0), want_db(n, 0), scale_dg(n, 0), scale_db(n, 0);
    mismatch_log log;
    for (std::size_t r = 0; r < rows; ++r) {
        const double m = mean.data()[r], s = rstd.data()[r];
        double sum_g = 0, sum_gx = 0, magnitude = 0;
        for (std::size_t j = 0; j < n; ++j) {
            const double xhat = (xs[r * n + j] - m) * s, gj = g[r * n + j] * w[j];
            sum_g += gj;
            sum_gx += gj * xhat;
            magnitude += std::fabs(gj) * (1 + std::fabs(xhat));
            want_dg[j] += g[r * n + j] * xhat;
            want_db[j] += g[r * n + j];
            scale_dg[j] += std::fabs(g[r * n + j] * xhat);
            scale_db[j] += std::fabs(g[r * n + j]);
        }
        for (std::size_t j = 0; j < n; ++j) {
            const std::size_t i = r * n + j;
            const double xhat = (xs[i] - m) * s;
            const double want = s * (g[i] * w[j] - sum_g / n - xhat * sum_gx / n);
            const double scale = s * (std::fabs(g[i] * w[j]) + (1 + std::fabs(xhat)) * magnitude / n);
            expect_close<T>(log, "dx", i, convert<f64>(dx.data()[i]), want, scale, {4, 2 * sum_ulps(n)});
        }
    }
    for (std::size_t j = 0; j < n; ++j) {
        expect_close<f32>(log, "dgamma", j, dgamma.data()[j], want_dg[j], scale_dg[j], {4, sum_ulps(rows)});
        expect_close<f32>(log, "dbeta", j, dbeta.data()[j], want_db[j], scale_db[j], {4, sum_ulps(rows)});
    }
    INFO(type_name<T>, " rows of ", n);
    CHECK_NO_MISMATCH(log);
}

}  // namespace

TEST_CASE_TEMPLATE("layernorm forward matches float64: y, mean, rstd (biased variance)", T, f32, bf16, f16)
{
    check_layernorm_shapes<T>(0, 1);
    check_layernorm_shapes<T>(100, 0.01);  // a large common offset: the variance must not cancel
    if constexpr (std::is_same_v<T, f32>) check_layernorm_shapes<T>(1e4, 1);
}

TEST_CASE_TEMPLATE("layernorm backward matches central finite differences (dx, dgamma, dbeta)", T, f64, f32)
{
    check_layernorm_gradient<T, Shape<3, 1>>(50);
    check_layernorm_gradient<T, Shape<5, 7>>(51);
    check_layernorm_gradient<T, Shape<4, 33>>(52);
    check_layernorm_gradient<T, Shape<2, 3, 8>>(53);
}

TEST_CASE_TEMPLATE("layernorm backward matches its float64 formula", T, f32, bf16, f16)
{
    check_layernorm_backward_formula<T, Shape<5, 7>>(60);
    check_layernorm_backward_formula<T, Shape<40, 33>>(61);  // more rows than the host's column blocks
    check_layernorm_backward_formula<T, Shape<3, 1500>>(62);
    check_layernorm_backward_formula<T, Shape<3, 1040>>(64);
    check_layernorm_backward_formula<T, Shape<2, 3, 33>>(63);
}

TEST_CASE("layernorm: expressions as inputs, deterministic column sums, eps")
{
    using S = Shape<70, 20>;
    Tensor<bf16, S, Host> x, dy, y, dx1, dx2;
    Tensor<f32, Shape<20>, Host> gamma, beta, dg1, db1, dg2, db2;
    Tensor<f32, Shape<70>, Host> mean, rstd;
    fill_normal(x, 70);
    fill_normal(dy, 71);
    fill_normal(gamma, 72, 1, 0.2);
    fill_normal(beta, 73);
    layernorm_forward(y, mean, rstd, x * 2.0f + 1.0f, gamma + 0.5f, beta * 0.0f, 0.25f);
    std::vector<double> xs = values(x);
    for (double& v : xs) v = v * 2 + 1;
    std::vector<double> g = values(gamma), zero(20, 0.0);
    for (double& v : g) v += 0.5;
    const auto want = layernorm_ref(xs, g, zero, 20, 0.25);
    mismatch_log log;
    for (std::size_t i = 0; i < S::numel; ++i)
        expect_close<bf16>(log, "y", i, convert<f64>(y.data()[i]), want.y[i], 4, {4, 64});
    CHECK_NO_MISMATCH(log);
    layernorm_backward(dx1, dg1, db1, dy, x, mean, rstd, gamma);
    layernorm_backward(dx2, dg2, db2, dy, x, mean, rstd, gamma);
    CHECK(std::memcmp(dg1.data(), dg2.data(), sizeof(f32) * 20) == 0);
    CHECK(std::memcmp(db1.data(), db2.data(), sizeof(f32) * 20) == 0);
    CHECK(std::memcmp(dx1.data(), dx2.data(), sizeof(bf16) * S::numel) == 0);
}

// ------------------------------------------------------------ cross-entropy

namespace {

// Labels in range, and every `padding`-th row invalid with garbage in it
// (NaN logits, an out-of-range label) that must not matter.
template <class S>
struct labelled_batch {
    static constexpr std::size_t n = row_length<S>, rows = row_count<S>;
    Tensor<i32, rows_of<S>, Host> labels;
    Tensor<bool, rows_of<S>, Host> valid;
    std::vector<int> label_list;
    std::vector<bool> valid_list;

    labelled_batch(std::uint64_t seed, std::size_t padding)
    {
        std::mt19937_64 rng(seed);
        for (std::size_t r = 0; r < rows; ++r) {
            const bool ok = padding == 0 || r % padding != padding - 1;
            const int label = ok ? static_cast<int>(rng() % n) : -5;
            labels.data()[r] = label;
            valid.data()[r] = ok;
            label_list.push_back(label);
            valid_list.push_back(ok);
        }
    }

    // NaN in every padding row's logits
    template <class T>
    void spoil(Tensor<T, S, Host>& x) const
    {
        for (std::size_t r = 0; r < rows; ++r)
            if (!valid_list[r]) x.data()[r * n + r % n] = convert<T>(NAN);
    }
};

template <class T, class S>
void check_cross_entropy_forward(std::uint64_t seed, double offset, double spread, float smoothing = 0)
{
    constexpr std::size_t n = row_length<S>;
    labelled_batch<S> batch(seed, 3);
    Tensor<T, S, Host> x, probs;
    Tensor<f32, Shape<>, Host> loss;
    fill_normal(x, seed, offset, spread);
    batch.spoil(x);
    testing::poison(probs);
    testing::poison(loss);
    cross_entropy_forward(loss, probs, x, batch.labels, batch.valid, label_smoothing{smoothing});
    const auto xs = values(x);
    const double want = cross_entropy_ref(xs, batch.label_list, batch.valid_list, n, smoothing);
    const auto want_probs = softmax_ref(xs, n, false);
    mismatch_log log;
    expect_close<f32>(log, "loss", 0, loss.data()[0], want, std::fabs(want) + 1, {4, 2 * sum_ulps(n)});
    for (std::size_t i = 0; i < S::numel; ++i)
        expect_close<T>(log, "probs", i, convert<f64>(probs.data()[i]), want_probs[i], 1, {sum_ulps(n), 4});
    INFO(type_name<T>, " rows of ", n, ", offset ", offset, ", spread ", spread, ", label smoothing ", smoothing);
    CHECK(std::isfinite(loss.data()[0]));
    CHECK_NO_MISMATCH(log);
}

template <class T>
void check_cross_entropy_shapes(double offset, double spread, float smoothing = 0)
{
    check_cross_entropy_forward<T, Shape<4, 1>>(80, offset, spread, smoothing);
    check_cross_entropy_forward<T, Shape<9, 7>>(81, offset, spread, smoothing);
    check_cross_entropy_forward<T, Shape<6, 33>>(82, offset, spread, smoothing);
    check_cross_entropy_forward<T, Shape<4, 1500>>(83, offset, spread, smoothing);
    check_cross_entropy_forward<T, Shape<6, 32>>(85, offset, spread, smoothing);
    check_cross_entropy_forward<T, Shape<2, 3, 10>>(84, offset, spread, smoothing);
}

// dlogits (with scale s) against s * finite differences of the loss; padding
// rows' gradients exactly 0.
template <class T, class S, class Scale>
void check_cross_entropy_gradient(std::uint64_t seed, const Scale& scale, double s, float smoothing = 0)
{
    constexpr std::size_t n = row_length<S>;
    labelled_batch<S> batch(seed, 3);
    Tensor<T, S, Host> x, probs, dx;
    Tensor<f32, Shape<>, Host> loss;
    fill_normal(x, seed, 0, 2);
    testing::poison(dx);
    cross_entropy_forward(loss, probs, x, batch.labels, batch.valid, label_smoothing{smoothing});
    cross_entropy_backward(dx, probs, batch.labels, batch.valid, scale, label_smoothing{smoothing});
    auto want = central_differences(values(x), [&](const std::vector<double>& v) {
        return cross_entropy_ref(v, batch.label_list, batch.valid_list, n, smoothing);
    });
    for (double& w : want) w *= s;
    mismatch_log log;
    expect_gradient(log, "dlogits", values(dx), want, gradient_tolerance<T>(n));
    for (std::size_t i = 0; i < S::numel; ++i)
        if (!batch.valid_list[i / n] && dx.data()[i] != T(0)) log.add("padding dlogits[%zu] not 0", i);
    INFO(type_name<T>, " rows of ", n, ", scale ", s, ", label smoothing ", smoothing);
    CHECK_NO_MISMATCH(log);
}

// 16-bit: dlogits against the formula on the stored probabilities.
template <class T, class S>
void check_cross_entropy_backward_formula(std::uint64_t seed)
{
    constexpr std::size_t n = row_length<S>, rows = row_count<S>;
    labelled_batch<S> batch(seed, 4);
    Tensor<T, S, Host> x, probs, dx;
    Tensor<f32, Shape<>, Host> loss;
    fill_normal(x, seed, 0, 3);
    batch.spoil(x);
    testing::poison(dx);
    cross_entropy_forward(loss, probs, x, batch.labels, batch.valid);
    cross_entropy_backward(dx, probs, batch.labels, batch.valid, 0.75f);
    const auto p = values(probs);
    double count = 0;
    for (bool v : batch.valid_list) count += v;
    mismatch_log log;
    for (std::size_t i = 0; i < S::numel; ++i) {
        const std::size_t r = i / n;
        const double hot = batch.valid_list[r] && static_cast<std::size_t>(batch.label_list[r]) == i % n ? 1 : 0;
        const double want = batch.valid_list[r] ? 0.75 / count * (p[i] - hot) : 0.0;
        expect_close<T>(log, "dlogits", i, convert<f64>(dx.data()[i]), want, std::fabs(want), {4, 0});
    }
    INFO(type_name<T>, " rows of ", n, ", ", rows, " rows");
    CHECK_NO_MISMATCH(log);
}

}  // namespace

TEST_CASE_TEMPLATE("cross-entropy forward matches float64, padding rows ignored", T, f32, bf16, f16)
{
    check_cross_entropy_shapes<T>(0, 2);
    check_cross_entropy_shapes<T>(1e4, 3);
    check_cross_entropy_shapes<T>(0, 1e4);
}

TEST_CASE_TEMPLATE("cross-entropy backward matches central finite differences", T, f64, f32)
{
    Tensor<f32, Shape<>, Host> scale;
    scale.data()[0] = 0.25f;
    check_cross_entropy_gradient<T, Shape<9, 7>>(90, 1.0f, 1.0);
    check_cross_entropy_gradient<T, Shape<6, 33>>(91, 3.0, 3.0);
    check_cross_entropy_gradient<T, Shape<4, 1>>(92, 1.0f, 1.0);
    check_cross_entropy_gradient<T, Shape<2, 3, 10>>(93, scale, 0.25);  // scale read from a rank-0 tensor
    check_cross_entropy_gradient<T, Shape<6, 33>>(94, scale * 2.0f, 0.5);  // ... or expression
}

TEST_CASE_TEMPLATE("cross-entropy with label smoothing matches float64 and finite differences", T, f32, bf16, f16)
{
    for (const float e : {0.1f, 0.37f, 1.0f}) {
        check_cross_entropy_shapes<T>(0, 2, e);
        check_cross_entropy_shapes<T>(1e4, 3, e);  // the class mean relative to the max keeps its digits
        check_cross_entropy_shapes<T>(0, 1e4, e);
    }
    if constexpr (std::is_same_v<T, f32>) {
        for (const float e : {0.1f, 0.6f, 1.0f}) {
            check_cross_entropy_gradient<f32, Shape<9, 7>>(95, 1.0f, 1.0, e);
            check_cross_entropy_gradient<f64, Shape<6, 33>>(96, 2.0f, 2.0, e);
            check_cross_entropy_gradient<f64, Shape<2, 3, 10>>(97, 1.0f, 1.0, e);
        }
    }
}

TEST_CASE("cross-entropy: label smoothing 0 is the plain loss bit for bit; outside [0, 1] it throws")
{
    using S = Shape<6, 33>;
    labelled_batch<S> batch(98, 3);
    Tensor<f32, S, Host> x, probs, dx, plain_dx;
    Tensor<f32, Shape<>, Host> loss, plain_loss;
    fill_normal(x, 98, 0, 2);
    cross_entropy_forward(plain_loss, probs, x, batch.labels, batch.valid);
    cross_entropy_backward(plain_dx, probs, batch.labels, batch.valid, 1.0f);
    cross_entropy_forward(loss, probs, x, batch.labels, batch.valid, label_smoothing{0.0f});
    cross_entropy_backward(dx, probs, batch.labels, batch.valid, 1.0f, label_smoothing{0.0f});
    CHECK(std::memcmp(loss.data(), plain_loss.data(), sizeof(f32)) == 0);
    CHECK(std::memcmp(dx.data(), plain_dx.data(), sizeof(f32) * S::numel) == 0);
    testing::poison(loss);
    f32 before;
    std::memcpy(&before, loss.data(), sizeof before);
    for (const float bad : {-0.01f, 1.5f, NAN}) {
        CHECK_THROWS_AS(cross_entropy_forward(loss, probs, x, batch.labels, batch.valid, label_smoothing{bad}), error);
        CHECK_THROWS_AS(cross_entropy_backward(dx, probs, batch.labels, batch.valid, 1.0f, label_smoothing{bad}),
                        error);
        using bound = train::softmax_cross_entropy::bound<fp32, S, Host>;
        CHECK_THROWS_AS(bound(train::softmax_cross_entropy{bad}), error);
    }
    CHECK(std::memcmp(&before, loss.data(), sizeof(f32)) == 0);  // nothing written
}

TEST_CASE("cross-entropy with label smoothing matches PyTorch (fixture)")
{
    // tests/fixtures/pytorch/make_recipes_fixture.py: CrossEntropyLoss(
    // label_smoothing=0.2, ignore_index=-100), rows 2 and 5 ignored (padding).
    using S = Shape<6, 7>;
    const std::string path = std::string(TENET_TEST_FIXTURES) + "/pytorch/recipes.safetensors";
    Tensor<f32, S, Host> logits, probs, dlogits, want_grad;
    Tensor<i32, Shape<6>, Host> labels;
    Tensor<bool, Shape<6>, Host> valid;
    Tensor<f32, Shape<>, Host> loss, want_loss;
    io::load_tensor(path, "ls.logits", logits.data(), std::vector<std::size_t>{6, 7});
    io::load_tensor(path, "ls.labels", labels.data(), std::vector<std::size_t>{6});
    io::load_tensor(path, "ls.loss", want_loss.data(), std::vector<std::size_t>{});
    io::load_tensor(path, "ls.grad", want_grad.data(), std::vector<std::size_t>{6, 7});
    for (std::size_t r = 0; r < 6; ++r) valid.data()[r] = labels.data()[r] != -100;
    REQUIRE(!valid.data()[2]);
    testing::poison(loss);
    testing::poison(dlogits);
    cross_entropy_forward(loss, probs, logits, labels, valid, label_smoothing{0.2f});
    cross_entropy_backward(dlogits, probs, labels, valid, 1.0f, label_smoothing{0.2f});
    CHECK(loss.data()[0] == doctest::Approx(want_loss.data()[0]).epsilon(1e-6));
    for (std::size_t i = 0; i < S::numel; ++i) {
        CAPTURE(i);
        CHECK(dlogits.data()[i] == doctest::Approx(want_grad.data()[i]).epsilon(1e-5).scale(1e-6));
    }
}

TEST_CASE_TEMPLATE("cross-entropy backward matches its float64 formula", T, f32, bf16, f16)
{
    check_cross_entropy_backward_formula<T, Shape<9, 7>>(100);
    check_cross_entropy_backward_formula<T, Shape<4, 1500>>(101);
    check_cross_entropy_backward_formula<T, Shape<2, 3, 33>>(102);
}

TEST_CASE("cross-entropy: an all-padding batch gives loss 0 and zero gradients; float masks; no mask")
{
    using S = Shape<5, 6>;
    Tensor<f32, S, Host> x, probs, dx;
    Tensor<i32, Shape<5>, Host> labels;
    Tensor<bool, Shape<5>, Host> none;
    Tensor<f32, Shape<>, Host> loss;
    fill_normal(x, 110);
    fill(labels, 2);
    fill(none, false);
    testing::poison(loss);
    testing::poison(dx);
    cross_entropy_forward(loss, probs, x, labels, none);
    cross_entropy_backward(dx, probs, labels, none, 1.0f);
    CHECK(loss.data()[0] == 0.0f);
    for (std::size_t i = 0; i < S::numel; ++i) CHECK(dx.data()[i] == 0.0f);

    // a 0/1 float mask, and no mask at all (every row counts)
    std::vector<int> label_list{0, 1, 2, 3, 4};
    for (int r = 0; r < 5; ++r) labels.data()[r] = r;
    Tensor<f32, Shape<5>, Host> weights;
    const float mask[5] = {1, 0, 1, 1, 0};
    for (int r = 0; r < 5; ++r) weights.data()[r] = mask[r];
    const auto xs = values(x);
    cross_entropy_forward(loss, probs, x, labels, weights);
    const double masked = cross_entropy_ref(xs, label_list, {true, false, true, true, false}, 6);
    CHECK(loss.data()[0] == doctest::Approx(masked).epsilon(1e-6));
    cross_entropy_forward(loss, probs, x, labels);
    const double unmasked = cross_entropy_ref(xs, label_list, std::vector<bool>(5, true), 6);
    CHECK(loss.data()[0] == doctest::Approx(unmasked).epsilon(1e-6));
    Tensor<f32, S, Host> dx_all, dx_masked;
    cross_entropy_backward(dx_all, probs, labels, 1.0f);
    cross_entropy_backward(dx_masked, probs, labels, weights, 1.0f);
    const auto p = values(probs);
    for (std::size_t i = 0; i < S::numel; ++i) {
        const double hot = static_cast<int>(i % 6) == label_list[i / 6] ? 1 : 0;
        CHECK(dx_all.data()[i] == doctest::Approx((p[i] - hot) / 5).epsilon(1e-6));
        CHECK(dx_masked.data()[i] == doctest::Approx(mask[i / 6] * (p[i] - hot) / 3).epsilon(1e-6));
    }
}

TEST_CASE("cross-entropy: a label out of range on a valid row throws index_error before writing")
{
    using S = Shape<4, 10>;
    Tensor<f32, S, Host> x, probs, dx;
    Tensor<i32, Shape<4>, Host> labels;
    Tensor<bool, Shape<4>, Host> valid;
    Tensor<f32, Shape<>, Host> loss;
    fill_normal(x, 120);
    const int label_list[4] = {1, 10, 3, -1};  // row 1: 10 is out of range; row 3: -1 but padding
    for (int r = 0; r < 4; ++r) {
        labels.data()[r] = label_list[r];
        valid.data()[r] = r != 3;
    }
    testing::poison(probs);
    testing::poison(loss);
    testing::poison(dx);
    try {
        cross_entropy_forward(loss, probs, x, labels, valid);
        FAIL("no exception");
    } catch (const index_error& e) {
        const std::string what = e.what();
        CHECK(what.find("cross_entropy_forward") != std::string::npos);
        CHECK(what.find("label 10 of row 1") != std::string::npos);
        CHECK(what.find("[0, 10)") != std::string::npos);
    }
    CHECK_THROWS_AS(cross_entropy_backward(dx, probs, labels, valid, 1.0f), index_error);
    std::uint32_t bits = 0;
    for (std::size_t i = 0; i < S::numel; ++i) {
        std::memcpy(&bits, &probs.data()[i], 4);
        CHECK(bits == 0xA5A5A5A5u);
        std::memcpy(&bits, &dx.data()[i], 4);
        CHECK(bits == 0xA5A5A5A5u);
    }
    std::memcpy(&bits, &loss.data()[0], 4);
    CHECK(bits == 0xA5A5A5A5u);
    valid.data()[1] = false;  // the same label on a padding row is fine
    cross_entropy_forward(loss, probs, x, labels, valid);
    CHECK(std::isfinite(loss.data()[0]));
}

// --------------------------------------------------------------------- MSE

namespace {

template <class T, class S>
void check_mse_forward(std::uint64_t seed)
{
    constexpr std::size_t n = row_length<S>, rows = row_count<S>;
    labelled_batch<S> batch(seed, 3);
    Tensor<T, S, Host> p, t;
    Tensor<f32, Shape<>, Host> loss;
    fill_normal(p, seed);
    fill_normal(t, seed + 1, 0.5, 1);
    batch.spoil(p);
    testing::poison(loss);
    mse_forward(loss, p, t, batch.valid);
    const double want = mse_ref(values(p), values(t), batch.valid_list, n);
    mismatch_log log;
    expect_close<f32>(log, "loss", 0, loss.data()[0], want, want, {4, sum_ulps(rows * n)});
    INFO(type_name<T>, " rows of ", n);
    CHECK_NO_MISMATCH(log);
}

template <class T, class S, class Scale>
void check_mse_gradient(std::uint64_t seed, const Scale& scale, double s)
{
    constexpr std::size_t n = row_length<S>;
    labelled_batch<S> batch(seed, 3);
    Tensor<T, S, Host> p, t, dp;
    fill_normal(p, seed);
    fill_normal(t, seed + 1);
    batch.spoil(p);
    testing::poison(dp);
    mse_backward(dp, p, t, batch.valid, scale);
    const auto ts = values(t);
    auto want = central_differences(values(p), [&](const std::vector<double>& v) {
        return mse_ref(v, ts, batch.valid_list, n);
    });
    for (double& w : want) w *= s;
    mismatch_log log;
    expect_gradient(log, "dpred", values(dp), want, gradient_tolerance<T>(n));
    for (std::size_t i = 0; i < S::numel; ++i)
        if (!batch.valid_list[i / n] && dp.data()[i] != T(0)) log.add("padding dpred[%zu] not 0", i);
    INFO(type_name<T>, " rows of ", n, ", scale ", s);
    CHECK_NO_MISMATCH(log);
}

template <class T, class S>
void check_mse_backward_formula(std::uint64_t seed)
{
    constexpr std::size_t n = row_length<S>;
    labelled_batch<S> batch(seed, 4);
    Tensor<T, S, Host> p, t, dp;
    fill_normal(p, seed);
    fill_normal(t, seed + 1);
    testing::poison(dp);
    mse_backward(dp, p, t, batch.valid, 3.0f);
    const auto ps = values(p), ts = values(t);
    double count = 0;
    for (bool v : batch.valid_list) count += v;
    mismatch_log log;
    for (std::size_t i = 0; i < S::numel; ++i) {
        const double want = batch.valid_list[i / n] ? 2 * 3.0 * (ps[i] - ts[i]) / (count * n) : 0.0;
        expect_close<T>(log, "dpred", i, convert<f64>(dp.data()[i]), want, std::fabs(want), {4, 0});
    }
    INFO(type_name<T>, " rows of ", n);
    CHECK_NO_MISMATCH(log);
}

}  // namespace

TEST_CASE_TEMPLATE("mse forward matches float64 over valid rows and all columns", T, f32, bf16, f16)
{
    check_mse_forward<T, Shape<4, 1>>(130);
    check_mse_forward<T, Shape<9, 7>>(131);
    check_mse_forward<T, Shape<6, 33>>(132);
    check_mse_forward<T, Shape<4, 1500>>(133);
    check_mse_forward<T, Shape<2, 3, 10>>(134);
}

TEST_CASE_TEMPLATE("mse backward matches central finite differences", T, f64, f32)
{
    Tensor<f32, Shape<>, Host> scale;
    scale.data()[0] = 0.5f;
    check_mse_gradient<T, Shape<9, 7>>(140, 1.0f, 1.0);
    check_mse_gradient<T, Shape<4, 1>>(141, 2.0f, 2.0);
    check_mse_gradient<T, Shape<2, 3, 10>>(142, scale, 0.5);
}

TEST_CASE_TEMPLATE("mse backward matches its float64 formula", T, f32, bf16, f16)
{
    check_mse_backward_formula<T, Shape<9, 7>>(150);
    check_mse_backward_formula<T, Shape<4, 1500>>(151);
}

TEST_CASE("mse: all-padding batch, no-mask overloads, expressions as inputs")
{
    using S = Shape<3, 4>;
    Tensor<f32, S, Host> p, t, dp;
    Tensor<bool, Shape<3>, Host> none;
    Tensor<f32, Shape<>, Host> loss;
    fill_normal(p, 160);
    fill_normal(t, 161);
    fill(none, false);
    testing::poison(loss);
    testing::poison(dp);
    mse_forward(loss, p, t, none);
    mse_backward(dp, p, t, none, 1.0f);
    CHECK(loss.data()[0] == 0.0f);
    for (std::size_t i = 0; i < S::numel; ++i) CHECK(dp.data()[i] == 0.0f);
    const auto ps = values(p), ts = values(t);
    mse_forward(loss, p * 2.0f, t);
    std::vector<double> doubled = ps;
    for (double& v : doubled) v *= 2;
    CHECK(loss.data()[0] == doctest::Approx(mse_ref(doubled, ts, std::vector<bool>(3, true), 4)).epsilon(1e-6));
    mse_backward(dp, p, t, 1.0f);
    for (std::size_t i = 0; i < S::numel; ++i)
        CHECK(dp.data()[i] == doctest::Approx(2 * (ps[i] - ts[i]) / 12).epsilon(1e-6));
}
