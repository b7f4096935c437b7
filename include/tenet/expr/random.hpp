// Counter-based random numbers: Philox4x32-10 (Salmon et al., SC'11, the
// Random123 generator). Element i of a random expression is a pure function
// of (seed, offset, i), so it is the same on the host and the device, in any
// evaluation order, and regenerable (dropout masks need no storage):
//   counter = (i / 4, offset), key = seed, element i takes word i % 4.
#pragma once

#include "../tensor/tensor.hpp"
#include "exact_math.hpp"
#include "generator.hpp"
#include "scalar.hpp"

#include <array>
#include <cstdint>

namespace tenet {
namespace detail::expr {

using philox_block = std::array<std::uint32_t, 4>;

TENET_HD constexpr philox_block philox4x32_10(philox_block counter, std::array<std::uint32_t, 2> key)
{
    constexpr std::uint32_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u;
    constexpr std::uint32_t w0 = 0x9E3779B9u, w1 = 0xBB67AE85u;
    for (int round = 0; round < 10; ++round) {
        const std::uint64_t p0 = std::uint64_t{m0} * counter[0];
        const std::uint64_t p1 = std::uint64_t{m1} * counter[2];
        counter = {static_cast<std::uint32_t>(p1 >> 32) ^ counter[1] ^ key[0], static_cast<std::uint32_t>(p1),
                   static_cast<std::uint32_t>(p0 >> 32) ^ counter[3] ^ key[1], static_cast<std::uint32_t>(p0)};
        key = {key[0] + w0, key[1] + w1};
    }
    return counter;
}

struct philox_stream {
    std::uint64_t seed, offset;

    TENET_HD constexpr philox_block block(std::uint64_t i) const
    {
        const std::uint64_t group = i / 4;
        return philox4x32_10({static_cast<std::uint32_t>(group), static_cast<std::uint32_t>(group >> 32),
                              static_cast<std::uint32_t>(offset), static_cast<std::uint32_t>(offset >> 32)},
                             {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)});
    }
    // (a select, not an indexed load: the host loop vectorises across elements)
    TENET_HD constexpr std::uint32_t word(std::uint64_t i) const
    {
        const philox_block b = block(i);
        const unsigned k = static_cast<unsigned>(i % 4);
        return k == 0 ? b[0] : k == 1 ? b[1] : k == 2 ? b[2] : b[3];
    }
};

// 24 random bits as a float in [0, 1), exactly.
TENET_HD constexpr f32 unit_float(std::uint32_t word) { return static_cast<f32>(word >> 8) * 0x1p-24f; }

struct uniform_generator {
    using value_type = f32;
    philox_stream random;
    f32 low, high;
    TENET_HD f32 operator()(std::uint64_t i) const
    {
        return exact::fma(exact::add(high, -low), unit_float(random.word(i)), low);
    }
};

// Box-Muller on the element's pair of words: (2j, 2j+1) share one pair.
struct normal_generator {
    using value_type = f32;
    philox_stream random;
    f32 mean, stddev;
    TENET_HD f32 operator()(std::uint64_t i) const
    {
        const philox_block words = random.block(i);
        const unsigned pair = (i % 4) & 2u;
        const f32 u1 = static_cast<f32>((words[pair] >> 8) + 1u) * 0x1p-24f;  // (0, 1]
        const f32 u2 = unit_float(words[pair + 1]);                           // [0, 1)
        const f32 radius = exact::sqrt(exact::mul(-2.0f, exact::log(u1)));
        const exact::sin_cos angle = exact::sincospi(exact::mul(u2, 2.0f));
        const f32 z = exact::mul(radius, (i % 2 == 0) ? angle.cos : angle.sin);
        return exact::fma(stddev, z, mean);
    }
};

struct bernoulli_generator {
    using value_type = bool;
    philox_stream random;
    f32 probability;
    TENET_HD bool operator()(std::uint64_t i) const { return unit_float(random.word(i)) < probability; }
};

// The same draws, with the stream's offset XOR-ed with a counter read from
// memory when the expression runs, not when it is built: a replayed CUDA
// Graph draws anew as the counter moves (dropout masks per step).
struct counted_bernoulli_generator {
    using value_type = bool;
    std::uint64_t seed, offset;
    const f64* counter;
    f32 probability;
    TENET_HD bool operator()(std::uint64_t i) const
    {
        const philox_stream random{seed, offset ^ static_cast<std::uint64_t>(*counter)};
        return unit_float(random.word(i)) < probability;
    }
};

}  // namespace detail::expr

// Uniform in [low, high).
template <shape_type S>
auto random_uniform(std::uint64_t seed, std::uint64_t offset = 0, f32 low = 0.0f, f32 high = 1.0f)
{
    return detail::expr::generator_expr<detail::expr::uniform_generator, S>{{{seed, offset}, low, high}};
}

// Normal with the given mean and standard deviation.
template <shape_type S>
auto random_normal(std::uint64_t seed, std::uint64_t offset = 0, f32 mean = 0.0f, f32 stddev = 1.0f)
{
    return detail::expr::generator_expr<detail::expr::normal_generator, S>{{{seed, offset}, mean, stddev}};
}

// true with the given probability.
template <shape_type S>
auto bernoulli(f32 probability, std::uint64_t seed, std::uint64_t offset = 0)
{
    return detail::expr::generator_expr<detail::expr::bernoulli_generator, S>{{{seed, offset}, probability}};
}

// bernoulli with offset ^ counter as the offset, counter being a rank-0 f64
// tensor or view (an exact integer) read when the expression runs:
// bernoulli<S>(p, seed, step, offset) draws what bernoulli<S>(p, seed,
// offset ^ step_value) draws, and a captured graph that advances `step`
// draws a new mask each replay.
template <shape_type S, class Counter>
    requires(expression<Counter> && std::is_same_v<typename Counter::shape, Shape<>> &&
             std::is_same_v<std::remove_const_t<typename Counter::element_type>, f64>)
auto bernoulli(f32 probability, std::uint64_t seed, const Counter& counter, std::uint64_t offset = 0)
{
    return detail::expr::generator_expr<detail::expr::counted_bernoulli_generator, S, typename Counter::place>{
        {seed, offset, counter.data(), probability}};
}

// start, start + step, start + 2 step, ... in row-major order; i32 for
// integer arguments, f32 for floating ones.
template <shape_type S, scalar_value V = int>
auto iota(V start = 0, V step = 1)
{
    using value = std::conditional_t<std::is_floating_point_v<V>, f32, i32>;
    return detail::expr::generator_expr<detail::expr::iota_generator<value>, S>{
        {detail::expr::scalar_as<value>(start), detail::expr::scalar_as<value>(step)}};
}

}  // namespace tenet

// For the folders above this one (see docs/ARCHITECTURE.md, "Namespaces").
namespace tenet::internal {
using detail::expr::philox_block;
using detail::expr::philox4x32_10;
}  // namespace tenet::internal
