// Reductions on the device -- warp per row, block per long row, thread per
// column, CUB for everything -- against the host's and float64 references.
#include "device_testing.hpp"

using namespace tenet;
using testing::to_host;

namespace {

double moderate(std::mt19937_64& rng) { return std::uniform_real_distribution<double>(-2.0, 2.0)(rng); }

// Device against host: sums within the bound of reordered summation,
// max/min/argmax/argmin exactly.
template <int... Axes, class T, class S>
void compare(const Tensor<T, S, Host>& x)
{
    Tensor<T, S, Device> xd;
    copy(xd, x);
    using Out = decltype(sum<Axes...>(x))::shape;
    Tensor<f32, Out, Device> s = sum<Axes...>(xd), m = max<Axes...>(xd), n2 = norm2<Axes...>(xd);
    Tensor<i32, Out, Device> am = argmin<Axes...>(xd);
    Tensor<f32, Out, Host> s_host = sum<Axes...>(x), m_host = max<Axes...>(x), n2_host = norm2<Axes...>(x);
    Tensor<f32, Out, Host> abs_host = sum<Axes...>(abs(x));
    Tensor<i32, Out, Host> am_host = argmin<Axes...>(x);
    const auto s_dev = to_host(s), m_dev = to_host(m), n2_dev = to_host(n2);
    const auto am_dev = to_host(am);
    const double row = static_cast<double>(S::numel) / Out::numel;
    mismatch_log log;
    for (std::size_t o = 0; o < Out::numel; ++o) {
        if (std::fabs(s_dev.data()[o] - s_host.data()[o]) > 2 * row * 0x1p-23 * abs_host.data()[o] + 1e-30)
            log.add("sum[%zu] %a vs %a", o, s_dev.data()[o], s_host.data()[o]);
        if (std::fabs(n2_dev.data()[o] - n2_host.data()[o]) > 1e-5 * n2_host.data()[o]) log.add("norm2[%zu]", o);
        if (m_dev.data()[o] != m_host.data()[o] || am_dev.data()[o] != am_host.data()[o])
            log.add("max/argmin[%zu]", o);
    }
    INFO(numeric_traits<T>::name, ", ", sizeof...(Axes), " axes");
    CHECK_NO_MISMATCH(log);
}

}  // namespace

TEST_CASE_TEMPLATE("device: reductions along every kind of axis agree with the host", T, f32, bf16)
{
    Tensor<T, Shape<300, 257>, Host> rows;  // short rows: a warp per row
    testing::fill_random(rows, 1, &moderate);
    compare<1>(rows);
    compare<0>(rows);  // columns: a thread per output
    Tensor<T, Shape<9, 5000>, Host> long_rows;  // a block per row
    testing::fill_random(long_rows, 2, &moderate);
    compare<-1>(long_rows);
    Tensor<T, Shape<40, 1500>, Host> two_warps;  // a 64-thread team, two warps per row
    testing::fill_random(two_warps, 5, &moderate);
    compare<1>(two_warps);
    Tensor<T, Shape<3, 40000>, Host> longest;  // the largest team (512 threads)
    testing::fill_random(longest, 6, &moderate);
    compare<1>(longest);
    Tensor<T, Shape<3, 7, 11, 13>, Host> four;
    testing::fill_random(four, 3, &moderate);
    compare<1, 3>(four);
    compare<0, 2>(four);
    Tensor<T, Shape<1 << 20>, Host> all;  // everything: cub::DeviceReduce
    testing::fill_random(all, 4, &moderate);
    compare<>(all);
}

TEST_CASE("device: a reduction fuses its input and feeds a larger expression")
{
    using S = Shape<64, 1000>;
    Tensor<f32, S, Host> x;
    testing::fill_random(x, 5, &moderate);
    Tensor<f32, S, Device> xd;
    copy(xd, x);
    const auto shifted_d = exp(xd - max<1>(xd, keepdims));
    Tensor<f32, S, Device> softmax = shifted_d / sum<1>(shifted_d, keepdims);
    const auto shifted = exp(x - max<1>(x, keepdims));
    Tensor<f32, S, Host> want = shifted / sum<1>(shifted, keepdims);
    const auto got = to_host(softmax);
    mismatch_log log;
    for (std::size_t i = 0; i < S::numel; ++i)
        if (std::fabs(got.data()[i] - want.data()[i]) > 1e-6) log.add("%zu: %a vs %a", i, got.data()[i], want.data()[i]);
    CHECK_NO_MISMATCH(log);
}

TEST_CASE("device: integer, bool and NaN reductions are exact")
{
    Tensor<i32, Shape<4, 3000>, Device> n = iota<Shape<4, 3000>>(-5000, 3);
    Tensor<i32, Shape<4>, Device> s = sum<1>(n);
    Tensor<i32, Shape<>, Device> positives = sum(n > 0);
    Tensor<i32, Shape<4>, Host> s_host = sum<1>(iota<Shape<4, 3000>>(-5000, 3));
    Tensor<i32, Shape<>, Host> positives_host = sum(iota<Shape<4, 3000>>(-5000, 3) > 0);
    const auto s_dev = to_host(s);
    const auto p_dev = to_host(positives);
    CHECK_BITWISE_EQUAL("integer row sums", s_dev.data(), s_host.data(), 4);
    CHECK(p_dev() == positives_host());
    Tensor<f32, Shape<2, 5>, Host> x;
    const float values[] = {1, 7, 3, 7, 2, 4, NAN, 9, NAN, 1};
    std::memcpy(x.data(), values, sizeof values);
    Tensor<f32, Shape<2, 5>, Device> xd;
    copy(xd, x);
    Tensor<i32, Shape<2>, Device> am = argmax<1>(xd);
    Tensor<f32, Shape<>, Device> total_max = max(xd);
    const auto am_dev = to_host(am);
    CHECK(am_dev(0) == 1);
    CHECK(am_dev(1) == 1);
    CHECK(std::isnan(to_host(total_max)()));
}
