// permutation(n, seed, epoch): the epoch's sample order, identical on every
// platform and compiler (std::shuffle and the std:: distributions are not:
// their algorithms are unspecified).
//
// Fisher-Yates from the last position down; position i swaps with a draw
// uniform in [0, i], made unbiased by Lemire's multiply-and-reject method.
// Draw k is the high half of splitmix64 at counter k of a key mixed from
// (seed, epoch): a pure function of (seed, epoch, k).
#pragma once

#include "../memory/error.hpp"

#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace tenet::data {
namespace detail {

// Steele, Lea and Flood's finaliser (SplitMix64): state x -> output.
constexpr std::uint64_t splitmix64(std::uint64_t x)
{
    x += 0x9E3779B97F4A7C15u;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9u;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBu;
    return x ^ (x >> 31);
}

class shuffle_draws {
public:
    constexpr shuffle_draws(std::uint64_t seed, std::uint64_t epoch) : key_(splitmix64(splitmix64(seed) + epoch)) {}

    constexpr std::uint32_t next()
    {
        return static_cast<std::uint32_t>(splitmix64(key_ + 0x9E3779B97F4A7C15u * count_++) >> 32);
    }

    // Uniform in [0, bound), 1 <= bound <= 2^32: a 32-bit draw times bound,
    // high half; the low half below (2^32 - bound) % bound marks the draws
    // that would favour some results, and those are drawn again.
    constexpr std::uint32_t below(std::uint64_t bound)
    {
        std::uint64_t product = next() * bound;
        if (static_cast<std::uint32_t>(product) < bound) {
            const std::uint64_t threshold = ((std::uint64_t{1} << 32) - bound) % bound;
            while (static_cast<std::uint32_t>(product) < threshold) product = next() * bound;
        }
        return static_cast<std::uint32_t>(product >> 32);
    }

private:
    std::uint64_t key_;
    std::uint64_t count_ = 0;
};

}  // namespace detail

inline constexpr std::uint64_t max_permutation_size = std::uint64_t{1} << 32;

inline std::vector<std::uint32_t> permutation(std::size_t n, std::uint64_t seed, std::uint64_t epoch)
{
    if (n > max_permutation_size)
        throw error("tenet: permutation of " + std::to_string(n) + " elements: at most 2^32 fit 32-bit indices");
    std::vector<std::uint32_t> order(n);
    std::iota(order.begin(), order.end(), std::uint32_t{0});
    detail::shuffle_draws draws(seed, epoch);
    for (std::size_t i = n; i-- > 1;) std::swap(order[i], order[draws.below(i + 1)]);
    return order;
}

}  // namespace tenet::data
