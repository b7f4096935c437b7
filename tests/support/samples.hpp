// Input values for conversion tests: every bit pattern of the small types,
// and for f32, f64 and i32 the edge cases of every tenet format plus random
// draws over all bit patterns and over the ranges that matter.
#pragma once

#include <tenet/numeric/traits.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace samples {

inline constexpr std::uint64_t seed = 0x7e2e7'5eedULL;

template <class T>
T from_pattern(std::uint64_t bits)
{
    if constexpr (std::is_same_v<T, tenet::i8>) return static_cast<tenet::i8>(static_cast<std::uint8_t>(bits));
    else return tenet::detail::numeric::from_bits<T>(bits);
}

// Powers of two and their neighbours from 2^-160 to 2^140, with every
// midpoint-ish value where the narrow formats round or overflow.
inline std::vector<double> edge_values()
{
    std::vector<double> v{0.0, 65504.0, 65519.999, 65520.0, 65536.0, 448.0, 464.0, 465.0, 480.0, 57344.0,
                          61440.0, 61441.0, 0.5, 1.5, 2.5, -2.5, 126.5, 127.5, 128.5, -128.5, -129.5, 1e30,
                          3.3895313892515355e38, 3.4028234663852886e38, 2147483647.0, 2147483647.5,
                          2147483648.0, -2147483648.0, -2147483648.5, -2147483649.0, 9.3e18, 1e300};
    for (int e = -160; e <= 140; ++e) {
        const double p = std::ldexp(1.0, e);
        for (double m : {1.0, 1.5, 1.25, 1.125, 1.0625, 1.03125, 1.0 + 1.0 / 2048, 1.0 + 3.0 / 4096,
                         2.0 - 1.0 / 1024, 2.0 - 1.0 / 4096, 2.0 - 1.0 / 256})
            v.push_back(m * p);
    }
    const std::size_t n = v.size();
    for (std::size_t i = 0; i < n; ++i) v.push_back(-v[i]);
    v.push_back(INFINITY);
    v.push_back(-INFINITY);
    return v;
}

inline std::vector<float> f32_values(std::size_t random_count)
{
    std::vector<float> v;
    for (double d : edge_values()) v.push_back(static_cast<float>(d));
    for (std::uint32_t bits : {0x7F800001u, 0xFF800001u, 0x7FC00000u, 0xFFC00000u, 0x7FAAAAAAu, 0xFFFFFFFFu,
                               0x00000001u, 0x80000001u, 0x007FFFFFu, 0x00800000u, 0x7F7FFFFFu, 0x80000000u})
        v.push_back(std::bit_cast<float>(bits));
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int> exponent(-30, 20);
    for (std::size_t i = 0; i < random_count; ++i) {
        v.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));  // any pattern
        const float mantissa = std::bit_cast<float>(0x3F800000u | static_cast<std::uint32_t>(rng() & 0x7FFFFF));
        v.push_back((rng() & 1 ? -1.0f : 1.0f) * std::ldexp(mantissa, exponent(rng)));  // where formats live
    }
    return v;
}

inline std::vector<double> f64_values(std::size_t random_count)
{
    std::vector<double> v = edge_values();
    for (std::uint64_t bits : {0x7FF0000000000001ULL, 0xFFF8000000000000ULL, 0x7FFAAAAAAAAAAAAAULL,
                               0x0000000000000001ULL, 0x7FEFFFFFFFFFFFFFULL})
        v.push_back(std::bit_cast<double>(bits));
    std::mt19937_64 rng(seed + 1);
    std::uniform_int_distribution<int> exponent(-30, 40);
    for (std::size_t i = 0; i < random_count; ++i) {
        v.push_back(std::bit_cast<double>(rng()));
        const double mantissa = std::bit_cast<double>(0x3FF0000000000000ULL | (rng() & 0xFFFFFFFFFFFFFULL));
        v.push_back((rng() & 1 ? -1.0 : 1.0) * std::ldexp(mantissa, exponent(rng)));
    }
    return v;
}

inline std::vector<std::int32_t> i32_values(std::size_t random_count)
{
    std::vector<std::int32_t> v{0, 1, -1, 127, 128, -128, -129, 255, 448, 449, 464, 465, 65504, 65519, 65520,
                                (1 << 24) + 1, -(1 << 24) - 1, (1 << 24) + 3, 2147483647, -2147483647 - 1};
    std::mt19937_64 rng(seed + 2);
    for (std::size_t i = 0; i < random_count; ++i) {
        v.push_back(static_cast<std::int32_t>(rng()));
        v.push_back(static_cast<std::int32_t>(rng() % 2001) - 1000);
    }
    return v;
}

// Every input the tests feed a conversion from T.
template <class T>
std::vector<T> values_of(std::size_t random_count)
{
    if constexpr (std::is_same_v<T, tenet::f32>) return f32_values(random_count);
    else if constexpr (std::is_same_v<T, tenet::f64>) return f64_values(random_count);
    else if constexpr (std::is_same_v<T, tenet::i32>) return i32_values(random_count);
    else if constexpr (std::is_same_v<T, bool>) return {false, true};
    else {
        std::vector<T> v;
        for (std::uint64_t bits = 0; bits < (std::uint64_t{1} << (8 * sizeof(T))); ++bits)
            v.push_back(from_pattern<T>(bits));
        return v;
    }
}

}  // namespace samples
