// The host GEMM: Eigen's blocked, vectorised (and, with OpenMP, parallel)
// matrix product over the operands' own memory. Eigen::Map with an outer
// stride reads row-major, column-major (transposed views) and sliced
// matrices where they are, so nothing is copied. The element type is the
// accumulate type: 16-bit operands were converted to f32 once, before this.
//
// This is the only header that includes Eigen.
#pragma once

#include "gemm_layout.hpp"

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

// d = a b for every batch; a, b and d point at the first element of batch 0.
template <class Problem, class T>
void host_gemm([[maybe_unused]] const T* a, [[maybe_unused]] const T* b, [[maybe_unused]] T* d)
{
    static_assert(std::is_same_v<T, typename Problem::accumulate_type>,
                  "tenet: internal: the host GEMM multiplies in the accumulate type");
#if TENET_HAS_EIGEN
    constexpr gemm_dims g = Problem::dims;
    for (std::size_t i = 0; i != g.batch; ++i) {
        const auto lhs = eigen_map<g.a.column_major>(a + i * g.a.batch_stride, g.m, g.k, g.a.ld);
        const auto rhs = eigen_map<g.b.column_major>(b + i * g.b.batch_stride, g.k, g.n, g.b.ld);
        auto out = eigen_map<false>(d + i * g.d.batch_stride, g.m, g.n, g.d.ld);
        out.noalias() = lhs * rhs;
    }
#else
    static_assert(sizeof(T) == 0, "tenet: matmul on the host needs Eigen: link tenet::tenet (it carries "
                                  "Eigen3::Eigen) or add Eigen's include directory (-I/usr/include/eigen3)");
#endif
}

}  // namespace tenet::linalg::detail
