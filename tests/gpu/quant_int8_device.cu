// int8 on the device against the host backend (itself checked against
// double and int64 references in tests/host/quant_int8.cpp): the IMMA
// accumulators bit for bit, and quantize / dequantize / fake_quantize / the
// STE mask element for element, specials included.
#include "device_testing.hpp"

#include <tenet/linalg/int8_gemm.hpp>
#include <tenet/quant/qtensor.hpp>
#include <tenet/quant/quantize.hpp>

#include <cstddef>
#include <cstdint>
#include <random>

using namespace tenet;
using testing::to_device;
using testing::to_host;

namespace {

// Full-range int8, with whole rows of -128 and of 127 (the largest sums).
template <class S>
Tensor<i8, S, Host> random_int8(std::uint64_t seed)
{
    Tensor<i8, S, Host> t;
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int> value(-128, 127);
    for (std::size_t i = 0; i < S::numel; ++i) t.data()[i] = static_cast<i8>(value(rng));
    constexpr std::size_t K = S::extents[1];
    for (std::size_t k = 0; k < K; ++k) t.data()[k] = -128, t.data()[K + k] = 127;
    return t;
}

template <std::size_t M, std::size_t N, std::size_t K>
void check_int8_gemm()
{
    const auto x = random_int8<Shape<M, K>>(M + N);
    const auto w = random_int8<Shape<N, K>>(M * N);
    Tensor<i32, Shape<M, N>, Host> want;
    linalg::int8_gemm(want, x, w);

    const auto xd = to_device(x);
    const auto wd = to_device(w);
    Tensor<i32, Shape<M, N>, Device> acc;
    testing::poison(acc);
    linalg::int8_gemm(acc, xd, wd);
    const auto got = to_host(acc);
    mismatch_log log;
    for (std::size_t i = 0; i < M * N; ++i)
        if (got.data()[i] != want.data()[i])
            log.add("int8_gemm (cuBLASLt IMMA) accumulator [%zu]: device %d, host %d", i, got.data()[i], want.data()[i]);
    CHECK_NO_MISMATCH(log);
    CHECK(got(0, 0) == static_cast<i32>(K) * 16384);  // -128 x -128, K times
}

}  // namespace

TEST_CASE("int8_gemm device: cuBLASLt IMMA accumulators equal the host's bit for bit")
{
    check_int8_gemm<256, 128, 784>();
    check_int8_gemm<256, 12, 784>();  // 10 output features padded to 12
}

TEST_CASE("quantize device: the fused expressions equal the host's, per tensor and per channel")
{
    using S = Shape<16, 300>;
    Tensor<f32, S, Host> x;
    testing::fill_random(x, 51);  // moderate values, huge, tiny, +-inf, NaN
    Tensor<f32, Shape<16, 1>, Host> scale;
    Tensor<i32, Shape<16, 1>, Host> zp;
    std::mt19937_64 rng(52);
    std::uniform_real_distribution<float> log_scale(-6.0f, 1.0f);
    std::uniform_int_distribution<int> zero(-128, 127);
    for (std::size_t r = 0; r < 16; ++r) scale.data()[r] = std::exp(log_scale(rng)), zp.data()[r] = zero(rng);

    Tensor<i8, S, Host> q_want = quant::quantize(x, scale, zp);
    Tensor<i8, S, Host> qw_want = quant::quantize(x, 0.05f, 0, quant::weight_scheme);
    Tensor<f32, S, Host> d_want = quant::dequantize(q_want, scale, zp);
    Tensor<f32, S, Host> f_want = quant::fake_quantize(x, scale, zp);
    Tensor<bool, S, Host> m_want = quant::fake_quantize_mask(x, scale, zp);

    const auto xd = to_device(x);
    const auto sd = to_device(scale);
    const auto zd = to_device(zp);
    Tensor<i8, S, Device> q, qw;
    Tensor<f32, S, Device> d, f;
    Tensor<bool, S, Device> m;
    testing::poison(q), testing::poison(qw), testing::poison(d), testing::poison(f), testing::poison(m);
    q = quant::quantize(xd, sd, zd);
    qw = quant::quantize(xd, 0.05f, 0, quant::weight_scheme);
    d = quant::dequantize(q, sd, zd);
    f = quant::fake_quantize(xd, sd, zd);
    m = quant::fake_quantize_mask(xd, sd, zd);
    const auto qh = to_host(q);
    const auto qwh = to_host(qw);
    const auto mh = to_host(m);
    const auto dh = to_host(d);
    const auto fh = to_host(f);
    mismatch_log log;
    for (std::size_t i = 0; i < S::numel; ++i) {
        const double input = x.data()[i];
        if (qh.data()[i] != q_want.data()[i])
            log.add("quantize [%zu] of %.9g: device %d, host %d", i, input, qh.data()[i], q_want.data()[i]);
        if (qwh.data()[i] != qw_want.data()[i])
            log.add("quantize (weight scheme) [%zu] of %.9g: device %d, host %d", i, input, qwh.data()[i], qw_want.data()[i]);
        if (mh.data()[i] != m_want.data()[i])
            log.add("fake_quantize_mask [%zu] of %.9g: device %d, host %d", i, input, int{mh.data()[i]}, int{m_want.data()[i]});
        if (detail::numeric::to_bits(dh.data()[i]) != detail::numeric::to_bits(d_want.data()[i]))
            log.add("dequantize [%zu]: device %.9g, host %.9g", i, double{dh.data()[i]}, double{d_want.data()[i]});
        if (detail::numeric::to_bits(fh.data()[i]) != detail::numeric::to_bits(f_want.data()[i]))
            log.add("fake_quantize [%zu] of %.9g: device %.9g, host %.9g", i, input, double{fh.data()[i]}, double{f_want.data()[i]});
    }
    CHECK_NO_MISMATCH(log);
}

TEST_CASE("qtensor device: per-channel parameters, quantize_from and dequantized equal the host's")
{
    using S = Shape<8, 64>;
    Tensor<f32, S, Host> x;
    testing::fill_random(x, 61);
    quant::quant_params p;
    p.axis = 0;
    p.s = quant::weight_scheme;
    for (std::size_t r = 0; r < 8; ++r) p.scale.push_back(0.003f * static_cast<float>(r + 1)), p.zero_point.push_back(0);

    quant::qtensor<S, Host, quant::per_channel<0>> host;
    host.set_params(p);
    host.quantize_from(x);
    Tensor<f32, S, Host> want = host.dequantized();

    quant::qtensor<S, Device, quant::per_channel<0>> device;
    device.set_params(p);
    const auto xd = to_device(x);
    device.quantize_from(xd);
    Tensor<f32, S, Device> back = device.dequantized();
    const auto values = to_host(device.values());
    const auto got = to_host(back);
    mismatch_log log;
    for (std::size_t i = 0; i < S::numel; ++i) {
        if (values.data()[i] != host.values().data()[i])
            log.add("qtensor::quantize_from [%zu]: device %d, host %d", i, values.data()[i], host.values().data()[i]);
        if (detail::numeric::to_bits(got.data()[i]) != detail::numeric::to_bits(want.data()[i]))
            log.add("qtensor::dequantized [%zu]: device %.9g, host %.9g", i, double{got.data()[i]}, double{want.data()[i]});
    }
    CHECK_NO_MISMATCH(log);
}
