// int8 quantization: quantize / dequantize / fake_quantize / the STE mask
// against the formulas written out in double (exhaustively over int8 where
// the domain is small), qtensor, and int8_gemm against an int64 reference.
#include "tensor_testing.hpp"

#include <tenet/linalg/int8_gemm.hpp>
#include <tenet/quant/qtensor.hpp>
#include <tenet/quant/quantize.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

using namespace tenet;

namespace {

const quant::scheme full_symmetric{true, false};
const quant::scheme narrow_asymmetric{false, true};

// The formula, in double: clamp(nearbyint(x * (1 / scale)) + zp), the product
// rounded to f32 as PyTorch's kernels compute it; NaN -> zp.
long long reference_quantize(float x, float scale, long long zp, quant::scheme s)
{
    const float inverse = 1.0f / scale;
    const double product = static_cast<double>(x * inverse);
    const double q = std::isnan(product) ? static_cast<double>(zp) : std::nearbyint(product) + static_cast<double>(zp);
    return static_cast<long long>(q < s.qmin() ? s.qmin() : (q > s.qmax() ? s.qmax() : q));
}

bool reference_mask(float x, float scale, long long zp, quant::scheme s)
{
    const double product = static_cast<double>(x * (1.0f / scale));
    const double q = std::isnan(product) ? static_cast<double>(zp) : std::nearbyint(product) + static_cast<double>(zp);
    return q >= s.qmin() && q <= s.qmax();
}

double uniform(std::mt19937_64& rng) { return std::uniform_real_distribution<double>(-6.0, 6.0)(rng); }

template <class S>
void fill_int8(Tensor<i8, S, Host>& t, std::uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int> value(-128, 127);
    for (std::size_t i = 0; i < S::numel; ++i) t.data()[i] = static_cast<i8>(value(rng));
}

}  // namespace

TEST_CASE("quantize: every int8 value survives dequantize -> quantize, for each scheme")
{
    const quant::scheme schemes[] = {quant::activation_scheme, quant::weight_scheme, full_symmetric, narrow_asymmetric};
    for (const quant::scheme s : schemes) {
        const float scale = 0.0173f;
        const i32 zp = s.symmetric ? 0 : -7;
        Tensor<i8, Shape<256>, Host> q, back;
        Tensor<f32, Shape<256>, Host> x;
        for (int i = 0; i < 256; ++i) q.data()[i] = static_cast<i8>(i - 128);
        testing::poison(x);
        testing::poison(back);
        x = quant::dequantize(q, scale, zp);
        back = quant::quantize(x, scale, zp, s);
        for (int i = 0; i < 256; ++i) {
            const int v = i - 128;
            CAPTURE(v);
            CHECK(x.data()[i] == static_cast<float>(static_cast<double>(v - zp) * scale));
            CHECK(back.data()[i] == (v < s.qmin() ? s.qmin() : v));
        }
    }
}

TEST_CASE("quantize: half-way points round to even")
{
    // A power-of-two scale keeps x * (1 / scale) exact: x / scale - zp is exactly q + 0.5.
    const float scale = 0x1p-5f;
    for (const i32 zp : {0, -3, 10}) {
        Tensor<f32, Shape<256>, Host> x;
        Tensor<i8, Shape<256>, Host> q;
        for (int i = 0; i < 256; ++i) x.data()[i] = (static_cast<float>(i - 128 - zp) + 0.5f) * scale;
        testing::poison(q);
        q = quant::quantize(x, scale, zp);
        for (int i = 0; i < 256; ++i) {
            const int n = i - 128 - zp;                       // x / scale = n + 0.5
            const int even = (n % 2 == 0 ? n : n + 1) + zp;  // the even one of n, n + 1
            CAPTURE(n);
            CHECK(q.data()[i] == (even > 127 ? 127 : (even < -128 ? -128 : even)));
        }
    }
}

TEST_CASE("quantize multiplies by the reciprocal of the scale, as PyTorch does")
{
    // x / 0.1f rounds to -121 and -75 here, x * (1 / 0.1f) to -122 and -76 (PyTorch's answers)
    Tensor<f32, Shape<2>, Host> x;
    x.data()[0] = -0x1.84ccccp+3f;
    x.data()[1] = -0x1.e33332p+2f;
    Tensor<i8, Shape<2>, Host> q;
    testing::poison(q);
    q = quant::quantize(x, 0.1f, 0);
    CHECK(q.data()[0] == -122);
    CHECK(q.data()[1] == -76);
}

TEST_CASE("quantize: extremes saturate, NaN gives the zero point")
{
    const float inf = std::numeric_limits<float>::infinity(), big = std::numeric_limits<float>::max();
    Tensor<f32, Shape<8>, Host> x;
    const float values[8] = {inf, -inf, std::nanf(""), big, -big, 1e30f, -1e30f, 0.0f};
    for (int i = 0; i < 8; ++i) x.data()[i] = values[i];
    // a large zero point: +inf saturated to the int32 range plus zp must not wrap around
    for (const i32 zp : {0, 100, -100}) {
        Tensor<i8, Shape<8>, Host> q;
        testing::poison(q);
        q = quant::quantize(x, 0.01f, zp);
        const int want[8] = {127, -128, zp, 127, -128, 127, -128, zp};
        for (int i = 0; i < 8; ++i) CHECK(q.data()[i] == want[i]);
        Tensor<bool, Shape<8>, Host> mask = quant::fake_quantize_mask(x, 0.01f, zp);
        const bool in_range[8] = {false, false, true, false, false, false, false, true};
        for (int i = 0; i < 8; ++i) CHECK(mask.data()[i] == in_range[i]);
    }
}

TEST_CASE("quantize: random inputs against the formula, per tensor and per channel on either axis")
{
    using S = Shape<8, 130>;
    Tensor<f32, S, Host> x;
    testing::fill_random(x, 11, &uniform);
    std::mt19937_64 specials(13);  // every 37th element from the whole range: huge, tiny, inf, NaN
    for (std::size_t i = 0; i < S::numel; i += 37) x.data()[i] = static_cast<float>(testing::draw<f32>(specials));
    // scales spread over two decades; asymmetric zero points anywhere in range
    std::mt19937_64 rng(12);
    std::uniform_real_distribution<float> log_scale(-5.0f, -0.5f);
    std::uniform_int_distribution<int> zero(-128, 127);
    Tensor<f32, Shape<8, 1>, Host> row_scale;
    Tensor<i32, Shape<8, 1>, Host> row_zp;
    Tensor<f32, Shape<1, 130>, Host> column_scale;
    Tensor<i32, Shape<1, 130>, Host> column_zp;
    for (std::size_t r = 0; r < 8; ++r) row_scale.data()[r] = std::exp(log_scale(rng)), row_zp.data()[r] = zero(rng);
    for (std::size_t c = 0; c < 130; ++c)
        column_scale.data()[c] = std::exp(log_scale(rng)), column_zp.data()[c] = zero(rng);
    const float tensor_scale = 0.0371f;
    const i32 tensor_zp = -17;

    Tensor<i8, S, Host> per_tensor, per_row, per_column, narrow;
    for (auto* t : {&per_tensor, &per_row, &per_column, &narrow}) testing::poison(*t);
    per_tensor = quant::quantize(x, tensor_scale, tensor_zp);
    per_row = quant::quantize(x, row_scale, row_zp);
    per_column = quant::quantize(x, column_scale, column_zp);
    narrow = quant::quantize(x, row_scale, 0, quant::weight_scheme);
    for (std::size_t r = 0; r < 8; ++r)
        for (std::size_t c = 0; c < 130; ++c) {
            const float v = x(r, c);
            CAPTURE(v);
            CHECK(per_tensor(r, c) == reference_quantize(v, tensor_scale, tensor_zp, quant::activation_scheme));
            CHECK(per_row(r, c) == reference_quantize(v, row_scale(r, 0), row_zp(r, 0), quant::activation_scheme));
            CHECK(per_column(r, c) ==
                  reference_quantize(v, column_scale(0, c), column_zp(0, c), quant::activation_scheme));
            CHECK(narrow(r, c) == reference_quantize(v, row_scale(r, 0), 0, quant::weight_scheme));
        }

    // dequantize broadcasts the same way: (q - zp) * scale, in double, rounded once
    Tensor<f32, S, Host> restored;
    testing::poison(restored);
    restored = quant::dequantize(per_row, row_scale, row_zp);
    for (std::size_t r = 0; r < 8; ++r)
        for (std::size_t c = 0; c < 130; ++c)
            CHECK(restored(r, c) ==
                  static_cast<float>(static_cast<double>(per_row(r, c) - row_zp(r, 0)) * row_scale(r, 0)));
}

TEST_CASE("fake_quantize equals dequantize(quantize(x)); bf16 inputs quantize as their f32 values")
{
    using S = Shape<3, 257>;
    Tensor<f32, S, Host> x, fake, two_step;
    testing::fill_random(x, 21);  // includes inf, NaN, huge and tiny values
    Tensor<f32, Shape<3, 1>, Host> scale;
    Tensor<i32, Shape<3, 1>, Host> zp;
    const float scales[3] = {0.02f, 0.3f, 1.7f};
    const i32 zps[3] = {-128, 5, 127};
    for (int r = 0; r < 3; ++r) scale.data()[r] = scales[r], zp.data()[r] = zps[r];
    testing::poison(fake);
    testing::poison(two_step);
    fake = quant::fake_quantize(x, scale, zp);
    two_step = quant::dequantize(quant::quantize(x, scale, zp), scale, zp);
    for (std::size_t i = 0; i < S::numel; ++i) CHECK(fake.data()[i] == two_step.data()[i]);

    Tensor<bf16, S, Host> narrow = x;
    Tensor<f32, S, Host> widened = narrow;
    Tensor<i8, S, Host> from_bf16, from_f32;
    from_bf16 = quant::quantize(narrow, scale, zp, narrow_asymmetric);
    from_f32 = quant::quantize(widened, scale, zp, narrow_asymmetric);
    for (std::size_t i = 0; i < S::numel; ++i) CHECK(from_bf16.data()[i] == from_f32.data()[i]);
}

TEST_CASE("fake_quantize_mask: the STE passes exactly where round(x / scale) + zp is in range")
{
    // x on a grid of quarter steps across both clamp boundaries (ties included)
    const float scale = 0.5f;
    for (const quant::scheme s : {quant::activation_scheme, quant::weight_scheme}) {
        const i32 zp = s.symmetric ? 0 : 3;
        Tensor<f32, Shape<2, 40>, Host> x;
        for (int i = 0; i < 40; ++i) {
            x(0, i) = (static_cast<float>(s.qmin() - zp) - 5.0f + 0.25f * i) * scale;  // around qmin
            x(1, i) = (static_cast<float>(s.qmax() - zp) - 5.0f + 0.25f * i) * scale;  // around qmax
        }
        Tensor<bool, Shape<2, 40>, Host> mask;
        testing::poison(mask);
        mask = quant::fake_quantize_mask(x, scale, zp, s);
        int passed = 0;
        for (int r = 0; r < 2; ++r)
            for (int i = 0; i < 40; ++i) {
                CAPTURE(x(r, i));
                CHECK(mask(r, i) == reference_mask(x(r, i), scale, zp, s));
                passed += mask(r, i);
            }
        CHECK(passed > 20);  // both sides of each boundary are exercised
        CHECK(passed < 60);
    }
}

TEST_CASE("qtensor: quantize_from and dequantized round trip, per tensor and per channel; bytes")
{
    using S = Shape<6, 40>;
    using per_row = quant::qtensor<S, Host, quant::per_channel<0>>;
    using whole = quant::qtensor<S, Host>;
    static_assert(per_row::bytes == 6 * 40 + 6 * (4 + 4));
    static_assert(whole::bytes == 6 * 40 + 4 + 4);

    Tensor<f32, S, Host> x;
    testing::fill_random(x, 31, &uniform);
    quant::quant_params p;
    p.axis = 0;
    p.s = quant::weight_scheme;
    for (std::size_t r = 0; r < 6; ++r) p.scale.push_back(0.01f * static_cast<float>(r + 1)), p.zero_point.push_back(0);

    per_row q;
    q.set_params(p);
    testing::poison(q.values());
    q.quantize_from(x);
    Tensor<f32, S, Host> back = q.dequantized();
    for (std::size_t r = 0; r < 6; ++r) {
        CHECK(q.scale()(r, 0) == p.scale[r]);
        for (std::size_t c = 0; c < 40; ++c) {
            const long long want = reference_quantize(x(r, c), p.scale[r], 0, quant::weight_scheme);
            CHECK(q.values()(r, c) == want);
            CHECK(back(r, c) == static_cast<float>(static_cast<double>(want) * p.scale[r]));
        }
    }

    whole t;
    quant::quant_params one;
    one.s = quant::activation_scheme;
    one.scale = {0.05f};
    one.zero_point = {-9};
    t.set_params(one);
    t.quantize_from(x);
    for (std::size_t i = 0; i < S::numel; ++i)
        CHECK(t.values().data()[i] == reference_quantize(x.data()[i], 0.05f, -9, quant::activation_scheme));

    CHECK_THROWS_AS(t.set_params(p), error);  // 6 channels for a per-tensor qtensor
    quant::quant_params wrong = p;
    wrong.scale.pop_back();
    wrong.zero_point.pop_back();
    CHECK_THROWS_AS(q.set_params(wrong), error);
    quant::quant_params other_axis = p;  // the right count, for another axis
    other_axis.axis = 1;
    CHECK_THROWS_AS(q.set_params(other_axis), error);
}

TEST_CASE("int8_gemm: exact int32 products against an int64 reference")
{
    // K = 2048 with -128 x -128 everywhere in row 0: 2^25, beyond int16; row 1 the
    // same but for three odd 127 x 127 products at the end, so its partial sums
    // need 25 significant bits (an f32 accumulator rounds them).
    constexpr std::size_t M = 5, N = 6, K = 2048;
    Tensor<i8, Shape<M, K>, Host> x;
    Tensor<i8, Shape<N, K>, Host> w;
    fill_int8(x, 41);
    fill_int8(w, 42);
    for (std::size_t k = 0; k < K; ++k) {
        x(0, k) = -128, w(0, k) = -128;
        x(1, k) = w(1, k) = k + 3 < K ? -128 : 127;
    }
    for (std::size_t k = 0; k < K; k += 2) x(2, k) = 127, w(2, k) = 127;  // the other extreme
    Tensor<i32, Shape<M, N>, Host> acc;
    testing::poison(acc);
    linalg::int8_gemm(acc, x, w);
    for (std::size_t m = 0; m < M; ++m)
        for (std::size_t n = 0; n < N; ++n) {
            long long want = 0;
            for (std::size_t k = 0; k < K; ++k) want += static_cast<long long>(x(m, k)) * w(n, k);
            CAPTURE(m);
            CAPTURE(n);
            CHECK(acc(m, n) == want);
        }
    CHECK(acc(0, 0) == 33554432);

    // odd sizes are fine on the host (only cuBLASLt wants multiples of 4)
    Tensor<i8, Shape<3, 5>, Host> a;
    Tensor<i8, Shape<7, 5>, Host> b;
    fill_int8(a, 43);
    fill_int8(b, 44);
    Tensor<i32, Shape<3, 7>, Host> small;
    testing::poison(small);
    linalg::int8_gemm(small.view(), a.view(), b);
    for (std::size_t m = 0; m < 3; ++m)
        for (std::size_t n = 0; n < 7; ++n) {
            long long want = 0;
            for (std::size_t k = 0; k < 5; ++k) want += static_cast<long long>(a(m, k)) * b(n, k);
            CHECK(small(m, n) == want);
        }
}
