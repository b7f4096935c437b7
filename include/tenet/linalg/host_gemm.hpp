// The host GEMM over the operands' own memory: row-major, column-major
// (transposed views) and sliced matrices are read where they are, so
// nothing is copied. It writes the accumulate type.
//   With oneDNN (TENET_WITH_ONEDNN, as tenet::tenet defines where CMake finds
//   Debian's libdnnl-dev): its matmul primitive (onednn_matmul.hpp) for f32
//   (1.2-1.6x Eigen's on the MLP's shapes, 2-core AVX-512, bench/RESULTS.md)
//   and bf16 operands (read as they are, no conversion); a long inner
//   dimension beside a small output in fixed slices (onednn_inner_slices.hpp).
//   Otherwise (f64, f16 operands, no oneDNN): Eigen's blocked, vectorised
//   (and, with OpenMP, parallel) product through Eigen::Map with an outer
//   stride, in the accumulate type (16-bit operands converted to f32 first).
//
// This is the only header that includes Eigen.
#pragma once

#include "../numeric/types.hpp"
#include "gemm_layout.hpp"

#if defined(TENET_WITH_ONEDNN)
#include "onednn_inner_slices.hpp"
#endif

// Eigen is host code here. Under nvcc it would otherwise mark its functions
// __host__ __device__ (EIGEN_NO_CUDA turns that off), and its warning
// suppressions for nvcc are pragmas that g++, nvcc's host compiler, reports
// as unknown (they are keyed on __NVCC__, hidden while Eigen is read).
// tenet::tenet carries Eigen's include directory; without it everything but
// the host GEMM still compiles (device code, PTX and compile-fail checks).
#if __has_include(<Eigen/Core>)
#define TENET_HAS_EIGEN 1
#if TENET_CUDA_COMPILER && !defined(EIGEN_NO_CUDA)
#define EIGEN_NO_CUDA
#endif
#pragma push_macro("__NVCC__")
#undef __NVCC__
#include <Eigen/Core>
#pragma pop_macro("__NVCC__")
#else
#define TENET_HAS_EIGEN 0
#endif

#include <cstddef>
#include <type_traits>

namespace tenet::linalg::detail {

#if TENET_HAS_EIGEN
template <class T, bool ColumnMajor>
using eigen_matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, ColumnMajor ? Eigen::ColMajor : Eigen::RowMajor>;

template <bool ColumnMajor, class T>
auto eigen_map(T* data, std::size_t rows, std::size_t cols, std::size_t ld)
{
    using matrix = std::conditional_t<std::is_const_v<T>, const eigen_matrix<std::remove_const_t<T>, ColumnMajor>,
                                      eigen_matrix<T, ColumnMajor>>;
    return Eigen::Map<matrix, Eigen::Unaligned, Eigen::OuterStride<>>(
        data, static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols),
        Eigen::OuterStride<>(static_cast<Eigen::Index>(ld)));
}
#endif

// Eigen's product, batch by batch.
template <gemm_dims G, class T>
void eigen_gemm([[maybe_unused]] const T* a, [[maybe_unused]] const T* b, [[maybe_unused]] T* d)
{
#if TENET_HAS_EIGEN
    for (std::size_t i = 0; i != G.batch; ++i) {
        const auto lhs = eigen_map<G.a.column_major>(a + i * G.a.batch_stride, G.m, G.k, G.a.ld);
        const auto rhs = eigen_map<G.b.column_major>(b + i * G.b.batch_stride, G.k, G.n, G.b.ld);
        auto out = eigen_map<false>(d + i * G.d.batch_stride, G.m, G.n, G.d.ld);
        out.noalias() = lhs * rhs;
    }
#else
    static_assert(sizeof(T) == 0, "tenet: matmul on the host needs Eigen: link tenet::tenet (it carries "
                                  "Eigen3::Eigen) or add Eigen's include directory (-I/usr/include/eigen3)");
#endif
}

// Does the host GEMM read operands of type In directly, for this accumulate type?
template <class In, class Acc>
inline constexpr bool host_gemm_reads = std::is_same_v<In, Acc> ||
#if defined(TENET_WITH_ONEDNN)
                                        (std::is_same_v<In, bf16> && std::is_same_v<Acc, f32>) ||
#endif
                                        false;

// d = a b for every batch; a, b and d point at the first element of batch 0.
template <class Problem, class In, class Acc>
void host_gemm(const In* a, const In* b, Acc* d)
{
    static_assert(std::is_same_v<Acc, typename Problem::accumulate_type> && host_gemm_reads<In, Acc>,
                  "tenet: internal: the host GEMM reads the accumulate type (or bf16 with oneDNN) and writes the "
                  "accumulate type");
#if defined(TENET_WITH_ONEDNN)
    if constexpr (std::is_same_v<In, bf16> || std::is_same_v<In, f32>) {
        if constexpr (inner_slices(Problem::dims) > 1)
            onednn_sliced_gemm<Problem::dims, In>(a, b, d);
        else
            onednn_gemm<Problem::dims, In>::run(a, b, d);
        return;
    } else
#endif
    {
        eigen_gemm<Problem::dims>(a, b, d);
    }
}

}  // namespace tenet::linalg::detail
