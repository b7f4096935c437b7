// Reverse-mode autodiff on the host. Every gradient is checked against
// central finite differences in float64: tenet evaluates the forward
// expression on f64 tensors at x + h and x - h, and the difference quotient,
// weighted by dy and summed over broadcast axes by index arithmetic written
// here, is each variable's reference gradient. Then the same expression with
// f32 and bf16 storage (f32 compute) is checked against the f64 gradient.
// Covered: every operation's rule, randomly generated expression trees
// (chosen at compile time from seeds), realistic layer expressions,
// variables used twice, broadcast variables, gradient<I> inside a larger
// expression, the evaluator's chunk path, and the run-time errors. (Each
// storage type checked is one more instantiation of every backward: per
// operation f64 and f32, random trees f64 only, to keep the compile time --
// nvcc's above all -- reasonable.)
#include "tensor_testing.hpp"

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

using namespace tenet;

namespace {

template <class S>
using host64 = Tensor<f64, S, Host>;

// Inputs uniform in [lo, hi], at least `gap` away from every kink, rounded
// to bf16 (unless told otherwise) so that f64, f32 and bf16 runs see the
// same values.
struct domain {
    double lo = -3, hi = 3;
    std::vector<double> kinks = {};
    double gap = 0.1;
    bool bf16_values = true;
};

template <class S>
host64<S> draw(std::uint64_t seed, const domain& d = {})
{
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(d.lo, d.hi);
    host64<S> t;
    for (std::size_t i = 0; i < S::numel; ++i) {
        double v = 0;
        bool near_kink = true;
        while (near_kink) {
            v = d.bf16_values ? convert<f64>(convert<bf16>(u(rng))) : u(rng);
            near_kink = false;
            for (double k : d.kinks) near_kink = near_kink || std::fabs(v - k) < d.gap;
        }
        t.data()[i] = v;
    }
    return t;
}

// Element i of Full reads element source_index(i) of a Part broadcast to it.
template <class Part, class Full>
std::size_t source_index(std::size_t i)
{
    std::array<std::size_t, Full::rank + 1> at{};
    for (std::size_t d = Full::rank; d-- > 0; i /= Full::extents[d]) at[d] = i % Full::extents[d];
    std::size_t j = 0;
    for (std::size_t d = 0; d != Part::rank; ++d) {
        const std::size_t full_d = d + Full::rank - Part::rank;
        j = j * Part::extents[d] + (Part::extents[d] == 1 ? 0 : at[full_d]);
    }
    return j;
}

template <bool Second, class A, class B>
const auto& either(const A& a, const B& b)
{
    if constexpr (Second) return b;
    else return a;
}

struct tolerances {
    double fd = 1e-6;      // analytic f64 vs finite differences
    double f32 = 1e-5;     // f32 storage vs f64, relative to the contributions' scale
    double bf16 = 8e-3;
};

constexpr double step = 1e-6;

template <class T, class Shape_>
host64<Shape_> widened(const Tensor<T, Shape_, Host>& t)
{
    host64<Shape_> r;
    r = t;
    return r;
}

// The gradients of make(var<0>(x0), var<1>(x1), ...) with upstream dy, in
// storage T, all variables at once: tie(d0, d1, ...) = gradients(...).
template <class T, class Make, class Dy, class... X, std::size_t... I>
auto gradients_in(Make& make, const Dy& dy, const std::tuple<const X&...>& xs, std::index_sequence<I...>)
{
    std::tuple<Tensor<T, typename X::shape, Host>...> in;
    ((std::get<I>(in) = std::get<I>(xs)), ...);  // exact: the inputs are bf16 values
    Tensor<T, typename Dy::shape, Host> upstream;
    upstream = dy;
    std::tuple<Tensor<T, typename X::shape, Host>...> d;
    (testing::poison(std::get<I>(d)), ...);
    tie(std::get<I>(d)...) = gradients(make(var<I>(std::get<I>(in))...), upstream);
    return std::tuple<host64<typename X::shape>...>{widened(std::get<I>(d))...};
}

// Variable K's reference gradient by central differences, and the scale of
// its contributions (sum of |dy| (1 + |de/dx|)) for the tolerances.
template <std::size_t K, class Make, class Dy, class... X, std::size_t... I>
std::pair<std::vector<double>, std::vector<double>> finite_difference(Make& make, const Dy& dy,
                                                                      const std::tuple<const X&...>& xs,
                                                                      std::index_sequence<I...>)
{
    using Full = typename Dy::shape;
    using V = std::tuple_element_t<K, std::tuple<X...>>;
    using Part = typename V::shape;
    const V& x = std::get<K>(xs);
    V plus, minus;
    plus = x + step;
    minus = x - step;
    host64<Full> up, down;
    up = make(var<I>(either<I == K>(std::get<I>(xs), plus))...);
    down = make(var<I>(either<I == K>(std::get<I>(xs), minus))...);
    std::vector<double> fd(Part::numel, 0.0), scale(Part::numel, 0.0);
    for (std::size_t i = 0; i < Full::numel; ++i) {
        const std::size_t j = source_index<Part, Full>(i);
        const double slope = (up.data()[i] - down.data()[i]) / (2 * step);
        fd[j] += dy.data()[i] * slope;
        scale[j] += std::fabs(dy.data()[i]) * (1 + std::fabs(slope));
    }
    return {fd, scale};
}

template <class D>
void compare(mismatch_log& log, const char* what, std::size_t variable, const D& got, const std::vector<double>& want,
             const std::vector<double>& scale, double relative)
{
    for (std::size_t j = 0; j < want.size(); ++j) {
        const double g = got.data()[j];
        if (!(std::fabs(g - want[j]) <= relative * (std::fabs(want[j]) + scale[j])))
            log.add("%s d%zu[%zu] = %.10g, want %.10g", what, variable, j, g, want[j]);
    }
}

template <class D>
std::vector<double> values_of(const D& t)
{
    return std::vector<double>(t.data(), t.data() + D::numel);
}

// Which storage types are checked besides f64 (each one more instantiation
// of the backward: the compile time adds up).
enum class storages { f64, f32, f32_bf16 };

// The whole check of one expression: f64 gradients vs finite differences,
// then f32 and bf16 storage vs the f64 gradients.
template <storages Also, class Make, class Dy, class... X, std::size_t... I>
void check_all(const char* name, Make make, tolerances tol, const Dy& dy, std::tuple<const X&...> xs,
               std::index_sequence<I...> all)
{
    INFO(std::string(name));
    const auto exact = gradients_in<f64>(make, dy, xs, all);
    const std::array<std::pair<std::vector<double>, std::vector<double>>, sizeof...(I)> fd{
        finite_difference<I>(make, dy, xs, all)...};
    mismatch_log log;
    (compare(log, "f64 vs finite differences:", I, std::get<I>(exact), fd[I].first, fd[I].second, tol.fd), ...);
    CHECK_NO_MISMATCH(log);

    mismatch_log narrow;
    if constexpr (Also != storages::f64) {
        const auto single = gradients_in<f32>(make, dy, xs, all);
        (compare(narrow, "f32 vs f64:", I, std::get<I>(single), values_of(std::get<I>(exact)), fd[I].second, tol.f32),
         ...);
    }
    if constexpr (Also == storages::f32_bf16) {
        const auto brain = gradients_in<bf16>(make, dy, xs, all);
        (compare(narrow, "bf16 vs f64:", I, std::get<I>(brain), values_of(std::get<I>(exact)), fd[I].second, tol.bf16),
         ...);
    }
    CHECK_NO_MISMATCH(narrow);
}

// check(name, make, tol, dy, x0, x1, ...): make takes the variables as
// expressions (var<I>(x_I)) and builds the expression.
template <storages Also = storages::f32_bf16, class Make, class Dy, class... X>
void check(const char* name, Make make, tolerances tol, const Dy& dy, const X&... xs)
{
    check_all<Also>(name, make, tol, dy, std::tuple<const X&...>(xs...), std::index_sequence_for<X...>{});
}

using S = Shape<5, 19>;

std::uint64_t seed_of(const char* name)
{
    std::uint64_t h = 1469598103934665603ULL;
    for (const char* c = name; *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 1099511628211ULL;
    return h;
}

template <class Make>
void unary(const char* name, Make make, domain d = {}, tolerances tol = {})
{
    const auto x = draw<S>(seed_of(name), d);
    const auto dy = draw<S>(seed_of(name) + 1, {-2, 2});
    check<storages::f32>(name, make, tol, dy, x);
}

template <class Make>
void binary(const char* name, Make make, domain da = {}, domain db = {}, tolerances tol = {})
{
    const auto a = draw<S>(seed_of(name), da);
    const auto b = draw<S>(seed_of(name) + 1, db);
    const auto dy = draw<S>(seed_of(name) + 2, {-2, 2});
    check<storages::f32>(name, make, tol, dy, a, b);
}

}  // namespace

TEST_CASE("every unary rule matches finite differences")
{
    const domain positive{0.1, 4};
    const domain kink_at_zero{-3, 3, {0.0}};
    unary("negate", [](auto x) { return -x; });
    unary("abs", [](auto x) { return abs(x); }, kink_at_zero);
    unary("square", [](auto x) { return square(x); });
    unary("reciprocal", [](auto x) { return reciprocal(x); }, {-3, 3, {0.0}, 0.3});
    unary("relu", [](auto x) { return relu(x); }, kink_at_zero);
    unary("exp", [](auto x) { return exp(x); });
    unary("exp2", [](auto x) { return exp2(x); });
    unary("expm1", [](auto x) { return expm1(x); });
    unary("log", [](auto x) { return log(x); }, positive);
    unary("log2", [](auto x) { return log2(x); }, positive);
    unary("log1p", [](auto x) { return log1p(x); }, {-0.9, 3});
    unary("sqrt", [](auto x) { return sqrt(x); }, positive);
    unary("rsqrt", [](auto x) { return rsqrt(x); }, positive);
    unary("sin", [](auto x) { return sin(x); });
    unary("cos", [](auto x) { return cos(x); });
    unary("tanh", [](auto x) { return tanh(x); });
    unary("sigmoid", [](auto x) { return sigmoid(x); }, {-6, 6});
    unary("silu", [](auto x) { return silu(x); }, {-6, 6});
    unary("gelu", [](auto x) { return gelu(x); }, {-5, 5});
    unary("gelu_tanh", [](auto x) { return gelu_tanh(x); }, {-5, 5});
    unary("softplus", [](auto x) { return softplus(x); }, {-20, 20});
    unary("leaky_relu", [](auto x) { return leaky_relu(x, 0.1f); }, kink_at_zero);
    unary("elu", [](auto x) { return elu(x, 0.7f); }, kink_at_zero);
    unary("clamp", [](auto x) { return clamp(x, -1.0, 1.5); }, {-3, 3, {-1.0, 1.5}});
    unary("sign", [](auto x) { return sign(x) + x * 0.5; }, kink_at_zero);
    unary("cast<f64>", [](auto x) { return cast<f64>(x * 2.0); });
    unary("scalar operands", [](auto x) { return (x * 2.5 - 1.0) / 3.0 + 0.5; });
    unary("scalar numerator", [](auto x) { return 2.5 / x; }, {-3, 3, {0.0}, 0.3});
    unary("pow(x, 3)", [](auto x) { return pow(x, 3.0); });  // negative bases: an integer exponent
    unary("pow(x, 2.5)", [](auto x) { return pow(x, 2.5); }, positive);
    unary("pow(2, x)", [](auto x) { return pow(2.0, x); });
}

TEST_CASE("every binary rule matches finite differences")
{
    const domain nonzero{-3, 3, {0.0}, 0.3};
    binary("plus", [](auto a, auto b) { return a + b; });
    binary("minus", [](auto a, auto b) { return a - b; });
    binary("multiplies", [](auto a, auto b) { return a * b; });
    binary("divides", [](auto a, auto b) { return a / b; }, {}, nonzero);
    binary("pow", [](auto a, auto b) { return pow(a, b); }, {0.2, 3}, {-2, 2});
    // fmod away from its jumps: a / b in [2.1, 2.67], so trunc(a / b) = 2 and d/db = -2
    binary("fmod", [](auto a, auto b) { return fmod(a, b); }, {2.1, 2.4}, {0.9, 1.0});
    binary("operator%", [](auto a, auto b) { return (-a) % b; }, {2.1, 2.4}, {0.9, 1.0});
    // min/max: operands kept apart (a tie is a kink); the shift moves b off a
    // (b - a + 0.01 is never 0 for bf16 values, so equal operands are separated too)
    binary("max", [](auto a, auto b) { return max(a, b + 0.05 * sign(b - a + 0.01)); });
    binary("min", [](auto a, auto b) { return min(a, b + 0.05 * sign(b - a + 0.01)); });
}

TEST_CASE("where: the gradient goes to the chosen branch, none to the condition")
{
    const auto c = draw<S>(11), a = draw<S>(12), b = draw<S>(13), dy = draw<S>(14);
    check("where", [&](auto x, auto y) { return where(c > 0.0, x * x, sin(y)); }, {}, dy, a, b);
    check("where, variable condition", [](auto x, auto y) { return where(x > 0.0, exp(y), y * x); }, {}, dy,
          draw<S>(15, {-3, 3, {0.0}}), b);
}

TEST_CASE("derivative conventions at kinks and edges")
{
    using V = Shape<8>;
    host64<V> x, y, dx, dy;
    const double xs[8] = {0.0, -0.0, 0.0, 2.0, 2.0, NAN, 1.0, -1.0};
    const double ys[8] = {0.0, 3.0, -1.0, 2.0, 0.0, 1.0, NAN, 1.5};
    for (int i = 0; i < 8; ++i) x.data()[i] = xs[i], y.data()[i] = ys[i];

    testing::poison(dx);
    tie(dx) = gradients(relu(var<0>(x)), 1.0);
    CHECK(dx.data()[0] == 0.0);  // relu'(0) = 0
    CHECK(dx.data()[3] == 1.0);
    CHECK(dx.data()[7] == 0.0);

    testing::poison(dx);
    tie(dx) = gradients(abs(var<0>(x)), 1.0);
    CHECK(dx.data()[0] == 0.0);  // abs'(0) = 0
    CHECK(dx.data()[7] == -1.0);
    CHECK(std::isnan(dx.data()[5]));

    testing::poison(dx);
    testing::poison(dy);
    tie(dx, dy) = gradients(max(var<0>(x), var<1>(y)), 1.0);
    CHECK(dx.data()[0] == 1.0);  // tie: the first operand
    CHECK(dy.data()[0] == 0.0);
    CHECK(dx.data()[3] == 1.0);
    CHECK(dy.data()[3] == 0.0);
    CHECK(dx.data()[5] == 1.0);  // NaN selected: x
    CHECK(dy.data()[5] == 0.0);
    CHECK(dx.data()[6] == 0.0);  // NaN selected: y
    CHECK(dy.data()[6] == 1.0);
    CHECK(dx.data()[7] == 0.0);
    CHECK(dy.data()[7] == 1.0);

    testing::poison(dx);
    testing::poison(dy);
    tie(dx, dy) = gradients(min(var<0>(x), var<1>(y)), 1.0);
    CHECK(dx.data()[0] == 1.0);
    CHECK(dy.data()[0] == 0.0);
    CHECK(dx.data()[2] == 0.0);
    CHECK(dy.data()[2] == 1.0);

    // pow(a, b): d/da = 0 where b == 0; d/db = 0 where a == 0 and b >= 0
    testing::poison(dx);
    testing::poison(dy);
    tie(dx, dy) = gradients(pow(var<0>(x), var<1>(y)), 1.0);
    CHECK(dx.data()[0] == 0.0);   // 0^0
    CHECK(dy.data()[0] == 0.0);
    CHECK(dy.data()[1] == 0.0);   // 0^3
    CHECK(dx.data()[1] == 0.0);   // 3 * 0^2
    CHECK(std::isinf(dx.data()[2]));  // -1 * 0^-2
    CHECK(dx.data()[4] == 0.0);   // 2^0
    CHECK(dy.data()[4] == doctest::Approx(std::log(2.0)).epsilon(1e-15));
    CHECK(std::isnan(dx.data()[7]));  // (-1)^1.5: no real derivative either way
    CHECK(std::isnan(dy.data()[7]));

    // clamp passes the gradient at its bounds
    testing::poison(dx);
    tie(dx) = gradients(clamp(var<0>(x), -1.0, 1.0), 1.0);
    CHECK(dx.data()[6] == 1.0);
    CHECK(dx.data()[7] == 1.0);
    CHECK(dx.data()[3] == 0.0);
}

TEST_CASE("non-floating nodes carry no gradient; cast<T> is straight-through")
{
    const auto a = draw<S>(21, {-3, 3, {0.0}}), b = draw<S>(22), dy = draw<S>(23);
    host64<S> da, db;
    testing::poison(da);
    testing::poison(db);
    // a only in a comparison, a bool operand, a cast to an integer and a sign
    tie(da, db) = gradients(where(var<0>(a) > 0.0, var<1>(b), 2.0) + cast<f64>(var<0>(a) < var<1>(b)) +
                                cast<i32>(var<0>(a) * 4.0) + sign(var<0>(a)) * 3.0 + logical_not(var<0>(a)),
                            dy);
    for (std::size_t i = 0; i < S::numel; ++i) {
        CHECK(da.data()[i] == 0.0);
        CHECK(db.data()[i] == (a.data()[i] > 0 ? dy.data()[i] : 0.0));
    }
    // the rounding of cast<f32>/cast<bf16> is ignored: d/dx cast<bf16>(3x) = 3
    testing::poison(da);
    tie(da) = gradients(cast<bf16>(var<0>(a) * 3.0) + cast<f32>(var<0>(a)), dy);
    for (std::size_t i = 0; i < S::numel; ++i) CHECK(da.data()[i] == 4.0 * dy.data()[i]);
}

TEST_CASE("variables used several times accumulate")
{
    const auto x = draw<S>(31), w = draw<S>(32), dy = draw<S>(33);
    check("x sin x", [](auto v) { return v * sin(v) + exp(v) / (1.0 + v * v); }, {}, dy, x);
    check("x, w, x again", [](auto a, auto b) { return tanh(a * b + a) * a - b * b; }, {}, dy, x, w);
}

TEST_CASE("broadcast variables are summed over their broadcast axes")
{
    using M = Shape<5, 1>;
    using N = Shape<19>;
    const auto x = draw<S>(41), w = draw<S>(42), dy = draw<S>(43);
    const auto b = draw<N>(44);
    const auto c = draw<M>(45);
    const auto s = draw<Shape<>>(46, {0.5, 2});
    check("bias [N]", [](auto xv, auto bv) { return tanh(xv + bv) * xv; }, {}, dy, x, b);
    check("column [M,1]", [](auto xv, auto cv) { return sigmoid(xv * cv) - cv; }, {}, dy, x, c);
    check("scalar tensor", [](auto xv, auto sv) { return softplus(xv * sv); }, {}, dy, x, s);
    check("bias and column", [](auto xv, auto bv, auto cv) { return gelu(xv * cv + bv) * bv; }, {}, dy, x, b, c);
    // a broadcast inside a broadcast: (b * c') [N] then [M,N]
    check("subexpression broadcast", [&](auto xv, auto bv) { return xv * sin(bv * bv + 1.0); }, {}, dy, x, b);
    // rank-3 expression, [N] and [B,1,N] variables
    using T3 = Shape<3, 4, 7>;
    check("rank 3", [](auto xv, auto bv, auto pv) { return exp(xv * 0.3 + bv) * pv; }, {}, draw<T3>(47), draw<T3>(48),
          draw<Shape<7>>(49), draw<Shape<3, 1, 7>>(50));
}

TEST_CASE("realistic expressions")
{
    using N = Shape<19>;
    using M = Shape<5, 1>;
    const auto x = draw<S>(51), w = draw<S>(52), dy = draw<S>(53), t = draw<S>(54);
    const auto b = draw<N>(55), g = draw<N>(56, {0.5, 1.5});
    const auto mean = draw<M>(57), variance = draw<M>(58, {0.2, 2});
    check("tanh(x w + b) x", [](auto xv, auto wv, auto bv) { return tanh(xv * wv + bv) * xv; }, {}, dy, x, w, b);
    check("softplus/gelu chain", [](auto xv, auto wv) { return softplus(gelu(xv) * wv) + sigmoid(xv); }, {}, dy, x, w);
    check("gelu_tanh(x w + b) silu(w)", [](auto xv, auto wv, auto bv) { return gelu_tanh(xv * wv + bv) * silu(wv); },
          {}, dy, x, w, b);
    check("normalise", [&](auto xv, auto gv, auto bv) { return (xv - mean) * rsqrt(variance + 1e-5) * gv + bv; }, {},
          dy, x, g, b);
    check("normalise, statistics as variables",
          [](auto xv, auto mv, auto vv) { return (xv - mv) * rsqrt(vv + 1e-5); }, {}, dy, x, mean, variance);
    check("squared error", [&](auto xv) { return square(xv - t) * 0.5; }, {}, dy, x);
    check("log-sum-exp of two", [](auto xv, auto wv) { return log(exp(xv) + exp(wv)); }, {}, dy, x, w);
    check("swiglu", [](auto xv, auto wv) { return silu(xv) * wv; }, {}, dy, x, w);
    // (x - w + 0.01 is never 0 for bf16 values: no tie at the kink)
    check("elu/leaky mix",
          [](auto xv, auto wv) { return elu(xv * wv, 1.0f) + leaky_relu(xv - wv + 0.01, 0.2f) * 0.5; }, {}, dy, x, w);
}

TEST_CASE("dy: a scalar, a broadcast tensor or an expression")
{
    using N = Shape<19>;
    const auto x = draw<S>(61), w = draw<S>(62);
    const auto r = draw<N>(63);
    host64<S> dx, dw, want_x, want_w, ones_like;
    host64<S> expanded;
    expanded = broadcast_to<S>(r) * 2.0;
    auto e = [&] { return sin(var<0>(x)) * var<1>(w); };
    tie(want_x, want_w) = gradients(e(), expanded);
    testing::poison(dx);
    testing::poison(dw);
    tie(dx, dw) = gradients(e(), r * 2.0);  // an [N] expression broadcast down the rows
    for (std::size_t i = 0; i < S::numel; ++i) {
        CHECK(dx.data()[i] == want_x.data()[i]);
        CHECK(dw.data()[i] == want_w.data()[i]);
    }
    testing::poison(dx);
    testing::poison(dw);
    tie(dx, dw) = gradients(e(), 1.0);
    for (std::size_t i = 0; i < S::numel; ++i) {
        CHECK(dx.data()[i] == doctest::Approx(std::cos(x.data()[i]) * w.data()[i]).epsilon(1e-14));
        CHECK(dw.data()[i] == doctest::Approx(std::sin(x.data()[i])).epsilon(1e-14));
    }
}

TEST_CASE("gradient<I> is an expression: assigned, fused into a larger one, broadcast variables summed")
{
    using N = Shape<19>;
    const auto x = draw<S>(71), w = draw<S>(72), dy = draw<S>(73);
    const auto b = draw<N>(74);
    auto e = [&] { return tanh(var<0>(x) * var<1>(w) + var<2>(b)) * var<0>(x); };
    host64<S> dx, dw;
    host64<N> db;
    tie(dx, dw, db) = gradients(e(), dy);

    host64<S> gw, stepped;
    host64<N> gb, stepped_b;
    testing::poison(gw);
    testing::poison(stepped);
    testing::poison(gb);
    testing::poison(stepped_b);
    gw = gradient<1>(e(), dy);
    gb = gradient<2>(e(), dy);                    // a reduction written straight into gb
    stepped = w - 0.1 * gradient<1>(e(), dy);     // an SGD step fused with the backward
    stepped_b = b - 0.1 * gradient<2>(e(), dy);   // the sum materialised, then the step
    // (exact up to the vectorised math functions' last bits: separate loops)
    for (std::size_t i = 0; i < S::numel; ++i) {
        CHECK(gw.data()[i] == doctest::Approx(dw.data()[i]).epsilon(1e-14));
        CHECK(stepped.data()[i] == doctest::Approx(w.data()[i] - 0.1 * dw.data()[i]).epsilon(1e-14));
    }
    for (std::size_t i = 0; i < N::numel; ++i) {
        CHECK(gb.data()[i] == doctest::Approx(db.data()[i]).epsilon(1e-14));
        CHECK(stepped_b.data()[i] == doctest::Approx(b.data()[i] - 0.1 * db.data()[i]).epsilon(1e-14));
    }
}

TEST_CASE("in place, aliasing and identity errors")
{
    const auto x = draw<S>(81);
    host64<S> d;
    d = draw<S>(82);
    host64<S> want;
    tie(want) = gradients(exp(var<0>(x)), d);
    tie(d) = gradients(exp(var<0>(x)), d);  // dy overwritten by dx, element by element: fine
    for (std::size_t i = 0; i < S::numel; ++i) CHECK(d.data()[i] == want.data()[i]);

    using Q = Shape<6, 6>;
    auto q = draw<Q>(83);
    host64<Q> dq;
    CHECK_THROWS_AS((tie(q) = gradients(var<0>(dq) * transpose(q), 1.0)), aliasing_error);
    host64<S> other, d1;
    CHECK_THROWS_AS((tie(d1) = gradients(var<0>(x) * var<0>(other), 1.0)), tenet::error);
    host64<S> moved_from = draw<S>(84);
    host64<S> sink(std::move(moved_from));
    CHECK_THROWS_AS((tie(d1) = gradients(var<0>(moved_from) * 2.0, 1.0)), tenet::error);
    host64<S> d2;
    CHECK_THROWS_AS((tie(d1, d1) = gradients(var<0>(x) * var<1>(d2), 1.0)), aliasing_error);
}

TEST_CASE("the chunk path (the device's main loop) equals the element path")
{
    // Each layout class: contiguous (vector), a bias [N] (vector), a column
    // [M,1] (uniform within a row, gathered across rows), a transposed
    // variable (gathered), a scalar; and broadcast subexpressions holding
    // constants next to variables (loaded through the remap).
    using M = Shape<6, 20>;
    const auto x = draw<M>(91), dy = draw<M>(92);
    const auto c = draw<Shape<6, 1>>(93), c2 = draw<Shape<6, 1>>(97);
    const auto s = draw<Shape<>>(94);
    const auto b = draw<Shape<20>>(95), b2 = draw<Shape<20>>(98);
    const auto y = draw<Shape<20, 6>>(96);
    auto g = gradients(tanh(var<0>(x) * var<1>(b) + var<2>(c)) * var<3>(transpose(y)) + exp(var<4>(s) * var<0>(x)) +
                           sin(var<2>(c) * c2) * (var<1>(b) - b2),
                       dy * 0.5);
    tenet::exec_context<Host> context(current_stream());
    const auto backward = detail::ad::prepare_backward(g.expression, g.upstream, context);
    auto check_chunks = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
        mismatch_log log;
        for (std::size_t i = 0; i + K <= M::numel; i += K) {
            const auto chunk = backward.template chunk<K>(i);
            for (std::size_t k = 0; k < K; ++k) {
                const auto one = backward.at(i + k);
                [&]<std::size_t... I>(std::index_sequence<I...>) {
                    ((tenet::get<I>(chunk)[k] == tenet::get<I>(one) ? void()
                                                                      : log.add("K=%zu i=%zu slot %zu", K, i + k, I)),
                     ...);
                }(std::make_index_sequence<5>{});
            }
        }
        INFO("K = ", K);
        CHECK_NO_MISMATCH(log);
    };
    check_chunks(std::integral_constant<std::size_t, 2>{});
    check_chunks(std::integral_constant<std::size_t, 4>{});
    check_chunks(std::integral_constant<std::size_t, 8>{});
}

// --- random expression trees ------------------------------------------------
//
// Each tree is chosen at compile time from a seed by an LCG: depth 3 to 6,
// over 2 variables of the expression's shape or 3 with the third broadcast
// ([N] or [M,1]), a constant tensor and scalars, from all the operations
// (domain-restricted ones behind guards: log(1 + a^2), a / (1.5 + cos b)).
// Kinks (relu, abs, min/max, clamp, where on a variable) are included: a
// finite difference straddles one with probability ~1e-6 per element.

namespace {

constexpr std::uint64_t lcg(std::uint64_t s) { return s * 6364136223846793005ULL + 1442695040888963407ULL; }
constexpr unsigned choose(std::uint64_t s, unsigned n) { return static_cast<unsigned>((s >> 33) % n); }

template <class V0, class V1, class V2, class C>
struct tree_leaves {
    V0 v0;
    V1 v1;
    V2 v2;
    C constant;
};

template <std::uint64_t Seed, int Depth, class L>
auto grow(const L& l)
{
    constexpr std::uint64_t s = lcg(Seed);
    if constexpr (Depth == 0 || (Depth == 1 && choose(s, 4) == 0)) {
        constexpr unsigned pick = choose(lcg(s), 7);
        if constexpr (pick < 2) return l.v0;
        else if constexpr (pick < 4) return l.v1;
        else if constexpr (pick < 6) return l.v2;
        else return l.constant;
    } else {
        constexpr std::uint64_t left = lcg(s ^ 0x5851F42D4C957F2DULL), right = lcg(lcg(s ^ 0x14057B7EF767814FULL));
        const auto a = [&] { return grow<left, Depth - 1>(l); };
        const auto b = [&] { return grow<right, Depth - 1>(l); };
        constexpr unsigned op = choose(lcg(lcg(s)), 36);
        if constexpr (op == 0) return a() + b();
        else if constexpr (op == 1) return a() - b();
        else if constexpr (op == 2) return a() * b();
        else if constexpr (op == 3) return a() / (1.5 + cos(b()));
        else if constexpr (op == 4) return pow(1.0 + sigmoid(a()), tanh(b()) * 2.0);
        else if constexpr (op == 5) return max(a(), b());
        else if constexpr (op == 6) return min(a(), b());
        else if constexpr (op == 7) return where(l.constant > 0.0, a(), b());
        else if constexpr (op == 8) return where(a() > b(), a() * 0.5, b());
        else if constexpr (op == 9) return -a();
        else if constexpr (op == 10) return abs(a());
        else if constexpr (op == 11) return square(tanh(a())) + a();
        else if constexpr (op == 12) return sin(a());
        else if constexpr (op == 13) return cos(a());
        else if constexpr (op == 14) return tanh(a());
        else if constexpr (op == 15) return sigmoid(a());
        else if constexpr (op == 16) return silu(a());
        else if constexpr (op == 17) return gelu(a());
        else if constexpr (op == 18) return gelu_tanh(a());
        else if constexpr (op == 19) return softplus(a());
        else if constexpr (op == 20) return relu(a()) + a() * 0.25;
        else if constexpr (op == 21) return leaky_relu(a(), 0.1f);
        else if constexpr (op == 22) return elu(a());
        else if constexpr (op == 23) return clamp(a(), -1.5, 1.5);
        else if constexpr (op == 24) return exp(tanh(a()));
        else if constexpr (op == 25) return exp2(sin(a()));
        else if constexpr (op == 26) return expm1(tanh(a()));
        else if constexpr (op == 27) return log(1.0 + square(a()));
        else if constexpr (op == 28) return log2(2.0 + cos(a()));
        else if constexpr (op == 29) return log1p(sigmoid(a()));
        else if constexpr (op == 30) return sqrt(1.0 + square(a()));
        else if constexpr (op == 31) return rsqrt(2.0 + sin(a()));
        else if constexpr (op == 32) return reciprocal(2.0 + tanh(a()));
        else if constexpr (op == 33) return a() * 0.7 + 0.3;
        else if constexpr (op == 34) return a() * b() + sin(b());
        else return cast<f64>(a()) * b();
    }
}

// The tree, plus 0.5 sin(var<k>) for each variable k it does not hold (the
// variables must be numbered without gaps).
template <std::size_t K, class E, class V>
auto pad(E e, const V& v)
{
    if constexpr (std::is_void_v<detail::ad::variable_t<E, K>>) return e + sin(v) * 0.5;
    else return e;
}

template <std::uint64_t Seed>
void random_tree()
{
    using Full = Shape<6, 21>;
    constexpr unsigned kind = choose(lcg(Seed ^ 0xABCDEF), 3);  // 2 variables; 3 with [21]; 3 with [6,1]
    constexpr int depth = 3 + static_cast<int>(choose(lcg(lcg(Seed)), 4));
    using Third = std::conditional_t<kind == 1, Shape<21>, Shape<6, 1>>;
    // (f64 only: inputs not rounded to bf16, so that two tensors never hold
    // equal values -- a tie in max(x0, x2) is a kink)
    const domain d{-3, 3, {}, 0, false};
    const auto x0 = draw<Full>(Seed, d), x1 = draw<Full>(Seed + 1, d), constant = draw<Full>(Seed + 2, d);
    const auto x2 = draw<Third>(Seed + 3, d);
    const auto dy = draw<Full>(Seed + 4, d);
    char name[64];
    std::snprintf(name, sizeof name, "random tree %llu (kind %u, depth %d)", static_cast<unsigned long long>(Seed),
                  kind, depth);
    const auto c = constant.view();
    if constexpr (kind == 0) {
        const auto make = [&](auto a, auto b) {
            using leaves = tree_leaves<decltype(a), decltype(b), decltype(a), decltype(c)>;
            return pad<1>(pad<0>(grow<Seed, depth>(leaves{a, b, a, c}), a), b);
        };
        check<storages::f64>(name, make, {}, dy, x0, x1);
    } else {
        const auto make = [&](auto a, auto b, auto v) {
            using leaves = tree_leaves<decltype(a), decltype(b), decltype(v), decltype(c)>;
            return pad<2>(pad<1>(pad<0>(grow<Seed, depth>(leaves{a, b, v, c}), a), b), v);
        };
        check<storages::f64>(name, make, {}, dy, x0, x1, x2);
    }
}

template <std::size_t... I>
void random_trees(std::index_sequence<I...>)
{
    (random_tree<lcg(0x1234 + 977 * I)>(), ...);
}

}  // namespace

TEST_CASE("randomly generated expression trees match finite differences")
{
    random_trees(std::make_index_sequence<24>{});
}
