// Loads and stores of elements and of K-element chunks. On the device, loads
// of inputs go through the read-only path (ld.global.nc) and chunks move as
// 16-byte vectors; on the host a chunk is a memcpy the compiler vectorises.
#pragma once

#include "../config.hpp"
#include "../numeric/float_format.hpp"
#include "../numeric/vec.hpp"

#include <cstddef>
#include <cstring>
#include <cstdint>

namespace tenet::detail::memory {

template <std::size_t Bytes>
struct raw_word;
template <> struct raw_word<1> { using type = unsigned char; };
template <> struct raw_word<2> { using type = unsigned short; };
template <> struct raw_word<4> { using type = unsigned int; };
template <> struct raw_word<8> { using type = unsigned long long; };

#if TENET_DEVICE_PASS
template <std::size_t N>
struct words16 {
    uint4 w[N];
};

template <class W>
__device__ inline W load_readonly_word(const W* p)
{
    if constexpr (sizeof(W) == 1) return static_cast<W>(__ldg(reinterpret_cast<const unsigned char*>(p)));
    else return __ldg(p);
}
#endif

// One element through the read-only path.
template <class T>
TENET_HD inline T load_input(const T* p)
{
#if TENET_DEVICE_PASS
    using W = typename raw_word<sizeof(T)>::type;
    return internal::bit_cast<T>(load_readonly_word(reinterpret_cast<const W*>(p)));
#else
    return *p;
#endif
}

// K adjacent elements; on the device p must be aligned to the chunk's size
// (at most 16 bytes).
template <std::size_t K, class T>
TENET_HD inline vec<T, K> load_input_chunk(const T* p)
{
    constexpr std::size_t bytes = K * sizeof(T);
    vec<T, K> r;
#if TENET_DEVICE_PASS
    if constexpr (bytes >= 16) {
        static_assert(bytes % 16 == 0);
        words16<bytes / 16> words;
TENET_UNROLL
        for (std::size_t q = 0; q < bytes / 16; ++q) words.w[q] = __ldg(reinterpret_cast<const uint4*>(p) + q);
        r = internal::bit_cast<vec<T, K>>(words);
    } else {
        using W = typename raw_word<bytes>::type;
        r = internal::bit_cast<vec<T, K>>(load_readonly_word(reinterpret_cast<const W*>(p)));
    }
#else
    std::memcpy(static_cast<void*>(&r), p, bytes);
#endif
    return r;
}

template <std::size_t K, class T>
TENET_HD inline void store_chunk(T* p, const vec<T, K>& values)
{
    constexpr std::size_t bytes = K * sizeof(T);
#if TENET_DEVICE_PASS
    if constexpr (bytes >= 16) {
        const auto words = internal::bit_cast<words16<bytes / 16>>(values);
TENET_UNROLL
        for (std::size_t q = 0; q < bytes / 16; ++q) reinterpret_cast<uint4*>(p)[q] = words.w[q];
    } else {
        using W = typename raw_word<bytes>::type;
        *reinterpret_cast<W*>(p) = internal::bit_cast<W>(values);
    }
#else
    std::memcpy(static_cast<void*>(p), &values, bytes);
#endif
}

// The alignment a chunk of K elements of T needs for vector access.
template <std::size_t K, class T>
inline constexpr std::size_t chunk_alignment = K * sizeof(T) < 16 ? K * sizeof(T) : 16;

}  // namespace tenet::detail::memory

// For the folders above this one (see docs/ARCHITECTURE.md, "Namespaces").
namespace tenet::internal {
using detail::memory::load_input;
using detail::memory::load_input_chunk;
using detail::memory::store_chunk;
using detail::memory::chunk_alignment;
}  // namespace tenet::internal
