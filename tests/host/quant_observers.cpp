// Quantization parameters (choose_affine) and the observers that conclude
// them, against PyTorch's formulas worked by hand and written out in float64,
// brute-force searches, and reconstruction errors computed in float64.
#include <doctest/doctest.h>
#include <tenet/expr/views.hpp>
#include <tenet/quant/observers.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

using namespace tenet;
using namespace tenet::quant;

namespace {

constexpr scheme symmetric_full{true, false};
constexpr scheme asymmetric_narrow{false, true};
constexpr scheme all_schemes[] = {activation_scheme, weight_scheme, symmetric_full, asymmetric_narrow};

// PyTorch's _calculate_qparams, in float64.
struct reference_params {
    double scale;
    double zero_point;
    double unrounded;  // qmin - min / scale before rounding: ties are ambiguous
};
reference_params reference(double min, double max, scheme s)
{
    const double lo = std::min(min, 0.0), hi = std::max(max, 0.0);
    const double qmin = s.narrow_range ? -127 : -128, qmax = 127;
    if (s.symmetric) return {std::max(std::max(-lo, hi) / ((qmax - qmin) / 2), double(s.eps)), 0, 0};
    const double scale = std::max((hi - lo) / (qmax - qmin), double(s.eps));
    const double zero = qmin - std::nearbyint(lo / scale);  // nearest even
    return {scale, std::clamp(zero, qmin, qmax), qmin - lo / scale};
}

// x -> dequantize(quantize(x)) with PyTorch's formula, in float64.
double reconstruct(double x, affine a, scheme s)
{
    const double q = std::clamp(std::nearbyint(x / a.scale) + a.zero_point, double(s.qmin()), double(s.qmax()));
    return (q - a.zero_point) * a.scale;
}
double reconstruction_mse(const std::vector<float>& x, affine a, scheme s)
{
    double sum = 0;
    for (float v : x) sum += std::pow(v - reconstruct(v, a, s), 2);
    return sum / static_cast<double>(x.size());
}

template <class T, class S>
void fill(Tensor<T, S, Host>& t, const std::vector<float>& values)
{
    for (std::size_t i = 0; i < S::numel; ++i) t.data()[i] = convert<T>(values[i]);
}
std::vector<float> normals(std::size_t n, std::uint64_t seed, double mean = 0, double sd = 1)
{
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal(mean, sd);
    std::vector<float> v(n);
    for (float& x : v) x = static_cast<float>(normal(rng));
    return v;
}

void check_params(const quant_params& p, std::size_t channel, float min, float max)
{
    const affine want = choose_affine(min, max, p.s);
    CHECK(p.at(channel).scale == want.scale);
    CHECK(p.at(channel).zero_point == want.zero_point);
}

}  // namespace

TEST_CASE("choose_affine: hand-computed values as PyTorch computes them")
{
    // asymmetric: scale = (max - min) / 255, zero point = -128 - round(min / scale)
    CHECK(choose_affine(-1, 3, activation_scheme).scale == 4.0f / 255.0f);
    CHECK(choose_affine(-1, 3, activation_scheme).zero_point == -64);  // -1 / (4/255) = -63.75
    CHECK(choose_affine(-2.5f, 252.5f, activation_scheme).zero_point == -126);  // scale 1, -2.5 -> -2 (even)
    CHECK(choose_affine(-3.5f, 251.5f, activation_scheme).zero_point == -124);  // -3.5 -> -4 (even)
    // the range is widened to contain zero: zero stays representable, the zero point at an end
    CHECK(choose_affine(2, 5, activation_scheme).scale == 5.0f / 255.0f);
    CHECK(choose_affine(2, 5, activation_scheme).zero_point == -128);
    CHECK(choose_affine(-5, -2, activation_scheme).scale == 5.0f / 255.0f);
    CHECK(choose_affine(-5, -2, activation_scheme).zero_point == 127);
    // narrow range: 254 steps from -127
    CHECK(choose_affine(-1, 253, asymmetric_narrow).scale == 1.0f);
    CHECK(choose_affine(-1, 253, asymmetric_narrow).zero_point == -126);
    CHECK(choose_affine(-0.5f, 253.5f, asymmetric_narrow).zero_point == -127);  // -0.5 -> 0 (even)
    // symmetric: scale = max(-min, max) / ((qmax - qmin) / 2), zero point 0
    CHECK(choose_affine(-2, 1, weight_scheme).scale == 2.0f / 127.0f);
    CHECK(choose_affine(-2, 1, weight_scheme).zero_point == 0);
    CHECK(choose_affine(-2, 1, symmetric_full).scale == 2.0f / 127.5f);
    CHECK(choose_affine(0.5f, 3, weight_scheme).scale == 3.0f / 127.0f);
    // eps: an all-zero tensor still gets a usable scale
    CHECK(choose_affine(0, 0, activation_scheme).scale == default_eps);
    CHECK(choose_affine(0, 0, activation_scheme).zero_point == -128);
    CHECK(choose_affine(0, 0, weight_scheme).scale == default_eps);
    CHECK(choose_affine(0, 0, weight_scheme).zero_point == 0);
    constexpr scheme coarse{false, false, 1e-3f};
    CHECK(choose_affine(0, 0.01f, coarse).scale == 1e-3f);
    CHECK(choose_affine(-0.01f, 0.01f, coarse).zero_point == -118);  // scale clamped to eps first
    static_assert(choose_affine(-1, 3, activation_scheme).zero_point == -64, "usable in constant expressions");
}

TEST_CASE("choose_affine: random ranges against float64 PyTorch; zero always representable")
{
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> exponent(-12, 12), unit(0, 1);
    for (const scheme s : all_schemes) {
        for (int i = 0; i < 2000; ++i) {
            const float a = static_cast<float>((unit(rng) < 0.5 ? -1 : 1) * std::exp(exponent(rng)));
            const float b = static_cast<float>((unit(rng) < 0.5 ? -1 : 1) * std::exp(exponent(rng)));
            const float min = std::min(a, b), max = std::max(a, b);
            const affine got = choose_affine(min, max, s);
            const reference_params want = reference(min, max, s);
            CAPTURE(min);
            CAPTURE(max);
            CHECK(std::fabs(got.scale - want.scale) <= 0x1p-22 * want.scale);
            const double tie_distance = std::fabs(want.unrounded - std::floor(want.unrounded) - 0.5);
            if (tie_distance > 1e-4) CHECK(got.zero_point == want.zero_point);
            // zero quantizes to the zero point, which dequantizes to exactly 0
            CHECK(got.zero_point >= s.qmin());
            CHECK(got.zero_point <= s.qmax());
            // and the observed range is covered, up to half a step
            if (got.scale > s.eps) {
                CHECK((s.qmin() - got.zero_point) * double(got.scale) <= std::min(min, 0.0f) + 0.5001 * got.scale);
                CHECK((s.qmax() - got.zero_point) * double(got.scale) >= std::max(max, 0.0f) - 0.5001 * got.scale);
            }
        }
    }
}

TEST_CASE("scale_from_range and zero_point_from_range in an expression equal choose_affine")
{
    Tensor<f32, Shape<8>, Host> lo, hi;
    fill(lo, {-1, 0, -5, -2.5f, -0.25f, 0, -7, -3});
    fill(hi, {3, 0, -2, 252.5f, 0.75f, 9, 1e-3f, 3});
    Tensor<f32, Shape<8>, Host> scale;
    Tensor<i32, Shape<8>, Host> zero;
    std::fill(scale.data(), scale.data() + 8, -1.0f);
    std::fill(zero.data(), zero.data() + 8, 999);
    scale = tenet::internal::make_map(scale_from_range{activation_scheme}, lo, hi);
    zero = tenet::internal::make_map(zero_point_from_range{activation_scheme}, lo, hi);
    for (std::size_t i = 0; i < 8; ++i) {
        const affine want = choose_affine(lo(i), hi(i), activation_scheme);
        CHECK(scale(i) == want.scale);
        CHECK(zero(i) == want.zero_point);
    }
}

TEST_CASE("quant_params::at names the channel it lacks")
{
    const quant_params p{{0.5f, 0.25f}, {3, -4}, 0, weight_scheme};
    CHECK(p.at(1).scale == 0.25f);
    CHECK(p.at(1).zero_point == -4);
    CHECK_THROWS_WITH_AS(p.at(2), "tenet: quant_params::at: channel 2 of 2", index_error);
}

TEST_CASE("min_max_observer per tensor: hand-computed ranges and parameters")
{
    min_max_observer<> observer;
    CHECK_THROWS_WITH_AS(observer.params(), "tenet: min_max_observer::params: it observed nothing", tenet::error);
    Tensor<f32, Shape<2, 3>, Host> a, b;
    fill(a, {0.5f, -1, 2, 0.25f, 1.5f, -0.75f});
    fill(b, {3, 0, 0.1f, -0.5f, 1, 2.5f});
    observer.observe(a);
    CHECK(observer.min() == std::vector<float>{-1});
    CHECK(observer.max() == std::vector<float>{2});
    CHECK(observer.params().scale == std::vector<float>{3.0f / 255.0f});
    CHECK(observer.params().zero_point == std::vector<std::int32_t>{-43});  // -128 - round(-85)
    observer.observe(b.view());
    CHECK(observer.count() == 2);
    CHECK(observer.min() == std::vector<float>{-1});
    CHECK(observer.max() == std::vector<float>{3});
    const quant_params p = observer.params();
    CHECK(p.axis == -1);
    CHECK(p.scale == std::vector<float>{4.0f / 255.0f});
    CHECK(p.zero_point == std::vector<std::int32_t>{-64});

    min_max_observer<> weights(weight_scheme);
    weights.observe(a);
    CHECK(weights.params().scale == std::vector<float>{2.0f / 127.0f});
    CHECK(weights.params().zero_point == std::vector<std::int32_t>{0});
    CHECK(weights.params().s.narrow_range);

    observer.reset();
    CHECK(observer.count() == 0);
    CHECK(observer.min().empty());
    CHECK_THROWS_AS(observer.params(), tenet::error);
}

TEST_CASE("min_max_observer per channel, axis 0 and 1: a channel with a huge range leaves the others alone")
{
    constexpr std::size_t C = 6, K = 40;
    using S = Shape<C, K>;
    // two batches each: row 2 huge for the per-row observers, column 5 for the per-column one
    std::vector<std::vector<float>> row_batches, column_batches;
    for (std::uint64_t seed : {11, 12}) {
        row_batches.push_back(normals(C * K, seed, 0.5, 2));
        column_batches.push_back(normals(C * K, seed + 10, -0.5, 1));
        for (std::size_t k = 0; k < K; ++k) row_batches.back()[2 * K + k] *= 1000;
        for (std::size_t c = 0; c < C; ++c) column_batches.back()[c * K + 5] *= 1000;
    }
    // reference: per row and per column over both batches, in float64
    std::vector<double> row_lo(C, INFINITY), row_hi(C, -INFINITY), col_lo(K, INFINITY), col_hi(K, -INFINITY);
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t c = 0; c < C; ++c)
            for (std::size_t k = 0; k < K; ++k) {
                const double r = row_batches[b][c * K + k], q = column_batches[b][c * K + k];
                row_lo[c] = std::min(row_lo[c], r), row_hi[c] = std::max(row_hi[c], r);
                col_lo[k] = std::min(col_lo[k], q), col_hi[k] = std::max(col_hi[k], q);
            }

    min_max_observer<per_channel<0>> rows(weight_scheme);
    min_max_observer<per_channel<1>> columns, transposed(weight_scheme);
    min_max_observer<> whole(weight_scheme);
    for (std::size_t b = 0; b < 2; ++b) {
        Tensor<f32, S, Host> r, q;
        fill(r, row_batches[b]);
        fill(q, column_batches[b]);
        rows.observe(r);
        whole.observe(r);
        transposed.observe(transpose(r));  // its channel axis 1 is r's axis 0
        columns.observe(q);
    }
    const quant_params pr = rows.params(), pc = columns.params();
    REQUIRE(pr.scale.size() == C);
    REQUIRE(pc.scale.size() == K);
    CHECK(pr.axis == 0);
    CHECK(pc.axis == 1);
    for (std::size_t c = 0; c < C; ++c) {
        CHECK(rows.min()[c] == row_lo[c]);
        CHECK(rows.max()[c] == row_hi[c]);
        check_params(pr, c, float(row_lo[c]), float(row_hi[c]));
        if (c != 2) CHECK(pr.at(c).scale * 100 < pr.at(2).scale);
    }
    for (std::size_t k = 0; k < K; ++k) {
        CHECK(columns.min()[k] == col_lo[k]);
        CHECK(columns.max()[k] == col_hi[k]);
        check_params(pc, k, float(col_lo[k]), float(col_hi[k]));
        if (k != 5) CHECK(pc.at(k).scale * 100 < pc.at(5).scale);
    }
    // per tensor, the huge channel sets everyone's scale
    CHECK(whole.params().scale[0] == pr.at(2).scale);
    CHECK(transposed.min() == rows.min());
    CHECK(transposed.max() == rows.max());
}

TEST_CASE("min_max_observer: bf16 tensors and a vector per channel")
{
    const std::vector<float> v = normals(5 * 8, 21, 0, 3);
    Tensor<bf16, Shape<5, 8>, Host> x;
    fill(x, v);
    min_max_observer<per_channel<0>> rows;
    rows.observe(x);
    for (std::size_t c = 0; c < 5; ++c) {
        float lo = INFINITY, hi = -INFINITY;
        for (std::size_t k = 0; k < 8; ++k) {
            lo = std::min(lo, convert<f32>(x(c, k)));
            hi = std::max(hi, convert<f32>(x(c, k)));
        }
        CHECK(rows.min()[c] == lo);
        CHECK(rows.max()[c] == hi);
    }
    Tensor<f32, Shape<5>, Host> vec;
    fill(vec, v);
    min_max_observer<per_channel<0>> each;
    each.observe(vec);
    CHECK(each.min() == std::vector<float>(v.begin(), v.begin() + 5));
    CHECK(each.max() == std::vector<float>(v.begin(), v.begin() + 5));
}

TEST_CASE("moving_average_observer over 3 batches equals the hand formula")
{
    constexpr double c = 0.1;
    constexpr std::size_t C = 4, K = 16;
    moving_average_observer<> whole(activation_scheme, float(c));
    moving_average_observer<per_channel<0>> rows(activation_scheme, float(c));
    std::vector<double> lo(C + 1), hi(C + 1);  // [C]: per tensor
    for (int batch = 0; batch < 3; ++batch) {
        const std::vector<float> v = normals(C * K, 31 + batch, batch - 1.0, 1.0 + batch);
        Tensor<f32, Shape<C, K>, Host> x;
        fill(x, v);
        whole.observe(x);
        rows.observe(x);
        for (std::size_t r = 0; r <= C; ++r) {
            const auto first = v.begin() + (r == C ? 0 : r * K), last = r == C ? v.end() : first + K;
            const double batch_lo = *std::min_element(first, last), batch_hi = *std::max_element(first, last);
            lo[r] = batch == 0 ? batch_lo : lo[r] + c * (batch_lo - lo[r]);  // the first batch sets the range
            hi[r] = batch == 0 ? batch_hi : hi[r] + c * (batch_hi - hi[r]);
        }
    }
    CHECK(whole.count() == 3);
    CHECK(whole.min()[0] == doctest::Approx(lo[C]).epsilon(1e-6));
    CHECK(whole.max()[0] == doctest::Approx(hi[C]).epsilon(1e-6));
    check_params(whole.params(), 0, whole.min()[0], whole.max()[0]);
    for (std::size_t r = 0; r < C; ++r) {
        CHECK(rows.min()[r] == doctest::Approx(lo[r]).epsilon(1e-6));
        CHECK(rows.max()[r] == doctest::Approx(hi[r]).epsilon(1e-6));
    }
    CHECK_THROWS_AS(moving_average_observer<>(activation_scheme, 0.0f), tenet::error);
    CHECK_THROWS_AS(moving_average_observer<>(activation_scheme, 1.5f), tenet::error);
}

TEST_CASE("histogram: re-binning spreads counts in proportion and keeps the total")
{
    quant::detail::histogram h(4);
    const float first[] = {0, 1, 2, 3, 4};
    h.add(first, 5);  // [0, 4], width 1; 4 lands in the last bin
    CHECK(h.counts() == std::vector<double>{1, 1, 1, 2});
    const float left[] = {-2};
    h.add(left, 1);  // [-2, 4], width 1.5: old bin [2, 3] is split half and half
    CHECK(h.lo() == -2);
    CHECK(h.hi() == 4);
    const double spread[] = {1, 1, 1.5, 2.5};
    for (std::size_t b = 0; b < 4; ++b) CHECK(h.counts()[b] == doctest::Approx(spread[b]).epsilon(1e-12));
    CHECK(h.total() == 6);

    quant::detail::histogram constant(4);
    const float same[] = {3, 3, 3, NAN, INFINITY};
    constant.add(same, 5);  // the non-finite values are not counted
    CHECK(constant.total() == 3);
    const float five[] = {5};
    constant.add(five, 1);  // [3, 5]: the three 3s all in the first bin
    CHECK(constant.counts() == std::vector<double>{3, 0, 0, 1});

    // many widenings on random data: the counts still sum to the total
    quant::detail::histogram grown(50);
    std::size_t added = 0;
    for (int batch = 0; batch < 20; ++batch) {
        const std::vector<float> v = normals(100 + batch, 40 + batch, 0.3 * batch, 1 + batch);
        grown.add(v.data(), v.size());
        added += v.size();
    }
    double sum = 0;
    for (double c : grown.counts()) sum += c;
    CHECK(grown.total() == double(added));
    CHECK(sum == doctest::Approx(double(added)).epsilon(1e-12));
}

TEST_CASE("percentile_observer on 0..9999: the 0.01% and 99.99% points, interpolated inside bins")
{
    constexpr std::size_t n = 10000;
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = float(i) - 5000;  // -5000 .. 4999
    std::shuffle(v.begin(), v.end(), std::mt19937_64(3));
    Tensor<f32, Shape<n>, Host> x;
    fill(x, v);
    percentile_observer observer;
    CHECK_THROWS_WITH_AS(observer.params(), "tenet: percentile_observer::params: it observed nothing", tenet::error);
    observer.observe(x);
    // bins of w = 9999/2048: the first and last hold 5 values each, so the 1st
    // value sits 1/5 into the first bin and the 9999th 4/5 into the last
    const double w = 9999.0 / 2048;
    const affine want = choose_affine(float(-5000 + w / 5), float(-5000 + 2047.8 * w), activation_scheme);
    CHECK(observer.params().scale[0] == doctest::Approx(want.scale).epsilon(1e-6));
    CHECK(observer.params().zero_point[0] == want.zero_point);
    CHECK(observer.min()[0] == -5000);
    CHECK(observer.max()[0] == 4999);

    // in two halves: the second widens the range, the answer moves less than a bin
    percentile_observer halves;
    Tensor<f32, Shape<n / 2>, Host> lower, upper;
    std::sort(v.begin(), v.end());
    fill(lower, std::vector<float>(v.begin(), v.begin() + n / 2));
    fill(upper, std::vector<float>(v.begin() + n / 2, v.end()));
    halves.observe(lower);
    halves.observe(upper);
    CHECK(std::fabs(halves.params().scale[0] - want.scale) < 2 * w / 255);

    // the 100th percentile is the min-max range
    percentile_observer all(weight_scheme, 100.0, 512);
    min_max_observer<> extremes(weight_scheme);
    const std::vector<float> r = normals(n, 5);
    fill(x, r);
    all.observe(x);
    extremes.observe(x);
    CHECK(all.params().scale[0] == doctest::Approx(extremes.params().scale[0]).epsilon(1e-6));
    CHECK_THROWS_AS(percentile_observer(activation_scheme, 101.0), tenet::error);
    CHECK_THROWS_AS(percentile_observer(activation_scheme, 99.0, 0), tenet::error);
}

TEST_CASE("mse_observer: close to the best range found by brute force")
{
    // 4096 N(0, 1) samples, each 256 times, two of the copies replaced by
    // outliers at +60 and -40: over 2^20 values clipping the outliers pays,
    // and the brute force below reconstructs 4098 distinct values, weighted.
    const std::vector<float> base = normals(4096, 51);
    Tensor<f32, Shape<1024, 1024>, Host> x;
    for (std::size_t i = 0; i < x.numel; ++i) x.data()[i] = base[i % base.size()];
    x.data()[0] = 60;
    x.data()[1] = -40;
    std::vector<double> weight(base.size(), 256);
    weight[0] = weight[1] = 255;
    std::vector<float> v = base;
    v.insert(v.end(), {60, -40});
    weight.insert(weight.end(), {1, 1});
    const auto mse = [&](affine a) {
        double sum = 0;
        for (std::size_t i = 0; i < v.size(); ++i)
            sum += weight[i] * std::pow(v[i] - reconstruct(v[i], a, activation_scheme), 2);
        return sum / double(x.numel);
    };
    constexpr std::size_t bins = 128;
    mse_observer observer(activation_scheme, bins);
    observer.observe(x);
    const double lo = observer.min()[0], hi = observer.max()[0], w = (hi - lo) / bins;
    double best = INFINITY;
    for (int i = 0; lo + i * w < 0; ++i)
        for (int j = 0; hi - j * w > 0; ++j)
            best = std::min(best, mse(choose_affine(float(lo + i * w), float(hi - j * w), activation_scheme)));
    const double got = mse(observer.params().at(0));
    const double min_max = mse(choose_affine(float(lo), float(hi), activation_scheme));
    MESSAGE("mse observer ", got, ", best ", best, ", min-max ", min_max);
    CHECK(got <= 1.05 * best);
    CHECK(got < 0.5 * min_max);

    observer.reset();
    CHECK(observer.count() == 0);
    CHECK_THROWS_AS(observer.params(), tenet::error);
    Tensor<f32, Shape<4>, Host> constant;
    fill(constant, {2, 2, 2, 2});
    observer.observe(constant);  // one value: no range to search
    check_params(observer.params(), 0, 2, 2);
}

TEST_CASE("calibration with rare outliers: percentile and MSE observers reconstruct better than min-max")
{
    // 2^20 N(0, 1) samples in 4 batches, one at +60 in the second and one at
    // -60 in the third. Clipping the 2 outliers costs ~2 * 56^2 / 2^20 = 0.006
    // of squared error per value; keeping them makes the step 120/255, whose
    // rounding costs ~0.47^2 / 12 = 0.018 for every value.
    using S = Shape<256, 1024>;
    std::vector<float> all;
    min_max_observer<> min_max;
    percentile_observer percentile;
    mse_observer mse;
    for (int batch = 0; batch < 4; ++batch) {
        std::vector<float> v = normals(S::numel, 60 + batch);
        if (batch == 1) v[1000] = 60;
        if (batch == 2) v[77] = -60;
        Tensor<f32, S, Host> x;
        fill(x, v);
        min_max.observe(x);
        percentile.observe(x);
        mse.observe(x);
        all.insert(all.end(), v.begin(), v.end());
    }
    const double e_min_max = reconstruction_mse(all, min_max.params().at(0), activation_scheme);
    const double e_percentile = reconstruction_mse(all, percentile.params().at(0), activation_scheme);
    const double e_mse = reconstruction_mse(all, mse.params().at(0), activation_scheme);
    MESSAGE("reconstruction MSE: min-max ", e_min_max, ", percentile ", e_percentile, ", mse ", e_mse);
    CHECK(e_percentile < 0.5 * e_min_max);
    CHECK(e_mse < 0.5 * e_min_max);
    CHECK(e_mse <= e_percentile);
}

#if TENET_CUDA_COMPILER
// Not Shape<6, 40>: written once above as Shape<C, K>, that type is printed by
// nvcc's front end as Shape<unsigned long((6)), ...>, which g++ rejects.
using device_shape = Shape<8, 24>;

TEST_CASE("observers: device tensors give the host's parameters (device; skipped without one)")
{
    if (!has_device()) return;
    const std::vector<float> v = normals(device_shape::numel, 71, 0.25, 2);
    Tensor<f32, device_shape, Host> h;
    fill(h, v);
    Tensor<f32, device_shape, Device> d;
    copy(d, h);
    min_max_observer<per_channel<1>> on_host, on_device;  // a reduction over axis 0
    moving_average_observer<> whole_host, whole_device;      // over every element
    percentile_observer hist_host, hist_device;              // the tensor copied back
    on_host.observe(h);
    on_device.observe(d);
    whole_host.observe(h);
    whole_device.observe(d);
    hist_host.observe(h);
    hist_device.observe(d.view());
    CHECK(on_device.min() == on_host.min());
    CHECK(on_device.max() == on_host.max());
    CHECK(whole_device.min() == whole_host.min());
    CHECK(whole_device.max() == whole_host.max());
    CHECK(hist_device.params().scale == hist_host.params().scale);
    CHECK(hist_device.params().zero_point == hist_host.params().zero_point);
}
#endif
