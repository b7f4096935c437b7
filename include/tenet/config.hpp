// tenet configuration: the host/device qualifier, compiler and feature
// detection, and the library version. Every tenet header includes this first.
#pragma once

#define TENET_VERSION_MAJOR 0
#define TENET_VERSION_MINOR 1
#define TENET_VERSION_PATCH 0
#define TENET_VERSION_STRING "0.1.0"

#if __cplusplus < 202002L
#error "tenet: C++20 or newer is required (compile with -std=c++20)"
#endif

// Compiled by nvcc (or another CUDA compiler): kernels can be written and launched.
#if defined(__CUDACC__)
#define TENET_CUDA_COMPILER 1
#define TENET_HD __host__ __device__
#else
#define TENET_CUDA_COMPILER 0
#define TENET_HD
#endif

// Inside the device pass of a CUDA compilation (code generated for a GPU).
#if defined(__CUDA_ARCH__)
#define TENET_DEVICE_PASS 1
#else
#define TENET_DEVICE_PASS 0
#endif

// Hardware fp8 conversion instructions exist from sm_89 (Ada, Hopper).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define TENET_HAS_FP8_CVT 1
#else
#define TENET_HAS_FP8_CVT 0
#endif

// Fully unroll a loop with a compile-time trip count. (nvcc's host pass
// forwards pragmas to the host compiler, which knows neither spelling: there
// the optimiser unrolls such loops unaided.)
#if defined(__CUDA_ARCH__) || (defined(__clang__) && !defined(__CUDACC__))
#define TENET_UNROLL _Pragma("unroll")
#elif defined(__GNUC__) && !defined(__CUDACC__)
#define TENET_UNROLL _Pragma("GCC unroll 16")
#else
#define TENET_UNROLL
#endif

// Let the compiler vectorise a host loop whose iterations are independent
// (OpenMP's simd when -fopenmp is on, else g++'s ivdep).
#if defined(_OPENMP) && !defined(__CUDACC__)
#define TENET_SIMD_LOOP _Pragma("omp simd")
#elif defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#define TENET_SIMD_LOOP _Pragma("GCC ivdep")
#else
#define TENET_SIMD_LOOP
#endif

// A loop over a chunk's K lanes: unrolled on the device (a thread's lanes
// are registers), vectorised on the host (unrolled, g++ leaves conversions
// to and from 16-bit floats as scalar code).
#if TENET_DEVICE_PASS
#define TENET_CHUNK_LOOP TENET_UNROLL
#else
#define TENET_CHUNK_LOOP TENET_SIMD_LOOP
#endif

// Split a host loop across cores when OpenMP is on (-fopenmp); serial otherwise.
#define TENET_PRAGMA(text) _Pragma(#text)
#if defined(_OPENMP)
#define TENET_OMP_PARALLEL_FOR_IF(condition) TENET_PRAGMA(omp parallel for schedule(static) if (condition))
#else
#define TENET_OMP_PARALLEL_FOR_IF(condition)
#endif
