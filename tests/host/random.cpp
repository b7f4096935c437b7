// Counter-based random numbers: Philox4x32-10 against the Random123 known
// answers, the distributions' statistics, and element i depending on
// (seed, offset, i) alone.
#include "tensor_testing.hpp"

#include <tenet/expr/random.hpp>

using namespace tenet;

TEST_CASE("Philox4x32-10 reproduces the Random123 known-answer vectors")
{
    using detail::expr::philox4x32_10;
    CHECK(philox4x32_10({0, 0, 0, 0}, {0, 0}) == detail::expr::philox_block{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
    CHECK(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}) ==
          detail::expr::philox_block{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
    CHECK(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}) ==
          detail::expr::philox_block{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
    static_assert(detail::expr::philox4x32_10({0, 0, 0, 0}, {0, 0})[0] == 0x6627e8d5);  // also at compile time
}

TEST_CASE("uniform, normal and bernoulli have the right statistics")
{
    using S = Shape<1 << 18>;
    const double n = S::numel;
    Tensor<f32, S, Host> u = random_uniform<S>(1, 0, -2.0f, 6.0f);
    Tensor<f32, S, Host> z = random_normal<S>(2, 0, 1.5f, 3.0f);
    Tensor<bool, S, Host> b = bernoulli<S>(0.3f, 3);
    double u_sum = 0, u_min = 1e9, u_max = -1e9, z_sum = 0, z_sq = 0, b_sum = 0, tail = 0;
    for (std::size_t i = 0; i < S::numel; ++i) {
        u_sum += u(i);
        u_min = std::min<double>(u_min, u(i));
        u_max = std::max<double>(u_max, u(i));
        z_sum += z(i);
        z_sq += (z(i) - 1.5) * (z(i) - 1.5);
        tail += std::fabs(z(i) - 1.5) > 3 * 1.96;
        b_sum += b(i);
    }
    // five standard errors
    CHECK(std::fabs(u_sum / n - 2.0) < 5 * (8 / std::sqrt(12.0)) / std::sqrt(n));
    CHECK(u_min >= -2.0);
    CHECK(u_max < 6.0);
    CHECK(std::fabs(z_sum / n - 1.5) < 5 * 3 / std::sqrt(n));
    CHECK(std::fabs(std::sqrt(z_sq / n) - 3.0) < 0.02);
    CHECK(std::fabs(tail / n - 0.05) < 0.003);  // the tails are Gaussian too
    CHECK(std::fabs(b_sum / n - 0.3) < 5 * std::sqrt(0.3 * 0.7 / n));
}

TEST_CASE("element i depends on seed, offset and i only: not on shape or evaluation order")
{
    Tensor<f32, Shape<4, 250>, Host> a = random_normal<Shape<4, 250>>(7, 3);
    Tensor<f32, Shape<1000>, Host> b = random_normal<Shape<1000>>(7, 3);
    Tensor<f32, Shape<4, 125>, Host> every_other = slice<1, 0, 250, 2>(random_normal<Shape<4, 250>>(7, 3));
    Tensor<f32, Shape<1000>, Host> other_offset = random_normal<Shape<1000>>(7, 4);
    Tensor<f32, Shape<1000>, Host> other_seed = random_normal<Shape<1000>>(8, 3);
    int same_offset = 0, same_seed = 0;
    for (std::size_t i = 0; i < 1000; ++i) {
        REQUIRE(std::memcmp(&a.data()[i], &b.data()[i], 4) == 0);
        same_offset += other_offset(i) == b(i);
        same_seed += other_seed(i) == b(i);
    }
    CHECK(every_other(3, 7) == a(3, 14));
    CHECK(same_offset == 0);
    CHECK(same_seed == 0);
}

TEST_CASE("the exactly rounded log and sincospi behind normal() are accurate")
{
    mismatch_log log;
    std::mt19937_64 rng(5);
    for (int k = 0; k < 200000; ++k) {
        const float x = static_cast<float>((rng() >> 40) + 1) * 0x1p-24f;  // (0, 1], as Box-Muller draws
        const double want = std::log(static_cast<double>(x));
        if (std::fabs(exact::log(x) - want) > 4 * 0x1p-24 * std::fmax(std::fabs(want), 1.0))
            log.add("log(%a) = %a, want %a", x, exact::log(x), want);
        const float t = static_cast<float>(rng() >> 40) * 0x1p-23f;  // [0, 2)
        const exact::sin_cos sc = exact::sincospi(t);
        const double angle = M_PI * t;
        if (std::fabs(sc.sin - std::sin(angle)) > 4e-7 || std::fabs(sc.cos - std::cos(angle)) > 4e-7)
            log.add("sincospi(%a) = %a, %a", t, sc.sin, sc.cos);
    }
    CHECK_NO_MISMATCH(log);
}

TEST_CASE("bernoulli with a counter in memory: read when the expression runs, offset ^ counter")
{
    using S = Shape<64, 33>;
    Tensor<f64, Shape<>, Host> counter;
    assign(counter.view(), 5);
    const auto mask = bernoulli<S>(0.5f, 11, counter, 7u << 20);  // built once
    Tensor<bool, S, Host> a, b, want5, want6;
    a = mask;
    want5 = bernoulli<S>(0.5f, 11, (7u << 20) ^ 5u);
    counter = counter + 1.0;  // moves after the expression was built
    b = mask;
    want6 = bernoulli<S>(0.5f, 11, (7u << 20) ^ 6u);
    CHECK(std::memcmp(a.data(), want5.data(), S::numel) == 0);
    CHECK(std::memcmp(b.data(), want6.data(), S::numel) == 0);
    CHECK(std::memcmp(a.data(), b.data(), S::numel) != 0);
}
