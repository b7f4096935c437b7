// The device routes of tests/host/aliasing.cpp: a matmul whose bias is the
// destination (one cuBLASLt call with C = D, beta = 1, and its activation
// epilogue), the destination as an operand, compound assignment, and the
// rejected forms -- against the host, whose results that file proves
// bit-identical to fresh destinations.
#include "device_testing.hpp"

#include <cmath>
#include <random>

using namespace tenet;
using testing::to_device;
using testing::to_host;

namespace {

using M = Shape<64, 64>;
using V = Shape<64>;

template <class T, class S>
Tensor<T, S, Host> random_host(std::uint64_t seed)
{
    Tensor<T, S, Host> t;
    testing::fill_random(t, seed, +[](std::mt19937_64& rng) { return std::uniform_real_distribution<double>(-1, 1)(rng); });
    return t;
}

// |device - host| within the f32 accumulation error of a 64-term product of
// values in [-1, 1] (plus an ulp of a 16-bit result, and cuBLASLt's own
// tanh-GELU where it runs one).
template <class T, class S>
void check_close(const Tensor<T, S, Device>& device, const Tensor<T, S, Host>& host, double extra = 0)
{
    const auto got = to_host(device);
    mismatch_log log;
    for (std::size_t i = 0; i < S::numel; ++i) {
        const double g = convert<f64>(got.data()[i]), want = convert<f64>(host.data()[i]);
        double bound = 66 * 64 * 0x1p-24 + extra * std::fabs(want);
        if constexpr (sizeof(T) < 4) bound += 2 * testing::storage_ulp<T>(want);
        if (!(std::fabs(g - want) <= bound)) log.add("element %zu: device %.9g, host %.9g (bound %.3g)", i, g, want, bound);
    }
    CHECK_NO_MISMATCH(log);
}

// The right-hand sides' tensors, in one place.
template <class T, class P>
struct operands {
    Tensor<T, M, P> a, w, x;
    Tensor<T, V, P> b;
};

template <class T>
operands<T, Device> on_device(const operands<T, Host>& h)
{
    return {to_device(h.a), to_device(h.w), to_device(h.x), to_device(h.b)};
}

// Runs op(y, operands) on a device copy and a host copy of one random y; compares.
template <class T, class Op>
void both(const operands<T, Host>& host_operands, const operands<T, Device>& device_operands, std::uint64_t seed,
          Op op, double extra = 0)
{
    const auto start = random_host<T, M>(seed);
    Tensor<T, M, Host> host;
    host = start;
    auto device = to_device(start);
    op(host, host_operands);
    op(device, device_operands);
    check_close(device, host, extra);
}

template <class T>
void routes()
{
    const operands<T, Host> h{random_host<T, M>(1), random_host<T, M>(2), random_host<T, M>(3), random_host<T, V>(4)};
    const operands<T, Device> d = on_device(h);
    const auto check = [&](std::uint64_t seed, auto op, double extra = 0) { both<T>(h, d, seed, op, extra); };

    check(10, [](auto& y, const auto& o) { y = y + matmul(o.a, o.w); });
    check(11, [](auto& y, const auto& o) { y = matmul(o.a, o.w) + y; });
    check(12, [](auto& y, const auto& o) { y = relu(matmul(o.a, o.w) + y); });
    check(13, [](auto& y, const auto& o) { y = gelu_tanh(matmul(o.a, o.w) + y); }, 0x1p-9);
    check(14, [](auto& y, const auto& o) { y = gelu(matmul(o.a, o.w) + y); });
    check(15, [](auto& y, const auto& o) { y += matmul(o.a, o.w); });
    check(16, [](auto& y, const auto& o) { y -= matmul(o.a, o.w); });
    check(17, [](auto& y, const auto& o) { y = matmul(y, o.w); });
    check(18, [](auto& y, const auto& o) { y = relu(matmul(transpose(y), o.w) + o.b); });
    check(19, [](auto& y, const auto& o) { y += matmul(y, o.w); });
    check(20, [](auto& y, const auto& o) { y *= o.x + o.b; });
    check(21, [](auto& y, const auto& o) { y /= abs(o.x) + 1.0f; });
    check(22, [](auto& y, const auto& o) { slice<0, 0, 32>(y) = matmul(slice<0, 16, 48>(y), o.w) + o.b; });

    // Rejected on the device too, with y untouched.
    auto y = to_device(random_host<T, M>(30));
    const auto before = to_host(y);
    CHECK_THROWS_AS(y = matmul(d.a, d.w) + transpose(y), aliasing_error);
    CHECK_THROWS_AS(y += transpose(y), aliasing_error);
    CHECK_THROWS_AS(y = relu(matmul(d.a, d.w) + broadcast_to<M>(slice<0, 0, 1>(y))), aliasing_error);
    check_close(y, before);
}

}  // namespace

TEST_CASE("device aliasing: accumulating matmul, operands, compound assignment")
{
    routes<f32>();
    routes<bf16>();
}
