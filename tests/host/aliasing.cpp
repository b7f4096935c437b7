// Every route into an assignment, with the destination also read on the
// right-hand side: the result must be bit-identical to the same expression
// assigned to a fresh tensor (over copies of the inputs), or aliasing_error
// must be thrown with the destination unchanged. Never a silently wrong value.
#include "tensor_testing.hpp"

#include <cstring>
#include <random>

namespace {

using namespace tenet;

template <class T, class S>
using host_tensor = Tensor<T, S, Host>;

template <class T, class S>
host_tensor<T, S> random_tensor(std::uint64_t seed)
{
    host_tensor<T, S> t;
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> value(-2.0, 2.0);
    for (std::size_t i = 0; i < S::numel; ++i) t.data()[i] = convert<T>(value(rng));
    return t;
}

template <class T, class S>
host_tensor<T, S> clone(const host_tensor<T, S>& t)
{
    host_tensor<T, S> c;
    std::memcpy(static_cast<void*>(c.data()), t.data(), sizeof(T) * S::numel);
    return c;
}

template <class T, class S>
bool same_bits(const host_tensor<T, S>& a, const host_tensor<T, S>& b)
{
    return std::memcmp(a.data(), b.data(), sizeof(T) * S::numel) == 0;
}

// aliased(y) writes y from an expression reading y; fresh(y0, out) assigns
// the same expression over a copy y0 of y to a fresh (poisoned) tensor.
template <class T, class S, class Aliased, class Fresh>
void check_right(std::uint64_t seed, Aliased aliased, Fresh fresh)
{
    auto y = random_tensor<T, S>(seed);
    const auto y0 = clone(y);
    host_tensor<T, S> expected;
    testing::poison(expected);
    fresh(y0, expected);
    aliased(y);
    CHECK(same_bits(y, expected));
}

// aliased(y) must throw aliasing_error, naming the operand, and leave y as it was.
template <class T, class S, class Aliased>
void check_throws(std::uint64_t seed, Aliased aliased, const char* operand = "operand")
{
    auto y = random_tensor<T, S>(seed);
    const auto y0 = clone(y);
    try {
        aliased(y);
        FAIL("no aliasing_error");
    } catch (const aliasing_error& e) {
        CHECK(std::string(e.what()).find(operand) != std::string::npos);
    }
    CHECK(same_bits(y, y0));
}

using M = Shape<8, 8>;
using V = Shape<8>;

template <class T>
void epilogue_routes()
{
    const auto a = random_tensor<T, M>(1);
    const auto w = random_tensor<T, M>(2);
    const auto bias = random_tensor<T, V>(3);

    // The bias is the destination: accumulate.
    check_right<T, M>(10, [&](auto& y) { y = y + matmul(a, w); }, [&](const auto& y0, auto& out) { out = y0 + matmul(a, w); });
    check_right<T, M>(11, [&](auto& y) { y = matmul(a, w) + y; }, [&](const auto& y0, auto& out) { out = matmul(a, w) + y0; });
    check_right<T, M>(12, [&](auto& y) { y = relu(matmul(a, w) + y); },
                      [&](const auto& y0, auto& out) { out = relu(matmul(a, w) + y0); });
    check_right<T, M>(13, [&](auto& y) { y = gelu(matmul(a, w) + y); },
                      [&](const auto& y0, auto& out) { out = gelu(matmul(a, w) + y0); });
    check_right<T, M>(14, [&](auto& y) { y = gelu_tanh(y + matmul(a, w)); },
                      [&](const auto& y0, auto& out) { out = gelu_tanh(y0 + matmul(a, w)); });
    // A bias expression over the destination (same mapping): scratch, then one pass.
    check_right<T, M>(15, [&](auto& y) { y = matmul(a, w) + y * 2.0f; },
                      [&](const auto& y0, auto& out) { out = matmul(a, w) + y0 * 2.0f; });
    check_right<T, M>(16, [&](auto& y) { y = relu(matmul(a, w) + (y + bias)); },
                      [&](const auto& y0, auto& out) { out = relu(matmul(a, w) + (y0 + bias)); });
    // The bias reads the destination through another layout: rejected.
    check_throws<T, M>(17, [&](auto& y) { y = matmul(a, w) + transpose(y); }, "operand 2");
    check_throws<T, M>(18, [&](auto& y) { y = relu(matmul(a, w) + broadcast_to<M>(slice<0, 0, 1>(y))); });
    check_throws<T, M>(19, [&](auto& y) { y = matmul(a, w) + broadcast_to<M>(reshape<V>(slice<0, 3, 4>(y))); });
}

TEST_CASE("aliasing: matmul epilogues whose bias is the destination")
{
    epilogue_routes<f32>();
    epilogue_routes<bf16>();
}

template <class T>
void operand_routes()
{
    const auto w = random_tensor<T, M>(4);
    const auto bias = random_tensor<T, V>(5);
    // The destination as A or B, transposed, both, under an epilogue.
    check_right<T, M>(20, [&](auto& m) { m = matmul(m, w); }, [&](const auto& m0, auto& out) { out = matmul(m0, w); });
    check_right<T, M>(21, [&](auto& m) { m = matmul(w, m); }, [&](const auto& m0, auto& out) { out = matmul(w, m0); });
    check_right<T, M>(22, [&](auto& m) { m = matmul(transpose(m), w); },
                      [&](const auto& m0, auto& out) { out = matmul(transpose(m0), w); });
    check_right<T, M>(23, [&](auto& m) { m = matmul(m, m); }, [&](const auto& m0, auto& out) { out = matmul(m0, m0); });
    check_right<T, M>(24, [&](auto& m) { m = relu(matmul(m, w) + bias); },
                      [&](const auto& m0, auto& out) { out = relu(matmul(m0, w) + bias); });
    check_right<T, M>(25, [&](auto& m) { m = matmul(m, w) + m; }, [&](const auto& m0, auto& out) { out = matmul(m0, w) + m0; });
    check_right<T, M>(26, [&](auto& m) { m = tanh(matmul(m * 0.5f, w)) * 2.0f + m; },
                      [&](const auto& m0, auto& out) { out = tanh(matmul(m0 * 0.5f, w)) * 2.0f + m0; });
    // Overlapping slices as A and as the destination; a broadcast row as B.
    check_right<T, M>(27, [&](auto& m) { slice<0, 0, 4>(m) = matmul(slice<0, 2, 6>(m), w); },
                      [&](const auto& m0, auto& out) {
                          out = m0;
                          slice<0, 0, 4>(out) = matmul(slice<0, 2, 6>(m0), w);
                      });
    check_right<T, M>(28, [&](auto& m) { m = matmul(w, broadcast_to<M>(slice<0, 1, 2>(m))); },
                      [&](const auto& m0, auto& out) { out = matmul(w, broadcast_to<M>(slice<0, 1, 2>(m0))); });
}

TEST_CASE("aliasing: the destination as a matmul operand")
{
    operand_routes<f32>();
    operand_routes<bf16>();
}

template <class T>
void compound_routes()
{
    const auto a = random_tensor<T, M>(6);
    const auto w = random_tensor<T, M>(7);
    const auto x = random_tensor<T, M>(8);
    const auto bias = random_tensor<T, V>(9);
    check_right<T, M>(30, [&](auto& y) { y += x * 3.0f - bias; }, [&](const auto& y0, auto& out) { out = y0 + (x * 3.0f - bias); });
    check_right<T, M>(31, [&](auto& y) { y -= exp(x) * y; }, [&](const auto& y0, auto& out) { out = y0 - exp(x) * y0; });
    check_right<T, M>(32, [&](auto& y) { y *= bias; }, [&](const auto& y0, auto& out) { out = y0 * bias; });
    check_right<T, M>(33, [&](auto& y) { y /= abs(x) + 1.0f; }, [&](const auto& y0, auto& out) { out = y0 / (abs(x) + 1.0f); });
    check_right<T, M>(34, [&](auto& y) { y *= 0.25f; }, [&](const auto& y0, auto& out) { out = y0 * 0.25f; });
    check_right<T, M>(35, [&](auto& y) { y -= 1; }, [&](const auto& y0, auto& out) { out = y0 - 1; });
    check_right<T, M>(36, [&](auto& y) { y += matmul(a, w); }, [&](const auto& y0, auto& out) { out = y0 + matmul(a, w); });
    check_right<T, M>(37, [&](auto& y) { y -= matmul(a, w); }, [&](const auto& y0, auto& out) { out = y0 - matmul(a, w); });
    check_right<T, M>(38, [&](auto& y) { y += matmul(y, w); }, [&](const auto& y0, auto& out) { out = y0 + matmul(y0, w); });
    check_right<T, M>(39, [&](auto& y) { slice<1, 2, 5>(y) += slice<1, 0, 3>(x); },
                      [&](const auto& y0, auto& out) {
                          out = y0;
                          slice<1, 2, 5>(out) = slice<1, 2, 5>(y0) + slice<1, 0, 3>(x);
                      });
    check_throws<T, M>(40, [&](auto& y) { y += transpose(y); }, "operand 2");
    check_throws<T, M>(41, [&](auto& y) { slice<0, 1, 8>(y) *= slice<0, 0, 7>(y); });
}

TEST_CASE("compound assignment: += -= *= /=, fused and alias-safe")
{
    compound_routes<f32>();
    compound_routes<bf16>();
}

TEST_CASE("compound assignment against a float64 reference, 16-bit destination rounded once")
{
    auto y = random_tensor<bf16, M>(50);
    const auto x = random_tensor<f32, M>(51);
    const auto b = random_tensor<f32, V>(52);
    const auto y0 = clone(y);
    y += x * b;
    for (std::size_t i = 0; i < M::numel; ++i) {
        const double exact = convert<f64>(y0.data()[i]) +
                             static_cast<double>(x.data()[i]) * static_cast<double>(b.data()[i % 8]);
        // f32 math, one rounding to bf16: within half a bf16 ulp plus f32 error
        CHECK(convert<f64>(y.data()[i]) == doctest::Approx(exact).epsilon(1.0 / 256));
        CHECK(y.data()[i] == convert<bf16>(static_cast<float>(convert<f32>(y0.data()[i]) + x.data()[i] * b.data()[i % 8])));
    }
    auto v = random_tensor<f32, V>(53);
    const auto v0 = clone(v);
    v /= 4;
    v *= 2.0;
    for (std::size_t i = 0; i < V::numel; ++i) CHECK(v.data()[i] == v0.data()[i] / 4 * 2);
}

TEST_CASE("aliasing: elementwise, reductions, row ops, tie")
{
    using T = f32;
    const auto x = random_tensor<T, M>(60);
    // Elementwise in place: each element read before it is written, by the same thread.
    check_right<T, M>(61, [&](auto& y) { y = y * 2.0f + x; }, [&](const auto& y0, auto& out) { out = y0 * 2.0f + x; });
    check_throws<T, M>(62, [&](auto& y) { y = transpose(y); }, "operand 1 of the expression (a f32 Shape<8,8> view)");
    check_throws<T, M>(63, [&](auto& y) { y = x + broadcast_to<M>(slice<0, 0, 1>(y)); }, "operand 2");
    // A reduction inside the expression is materialised first.
    check_right<T, M>(64, [&](auto& y) { y = y - mean<1>(y, keepdims); },
                      [&](const auto& y0, auto& out) { out = y0 - mean<1>(y0, keepdims); });
    check_right<T, M>(65, [&](auto& y) { y = y / sum(abs(y)); }, [&](const auto& y0, auto& out) { out = y0 / sum(abs(y0)); });
    // A reduction written straight into (part of) its own input: rejected.
    check_throws<T, M>(66, [&](auto& y) { reshape<V>(slice<0, 0, 1>(y)) = sum<0>(y); });
    // Row ops in place read each row before writing it; another layout is rejected.
    check_right<T, M>(67, [&](auto& y) { y = softmax(y); }, [&](const auto& y0, auto& out) { out = softmax(y0); });
    check_right<T, M>(68, [&](auto& y) { y = log_softmax(y); }, [&](const auto& y0, auto& out) { out = log_softmax(y0); });
    check_throws<T, M>(69, [&](auto& y) { y = softmax(transpose(y)); });
    // tie: every source read at an element before any destination is written there.
    auto p = random_tensor<T, M>(70), q = random_tensor<T, M>(71);
    const auto p0 = clone(p), q0 = clone(q);
    tie(p, q) = pack(p + q, p - q);
    host_tensor<T, M> sum_pq, diff_pq;
    sum_pq = p0 + q0;
    diff_pq = p0 - q0;
    CHECK(same_bits(p, sum_pq));
    CHECK(same_bits(q, diff_pq));
    CHECK_THROWS_AS((tie(p, q) = pack(transpose(q), p)), aliasing_error);
    // quantize and fake-quantize are elementwise: in place is right.
    check_right<T, M>(72, [&](auto& y) { y = quant::fake_quantize(y, 0.05f, 3); },
                      [&](const auto& y0, auto& out) { out = quant::fake_quantize(y0, 0.05f, 3); });
}

}  // namespace
