// load_chunk_as<V, K>(p) and store_chunk_as(p, values): K adjacent elements
// loaded and converted to V, or converted and stored, with tenet::convert's
// rules -- what a leaf does with a chunk. On a host compiled for F16C
// (-mf16c, or -march=native on any x86-64 since 2013), f16 <-> f32 goes
// from memory to registers and back with vcvtph2ps / vcvtps2ph (8 or 16
// lanes an instruction, round to nearest even), NaNs made canonical: g++ 12
// keeps _Float16 conversions scalar without AVX512-FP16, and the bit-level
// routines, vectorised, are long (an f16 ReLU in chunks took 14x bf16's time
// without F16C, 1.1x with it). Elsewhere (the device,
// other CPUs, other types) each value goes through convert in a loop.
#pragma once

#include "../config.hpp"
#include "../numeric/convert.hpp"
#include "../numeric/vec.hpp"
#include "access.hpp"

#include <cstddef>
#include <type_traits>

#if defined(__F16C__) && !TENET_DEVICE_PASS
#define TENET_HOST_F16C 1
#include <immintrin.h>
#else
#define TENET_HOST_F16C 0
#endif

namespace tenet::detail::memory {

#if TENET_HOST_F16C
// 16 lanes, read with one load and written with one store: a chunk built
// from smaller stores and read back whole would miss store forwarding.
// NaN lanes become the canonical NaN (all magnitude bits, sign clear); the
// hardware keeps the payload's top bits, so the canonical f32 NaN narrows
// to the canonical f16 NaN. Subnormals convert exactly: vcvtph2ps ignores
// MXCSR.DAZ, and an f32 that DAZ would zero rounds to a signed zero anyway.
#if defined(__AVX512F__)
// (The zero-masked forms: g++ 12's unmasked ones read an uninitialised register.)
inline constexpr __mmask16 all = 0xFFFF;

inline __m512 canonical_nans(__m512 x)
{
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x, _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF)));
}

inline void widen_f16x16(const f16* from, f32* to)
{
    _mm512_storeu_ps(to, canonical_nans(_mm512_maskz_cvtph_ps(all, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from)))));
}

inline void narrow_f16x16(const f32* from, f16* to)
{
    const __m256i rounded = _mm512_maskz_cvtps_ph(all, canonical_nans(_mm512_loadu_ps(from)), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(to), rounded);
}
#else
inline __m256 canonical_nans(__m256 x)
{
    return _mm256_blendv_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)), _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

inline void widen_f16x16(const f16* from, f32* to)
{
    const __m256i halves = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from));
    _mm256_storeu_ps(to, canonical_nans(_mm256_cvtph_ps(_mm256_castsi256_si128(halves))));
    _mm256_storeu_ps(to + 8, canonical_nans(_mm256_cvtph_ps(_mm256_extractf128_si256(halves, 1))));
}

inline void narrow_f16x16(const f32* from, f16* to)
{
    const __m128i low = _mm256_cvtps_ph(canonical_nans(_mm256_loadu_ps(from)), _MM_FROUND_TO_NEAREST_INT);
    const __m128i high = _mm256_cvtps_ph(canonical_nans(_mm256_loadu_ps(from + 8)), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(to), _mm256_insertf128_si256(_mm256_castsi128_si256(low), high, 1));
}
#endif
#endif

template <class To, class From, std::size_t K>
TENET_HD vec<To, K> convert_each(const vec<From, K>& values)
{
    vec<To, K> r;
TENET_CHUNK_LOOP
    for (std::size_t k = 0; k < K; ++k) r[k] = convert<To>(values[k]);
    return r;
}

template <class V, std::size_t K, class T>
TENET_HD vec<V, K> load_chunk_as(const T* p)
{
#if TENET_HOST_F16C
    if constexpr (K % 16 == 0 && std::is_same_v<T, f16> && std::is_same_v<V, f32>) {
        vec<V, K> r;
        for (std::size_t k = 0; k < K; k += 16) widen_f16x16(p + k, &r[k]);
        return r;
    }
#endif
    return convert_each<V>(load_input_chunk<K>(p));
}

template <std::size_t K, class T, class V>
TENET_HD void store_chunk_as(T* p, const vec<V, K>& values)
{
#if TENET_HOST_F16C
    if constexpr (K % 16 == 0 && std::is_same_v<T, f16> && std::is_same_v<V, f32>) {
        for (std::size_t k = 0; k < K; k += 16) narrow_f16x16(&values[k], p + k);
        return;
    }
#endif
    store_chunk<K>(p, convert_each<T>(values));
}

}  // namespace tenet::detail::memory

namespace tenet::internal {
using detail::memory::load_chunk_as;
using detail::memory::store_chunk_as;
}  // namespace tenet::internal
