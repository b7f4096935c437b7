// Active learning's building blocks on the host. Uncertainty scores
// (entropy, margin, least confidence) against float64 loops over each row
// of the stored logits (f32, bf16, f16, f64; rows of 1, 2, 3, 10, 1000 and
// 4097; spreads up to 1e4; NaN, +-inf, ties at the top), each within an error
// bound derived per row from the accumulation's unit roundoff; the fused
// input (logits * 0.5 + bias) against the same scores of its materialised
// value. top_k against std::stable_sort on scores with many ties, NaN and
// +-inf, with counts below N, expressions as scores, and its errors. Outputs
// are poisoned before every op.
#include "tensor_testing.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

using namespace tenet;

namespace {

template <class S>
constexpr std::size_t row_length = S::extents[S::rank - 1];
template <class S>
using rows_of = detail::rowwise::rows_shape_t<S>;

template <class T>
const char* type_name = numeric_traits<T>::name;

// ----------------------------------------------------------------- references

// A row's scores and their error bounds: an implementation accumulating with
// unit roundoff u and subnormal spacing tiny is within
// bound_per_u * u + bound_per_tiny * tiny.
struct scores_ref {
    double entropy, margin, least_confidence;
    double entropy_per_u, margin_per_u, least_confidence_per_u, per_tiny;
};

// One row's scores in float64, through the identities the op uses (s - 1
// kept apart from 1 so small scores stay exact); the test "references match
// the definitions" checks them against -sum p log p, p1 - p2 and 1 - p1.
//
// Bounds, to first order, for sums added one term at a time: each e = exp(x -
// m) is off by (2 + |x - m|) u relative (the subtraction's rounding grows with
// |x - m| through exp; exp's own 1-2 ulps) and by tiny absolute (subnormal
// results); a sum of n such terms adds (n - 1) u of their magnitudes; the
// final log1p, expm1, divisions, 4 u of the result.
scores_ref reference(const std::vector<double>& x)
{
    double m = -INFINITY;
    for (double v : x) {
        if (std::isnan(v)) return {NAN, NAN, NAN, 0, 0, 0, 0};
        if (v > m) m = v;
    }
    if (std::isinf(m)) return {NAN, NAN, NAN, 0, 0, 0, 0};  // +inf, or only -inf
    const double n = static_cast<double>(x.size());
    double ties = 0, runner_up = -INFINITY, rest = 0, weighted = 0, spread = 0, spread_w = 0, largest_gap = 0;
    for (double v : x) {
        if (v == m) {
            ties += 1;
            continue;
        }
        if (v > runner_up) runner_up = v;
        const double d = v - m, e = std::exp(d), gap = std::isinf(d) ? 0 : -d;
        rest += e;
        weighted += e > 0 ? e * d : 0;
        spread += e * (n + 4 + gap);
        spread_w += e * (1 + gap) * (n + 4 + gap);
        if (e > 0 && gap > largest_gap) largest_gap = gap;
    }
    const double s = ties + rest, s_minus_1 = (ties - 1) + rest;
    scores_ref r{};
    r.entropy = std::log1p(s_minus_1) - weighted / s;
    r.least_confidence = s_minus_1 / s;
    r.margin = ties > 1 ? 0 : -std::expm1(runner_up - m) / s;
    r.entropy_per_u = spread_w / s + spread / s + 4 * r.entropy;
    r.least_confidence_per_u = 2 * spread / s + 4 * r.least_confidence;
    r.margin_per_u = r.margin * (4 + (std::isinf(runner_up) ? 0 : m - runner_up) + spread / s);
    r.per_tiny = n * (2 + largest_gap);
    return r;
}

// The op's unit roundoff and subnormal spacing for logits of type T, plus the
// reference's own (float64: negligible next to f32's, as large as f64's).
template <class T>
double roundoff()
{
    return (std::is_same_v<T, f64> ? 0x1p-53 : 0x1p-24) + 0x1p-53;
}
template <class T>
double subnormal_spacing()
{
    const double f64_tiny = convert<f64>(numeric_traits<f64>::denorm_min());
    return (std::is_same_v<T, f64> ? f64_tiny : convert<f64>(numeric_traits<f32>::denorm_min())) + f64_tiny;
}

template <class T, class S>
std::vector<double> values(const Tensor<T, S, Host>& t)
{
    std::vector<double> v(S::numel);
    for (std::size_t i = 0; i < S::numel; ++i) v[i] = convert<f64>(t.data()[i]);
    return v;
}

std::vector<double> row(const std::vector<double>& x, std::size_t r, std::size_t n)
{
    return {x.begin() + static_cast<long>(r * n), x.begin() + static_cast<long>((r + 1) * n)};
}

// got within bound (plus half an ulp of the output type O) of want; NaN for NaN.
template <class O>
void expect_score(mismatch_log& log, const char* what, std::size_t r, double got, double want, double bound)
{
    if (std::isnan(want)) {
        if (!std::isnan(got)) log.add("%s[%zu]: got %.9g, want NaN", what, r, got);
        return;
    }
    double allowed = bound;
    if constexpr (sizeof(O) < 4) allowed += testing::storage_ulp<O>(want) / 2;
    if (!(std::fabs(got - want) <= allowed))
        log.add("%s[%zu]: got %.12g, want %.12g (allowed %.3g)", what, r, got, want, allowed);
}

// ------------------------------------------------------------- logits to test

// Row r of the logits: mostly spread * N(0, 1), with special rows where there
// are enough: a NaN, a +inf, all -inf, some -inf entries, two tied maxima,
// and a confident row (one logit far above the rest).
template <class T, class S>
Tensor<T, S, Host> logits(std::uint64_t seed, double spread)
{
    constexpr std::size_t n = row_length<S>, rows = S::numel / n;
    Tensor<T, S, Host> x;
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (std::size_t i = 0; i < S::numel; ++i) x.data()[i] = convert<T>(spread * normal(rng));
    const auto set = [&](std::size_t r, std::size_t j, double v) { x.data()[r * n + j] = convert<T>(v); };
    static_assert(rows >= 8);
    set(1, n / 2, NAN);
    set(2, n - 1, INFINITY);
    for (std::size_t j = 0; j < n; ++j) set(3, j, -INFINITY);
    for (std::size_t j = 0; j + 1 < n; j += 2) set(4, j, -INFINITY);  // (n = 1: the row stays finite)
    if (n >= 2) {
        set(5, 0, 3 * spread + 1);
        set(5, n - 1, 3 * spread + 1);
    }
    set(6, n / 3, convert<f64>(x.data()[6 * n + n / 3]) + 60);  // confident: the others' share ~1e-26
    return x;
}

// ---------------------------------------------------------------- the checks

template <class T, class S, class O = std::conditional_t<std::is_same_v<T, f64>, f64, f32>>
void check_scores(std::uint64_t seed, double spread)
{
    constexpr std::size_t n = row_length<S>, rows = S::numel / n;
    using R = rows_of<S>;
    const auto x = logits<T, S>(seed, spread);
    Tensor<O, R, Host> entropy, margin, least;
    for (auto* t : {&entropy, &margin, &least}) testing::poison(*t);
    uncertainty_scores<uncertainty::entropy>(entropy, x);
    uncertainty_scores<uncertainty::margin>(margin, x);
    uncertainty_scores<uncertainty::least_confidence>(least, x);
    const auto xs = values(x);
    mismatch_log log;
    for (std::size_t r = 0; r < rows; ++r) {
        const scores_ref want = reference(row(xs, r, n));
        const double u = roundoff<T>(), tiny = want.per_tiny * subnormal_spacing<T>();
        expect_score<O>(log, "entropy", r, convert<f64>(entropy.data()[r]), want.entropy,
                        want.entropy_per_u * u + tiny);
        expect_score<O>(log, "margin", r, convert<f64>(margin.data()[r]), want.margin, want.margin_per_u * u + tiny);
        expect_score<O>(log, "least_confidence", r, convert<f64>(least.data()[r]), want.least_confidence,
                        want.least_confidence_per_u * u + tiny);
    }
    INFO(type_name<T>, " logits, rows of ", n, ", spread ", spread, ", scores in ", type_name<O>);
    CHECK_NO_MISMATCH(log);
}

template <class T>
void check_all_lengths(double spread)
{
    check_scores<T, Shape<8, 1>>(1, spread);
    check_scores<T, Shape<8, 2>>(2, spread);
    check_scores<T, Shape<9, 3>>(3, spread);
    check_scores<T, Shape<12, 10>>(4, spread);
    check_scores<T, Shape<10, 1000>>(5, spread);
    check_scores<T, Shape<8, 4097>>(6, spread);
    check_scores<T, Shape<2, 4, 10>>(7, spread);  // rank 3: scores [2, 4]
}

// Larger first, NaN after every number: top_k's order, as a strict weak order.
bool ranks_before(double a, double b)
{
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
    return a > b;
}

// The first k positions of scores[0, count) in top_k's order, by a stable sort.
std::vector<i32> sorted_positions(const std::vector<double>& scores, std::size_t k, std::size_t count)
{
    std::vector<i32> p(count);
    std::iota(p.begin(), p.end(), 0);
    std::stable_sort(p.begin(), p.end(), [&](i32 a, i32 b) { return ranks_before(scores[a], scores[b]); });
    p.resize(k);
    return p;
}

// Scores drawn from a small set, so that most of them tie; with NaN, +-inf and
// both zeros when `specials`.
template <class T, std::size_t N>
Tensor<T, Shape<N>, Host> tied_scores(std::uint64_t seed, bool specials)
{
    Tensor<T, Shape<N>, Host> s;
    std::mt19937_64 rng(seed);
    const double plain[] = {-2, -1, 0.5, 1, 3};
    const double special[] = {-2, -1, 0.5, 1, 3, NAN, INFINITY, -INFINITY, 0.0, -0.0};
    std::uniform_int_distribution<int> pick(0, specials ? 9 : 4);
    for (std::size_t i = 0; i < N; ++i) {
        const int j = pick(rng);
        s.data()[i] = convert<T>(specials ? special[j] : plain[j]);
    }
    return s;
}

template <std::size_t K>
void poison_indices(Tensor<i32, Shape<K>, Host>& t)
{
    for (std::size_t i = 0; i < K; ++i) t.data()[i] = -7;
}

// top_k(k, count) against the stable sort; entries from k on stay poisoned.
template <class T, std::size_t N>
void check_top_k(const Tensor<T, Shape<N>, Host>& scores, std::size_t k, std::size_t count)
{
    Tensor<i32, Shape<N>, Host> got;
    poison_indices(got);
    top_k(got, scores, k, count);
    const auto want = sorted_positions(values(scores), k, count);
    mismatch_log log;
    for (std::size_t j = 0; j < N; ++j) {
        const i32 expected = j < k ? want[j] : -7;
        if (got.data()[j] != expected) log.add("indices[%zu]: got %d, want %d", j, got.data()[j], expected);
    }
    INFO(type_name<T>, " scores, N ", N, ", k ", k, ", count ", count);
    CHECK_NO_MISMATCH(log);
}

}  // namespace

// -------------------------------------------------------------------- scores

TEST_CASE_TEMPLATE("uncertainty scores match float64 loops over each row", T, f32, bf16, f16, f64)
{
    check_all_lengths<T>(1);
    check_all_lengths<T>(8);
    check_all_lengths<T>(80);   // logits ~ +-80: exp(x - max) underflows to subnormals
    check_all_lengths<T>(1e4);  // nearly one-hot rows: the scores are 0 or subnormal
}

TEST_CASE("uncertainty scores: bf16 and f64 destinations, f32 logits")
{
    check_scores<f32, Shape<12, 10>, bf16>(11, 2);
    check_scores<f32, Shape<10, 1000>, f64>(12, 2);  // f32 accumulation stored exactly
}

TEST_CASE("uncertainty scores: the special rows, exactly")
{
    const float inf = INFINITY, nan = NAN;
    Tensor<f32, Shape<7, 4>, Host> x;
    const float rows[7][4] = {{1, 2, 3, 4},     {1, nan, 3, 4},        {-inf, -inf, -inf, -inf}, {1, inf, 3, 4},
                              {0, -inf, 0, -inf}, {5, 5, 5, 5},        {2, 2, 1, -inf}};
    for (int r = 0; r < 7; ++r)
        for (int j = 0; j < 4; ++j) x(r, j) = rows[r][j];
    Tensor<f32, Shape<7>, Host> h, m, l;
    for (auto* t : {&h, &m, &l}) testing::poison(*t);
    uncertainty_scores<uncertainty::entropy>(h, x);
    uncertainty_scores<uncertainty::margin>(m, x);
    uncertainty_scores<uncertainty::least_confidence>(l, x);
    CHECK(std::isfinite(h(0)));
    for (int r : {1, 2, 3}) {  // NaN, all -inf, +inf: NaN as softmax
        CHECK(std::isnan(h(r)));
        CHECK(std::isnan(m(r)));
        CHECK(std::isnan(l(r)));
    }
    // two equal finite entries and two -inf: p = (1/2, 0, 1/2, 0)
    CHECK(h(4) == doctest::Approx(std::log(2.0)).epsilon(1e-6));
    CHECK(m(4) == 0.0f);
    CHECK(l(4) == 0.5f);
    // uniform over 4: entropy log 4, margin 0, least confidence 3/4
    CHECK(h(5) == doctest::Approx(std::log(4.0)).epsilon(1e-6));
    CHECK(m(5) == 0.0f);
    CHECK(l(5) == 0.75f);
    CHECK(m(6) == 0.0f);  // a tie at the top, whatever is below it
}

TEST_CASE("uncertainty scores: a row of one class scores entropy 0, margin 1, least confidence 0")
{
    Tensor<f32, Shape<3, 1>, Host> x;
    x(0, 0) = -5;
    x(1, 0) = 0;
    x(2, 0) = 1e30f;
    Tensor<f32, Shape<3>, Host> h, m, l;
    for (auto* t : {&h, &m, &l}) testing::poison(*t);
    uncertainty_scores<uncertainty::entropy>(h, x);
    uncertainty_scores<uncertainty::margin>(m, x);
    uncertainty_scores<uncertainty::least_confidence>(l, x);
    for (int r = 0; r < 3; ++r) {
        CHECK(h(r) == 0.0f);
        CHECK(m(r) == 1.0f);
        CHECK(l(r) == 0.0f);
    }
}

TEST_CASE("uncertainty scores: a confident row keeps its small scores' relative precision")
{
    // p_top = 1 / (1 + 1e-30): 1 - p_top rounds to 0 in f32 (and in f64)
    Tensor<f32, Shape<1, 2>, Host> x;
    x(0, 0) = 0;
    x(0, 1) = -69.0776f;  // exp(-69.0776) ~ 1e-30
    Tensor<f32, Shape<1>, Host> h, m, l;
    uncertainty_scores<uncertainty::entropy>(h, x);
    uncertainty_scores<uncertainty::margin>(m, x);
    uncertainty_scores<uncertainty::least_confidence>(l, x);
    const double e = std::exp(double(-69.0776f)), s = 1 + e;
    CHECK(l(0) == doctest::Approx(e / s).epsilon(1e-5));
    CHECK(h(0) == doctest::Approx(std::log1p(e) + e * double(69.0776f) / s).epsilon(1e-5));
    CHECK(m(0) == doctest::Approx((1 - e) / s).epsilon(1e-7));
}

TEST_CASE("uncertainty scores: the references match the definitions on moderate rows")
{
    // -sum p log p, p1 - p2 and 1 - p1 straight from p = softmax(x): on rows
    // of moderate logits nothing cancels badly (each within n ulps)
    std::mt19937_64 rng(5);
    std::normal_distribution<double> normal(0.0, 2.0);
    for (std::size_t n : {1u, 2u, 3u, 10u, 1000u}) {
        std::vector<double> x(n);
        for (double& v : x) v = normal(rng);
        std::vector<double> p(n);
        const double m = *std::max_element(x.begin(), x.end());
        double s = 0;
        for (std::size_t j = 0; j < n; ++j) s += p[j] = std::exp(x[j] - m);
        double h = 0;
        for (double& q : p) {
            q /= s;
            h -= q > 0 ? q * std::log(q) : 0;
        }
        std::sort(p.begin(), p.end(), std::greater<>());
        const scores_ref r = reference(x);
        INFO("rows of ", n);
        CHECK(r.entropy == doctest::Approx(h).epsilon(1e-12));
        CHECK(r.margin == doctest::Approx(n > 1 ? p[0] - p[1] : p[0]).epsilon(1e-12));
        CHECK(r.least_confidence == doctest::Approx(1 - p[0]).epsilon(1e-12));
    }
}

TEST_CASE("uncertainty scores: the input expression is evaluated inside the op")
{
    using S = Shape<16, 1000>;
    const auto x = logits<bf16, S>(21, 4);
    Tensor<f32, Shape<1000>, Host> bias;
    std::mt19937_64 rng(22);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (std::size_t j = 0; j < 1000; ++j) bias(j) = static_cast<f32>(normal(rng));
    Tensor<f32, S, Host> y;  // the same f32 values the fused op computes
    y = x * 0.5f + bias;
    for (const uncertainty kind : {uncertainty::entropy, uncertainty::margin, uncertainty::least_confidence}) {
        Tensor<f32, Shape<16>, Host> fused, stored;
        testing::poison(fused);
        testing::poison(stored);
        uncertainty_scores(fused, x * 0.5f + bias, kind);
        uncertainty_scores(stored, y, kind);
        INFO("kind ", static_cast<int>(kind));
        CHECK(std::memcmp(fused.data(), stored.data(), sizeof(f32) * 16) == 0);
    }
}

TEST_CASE("uncertainty scores: the run-time kind runs the same kernel as the compile-time one")
{
    using S = Shape<12, 10>;
    const auto x = logits<f32, S>(31, 2);
    Tensor<f32, Shape<12>, Host> a, b;
    const auto same = [&](uncertainty kind, auto compiled) {
        testing::poison(a);
        testing::poison(b);
        uncertainty_scores(a, x, kind);
        compiled(b);
        return std::memcmp(a.data(), b.data(), sizeof(f32) * 12) == 0;
    };
    CHECK(same(uncertainty::entropy, [&](auto& out) { uncertainty_scores<uncertainty::entropy>(out, x); }));
    CHECK(same(uncertainty::margin, [&](auto& out) { uncertainty_scores<uncertainty::margin>(out, x); }));
    CHECK(same(uncertainty::least_confidence,
               [&](auto& out) { uncertainty_scores<uncertainty::least_confidence>(out, x); }));
    CHECK_THROWS_AS(uncertainty_scores(a, x, static_cast<uncertainty>(7)), tenet::error);
}

TEST_CASE("uncertainty scores: a destination inside the logits is an aliasing_error")
{
    Tensor<f32, Shape<4, 8>, Host> x;
    fill(x, 1.0f);
    auto inside = make_view<Shape<4>, Host>(x.data() + 8);
    CHECK_THROWS_AS(uncertainty_scores<uncertainty::entropy>(inside, x), aliasing_error);
    CHECK(x(1, 0) == 1.0f);
}

// --------------------------------------------------------------------- top_k

TEST_CASE_TEMPLATE("top_k matches a stable sort, ties by lower position", T, f32, bf16, f16, f64)
{
    const auto plain = tied_scores<T, 1000>(41, false);
    const auto special = tied_scores<T, 1000>(42, true);
    for (std::size_t k : {0u, 1u, 7u, 300u, 999u, 1000u}) {
        check_top_k(plain, k, 1000);
        check_top_k(special, k, 1000);
    }
    for (std::size_t count : {1u, 10u, 517u}) {  // only the first count compete
        check_top_k(special, 1, count);
        check_top_k(special, count / 2, count);
        check_top_k(special, count, count);
    }
}

TEST_CASE("top_k: NaN comes after every number, -inf included; -0 and +0 tie")
{
    Tensor<f32, Shape<6>, Host> s;
    const float v[6] = {NAN, -INFINITY, 0.0f, -0.0f, NAN, 1.0f};
    for (int i = 0; i < 6; ++i) s(i) = v[i];
    Tensor<i32, Shape<6>, Host> got;
    top_k(got, s, 6);
    const i32 want[6] = {5, 2, 3, 1, 0, 4};
    for (int i = 0; i < 6; ++i) CHECK(got(i) == want[i]);
}

TEST_CASE("top_k: f64 scores are compared as f64")
{
    Tensor<f64, Shape<3>, Host> s;
    s(0) = 1.0;
    s(1) = 1.0 + 1e-12;  // equal to s(0) once rounded to f32
    s(2) = 0.5;
    Tensor<i32, Shape<2>, Host> got;
    top_k(got, s, 2);
    CHECK(got(0) == 1);
    CHECK(got(1) == 0);
}

TEST_CASE("top_k: scores may be expressions (the smallest margins: top_k of -margin)")
{
    const auto s = tied_scores<f32, 200>(51, true);
    Tensor<f32, Shape<200>, Host> negated;
    negated = -s;
    Tensor<i32, Shape<20>, Host> fused, stored;
    top_k(fused, -s, 20);
    top_k(stored, negated, 20);
    for (int i = 0; i < 20; ++i) CHECK(fused(i) == stored(i));
    top_k(fused, s * 2.0f + 1.0f, 20, 150);
    const auto want = sorted_positions(values(s), 20, 150);
    for (int i = 0; i < 20; ++i) CHECK(fused(i) == want[static_cast<std::size_t>(i)]);
}

TEST_CASE("top_k: k beyond count, count beyond N and k beyond the indices are errors, nothing written")
{
    const auto s = tied_scores<f32, 10>(61, false);
    Tensor<i32, Shape<4>, Host> got;
    poison_indices(got);
    CHECK_THROWS_WITH_AS(top_k(got, s, 5, 4), doctest::Contains("k = 5 of 4"), tenet::error);
    CHECK_THROWS_WITH_AS(top_k(got, s, 1, 11), doctest::Contains("count 11"), tenet::error);
    CHECK_THROWS_WITH_AS(top_k(got, s, 5), doctest::Contains("do not fit indices of 4"), tenet::error);
    for (int i = 0; i < 4; ++i) CHECK(got(i) == -7);
}

TEST_CASE("active learning: the most uncertain rows of a pool, end to end")
{
    // scores of a pool's logits, then the k most uncertain of its live rows
    using S = Shape<64, 10>;
    const auto x = logits<f32, S>(71, 3);
    Tensor<f32, Shape<64>, Host> h, m;
    uncertainty_scores(h, x, uncertainty::entropy);
    uncertainty_scores(m, x, uncertainty::margin);
    Tensor<i32, Shape<8>, Host> by_entropy, by_margin;
    top_k(by_entropy, h, 8, 50);
    top_k(by_margin, -m, 8, 50);
    const auto he = values(h), me = values(m);
    std::vector<double> neg(me.size());
    std::transform(me.begin(), me.end(), neg.begin(), [](double v) { return -v; });
    const auto want_h = sorted_positions(he, 8, 50), want_m = sorted_positions(neg, 8, 50);
    for (int i = 0; i < 8; ++i) {
        CHECK(by_entropy(i) == want_h[static_cast<std::size_t>(i)]);
        CHECK(by_margin(i) == want_m[static_cast<std::size_t>(i)]);
    }
    // the NaN row (row 1) and the +inf, all -inf rows (2, 3) are chosen last
    for (int i = 0; i < 8; ++i) CHECK((by_entropy(i) != 1 && by_entropy(i) != 2 && by_entropy(i) != 3));
}
