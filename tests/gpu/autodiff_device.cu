// Autodiff on the device against the host (whose gradients tests/host/
// autodiff.cpp checks against finite differences): the fused multi-output
// backward kernel (vector and scalar paths, a tail), broadcast variables
// summed by the device reduction, gradient<I> fused into an update, f32 and
// bf16 storage.
#include "device_testing.hpp"

#include <random>
#include <tuple>
#include <utility>

using namespace tenet;
using testing::to_device;
using testing::to_host;

namespace {

using S = Shape<37, 29>;  // 1073 elements: a tail after the vector chunks
using N = Shape<29>;
using M = Shape<37, 1>;

template <class T, class Shape_>
Tensor<T, Shape_, Host> uniform(std::uint64_t seed, double lo = -2, double hi = 2)
{
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(lo, hi);
    Tensor<T, Shape_, Host> t;
    for (std::size_t i = 0; i < Shape_::numel; ++i) t.data()[i] = convert<T>(u(rng));
    return t;
}

// Device and host compute in f32 with different math libraries and, for
// broadcast variables, different summation orders: relative 1e-5 of the
// value or of its scale, plus one storage ulp for 16-bit storage.
template <class T, class Shape_>
void expect_close(const char* what, const Tensor<T, Shape_, Host>& device, const Tensor<T, Shape_, Host>& host,
                  double scale)
{
    mismatch_log log;
    for (std::size_t i = 0; i < Shape_::numel; ++i) {
        const double d = convert<f64>(device.data()[i]), h = convert<f64>(host.data()[i]);
        double allowed = 1e-5 * (std::fabs(h) + scale);
        if constexpr (!std::is_same_v<T, f32>) allowed += testing::storage_ulp<T>(h);
        if (!(std::fabs(d - h) <= allowed)) log.add("%s[%zu]: device %a, host %a", what, i, d, h);
    }
    INFO(what, " / ", numeric_traits<T>::name);
    CHECK_NO_MISMATCH(log);
}

// tie(d...) = gradients(make(var<I>(x_I)...), dy) on both sides.
template <class T, class Make, class Dy, class... X, std::size_t... I>
void compare_gradients(const char* name, Make make, const Dy& dy, std::index_sequence<I...>, const X&... xs)
{
    std::tuple<Tensor<T, typename X::shape, Host>...> host;
    tie(std::get<I>(host)...) = gradients(make(var<I>(xs)...), dy);

    const auto dyd = to_device(dy);
    const std::tuple<Tensor<T, typename X::shape, Device>...> xd{to_device(xs)...};
    std::tuple<Tensor<T, typename X::shape, Device>...> device;
    (testing::poison(std::get<I>(device)), ...);
    tie(std::get<I>(device)...) = gradients(make(var<I>(std::get<I>(xd))...), dyd);
    (expect_close(name, to_host(std::get<I>(device)), std::get<I>(host), 1.0), ...);
}

template <class T, class Make, class Dy, class... X>
void compare(const char* name, Make make, const Dy& dy, const X&... xs)
{
    compare_gradients<T>(name, make, dy, std::index_sequence_for<X...>{}, xs...);
}

}  // namespace

TEST_CASE_TEMPLATE("the fused backward on the device equals the host's", T, f32, bf16)
{
    const auto x = uniform<T, S>(1), w = uniform<T, S>(2), dy = uniform<T, S>(3);
    const auto b = uniform<T, N>(4);
    const auto c = uniform<T, M>(5, 0.5, 2);
    compare<T>("tanh(x w + b) x", [](auto xv, auto wv, auto bv) { return tanh(xv * wv + bv) * xv; }, dy, x, w, b);
    compare<T>("softplus/gelu chain", [](auto xv, auto wv) { return softplus(gelu(xv) * wv) + sigmoid(xv); }, dy, x, w);
    compare<T>("column and bias", [](auto xv, auto cv, auto bv) { return gelu_tanh(xv * cv + bv) * silu(bv); }, dy, x,
               c, b);
    compare<T>("kinks", [](auto xv, auto wv) { return relu(xv) * max(xv, wv) + abs(wv - xv) + clamp(xv, -1.0, 1.0); },
               dy, x, w);
    compare<T>("exp/log/pow",
               [](auto xv, auto wv) { return exp(tanh(xv)) * log(1.0f + square(wv)) + pow(2.0f + sin(xv), wv); }, dy, x,
               w);
}

TEST_CASE("misaligned operands take the scalar path on the device too")
{
    using Row = Shape<1, 1000>;
    const auto whole = uniform<f32, Shape<1, 1001>>(11);
    const auto dy_host = uniform<f32, Row>(12);
    const auto x = slice<1, 1, 1001>(whole);  // starts one element in: not 16-byte aligned
    Tensor<f32, Row, Host> host;
    tie(host) = gradients(sin(var<0>(x)) * exp(var<0>(x)), dy_host);

    const auto whole_d = to_device(whole);
    const auto dy_d = to_device(dy_host);
    const auto xd = slice<1, 1, 1001>(whole_d);
    Tensor<f32, Row, Device> device;
    testing::poison(device);
    tie(device) = gradients(sin(var<0>(xd)) * exp(var<0>(xd)), dy_d);
    expect_close("misaligned", to_host(device), host, 1.0);
}

TEST_CASE("gradient<I> fused into an update on the device")
{
    const auto x = uniform<f32, S>(21), w = uniform<f32, S>(22), dy = uniform<f32, S>(23);
    const auto b = uniform<f32, N>(24);
    auto e = [](const auto& xv, const auto& wv, const auto& bv) { return tanh(xv * var<1>(wv) + var<0>(bv)); };
    Tensor<f32, S, Host> w_host;
    Tensor<f32, N, Host> b_host;
    w_host = w - 0.1f * gradient<1>(e(x, w, b), dy);
    b_host = b - 0.1f * gradient<0>(e(x, w, b), dy);

    const auto xd = to_device(x), wd = to_device(w), dyd = to_device(dy);
    const auto bd = to_device(b);
    Tensor<f32, S, Device> w_device;
    Tensor<f32, N, Device> b_device;
    testing::poison(w_device);
    testing::poison(b_device);
    w_device = wd - 0.1f * gradient<1>(e(xd, wd, bd), dyd);
    b_device = bd - 0.1f * gradient<0>(e(xd, wd, bd), dyd);
    expect_close("w - 0.1 dw", to_host(w_device), w_host, 1.0);
    expect_close("b - 0.1 db", to_host(b_device), b_host, 37.0);
}
