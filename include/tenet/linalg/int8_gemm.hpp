// int8_gemm(acc, x, w): acc[M, N] = x[M, K] w[N, K]^T in exact int32 -- the
// product of an int8 Linear layer (x: quantized activations, w: quantized
// weights, one row per output feature), before dequantization.
//
// All three are contiguous row-major tensors or views in one place.
//   host    an exact int32 loop: OpenMP over blocks of four output columns,
//           the operands widened to i16 once (vectorised multiply-add pairs).
//   device  cuBLASLt IMMA on the current stream. tenet's row-major x w^T is
//           cuBLASLt's column-major acc^T[N, M] = op(A) op(B) with A = w (a
//           [K, N] column-major matrix, transposed) and B = x ([K, M], not
//           transposed): the "TN" form IMMA requires (see cublaslt.hpp for
//           the row-/column-major mapping).
// cuBLASLt's rules for IMMA with the regular (column-major) ordering:
// CUBLAS_COMPUTE_32I, A and B CUDA_R_8I, C and D CUDA_R_32I, alpha and beta
// int32 (scale type CUDA_R_32I); TN only; every pointer 4-byte aligned (16
// for the fast kernels); leading dimensions multiples of 4; cuBLASLt's m and
// k multiples of 4. Here cuBLASLt's m is N, its k is K and the leading
// dimensions are K, K and N, so K % 4 == 0 and N % 4 == 0 (checked at compile
// time: pad the features) cover them all; M is free. IMMA has no epilogue
// for this form: dequantization, bias and activation are a separate pass.
// Where cuBLASLt still finds no algorithm, cublas_error is thrown: there is
// no silent fallback to another path.
#pragma once

#include "../diagnostic.hpp"
#include "../expr/views.hpp"
#include "../memory/error.hpp"
#include "../memory/stream.hpp"
#include "../tensor/copy.hpp"
#include "cublas_error.hpp"
#include "cublaslt.hpp"
#include "gemm_layout.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace tenet::linalg {
namespace detail {



// The largest K whose int32 sums cannot overflow: K * (-128)^2 <= 2^31 - 1.
inline constexpr std::size_t int8_gemm_max_k = 131071;

template <class SX, class SW, class SA>
struct int8_gemm_shapes_do_not_fit {
    static constexpr auto text()
    {
        return fixed_string("tenet: int8_gemm(acc, x, w) needs x [M, K], w [N, K], acc [M, N]; got x ") +
               tenet::shape_name<SX>::text() + fixed_string(", w ") + tenet::shape_name<SW>::text() + fixed_string(", acc ") +
               tenet::shape_name<SA>::text();
    }
};

template <std::size_t M, std::size_t N, std::size_t K>
struct int8_gemm_unaligned_on_device {
    static constexpr auto text()
    {
        return fixed_string("tenet: int8_gemm on the device needs K and N to be multiples of 4 (cuBLASLt IMMA); "
                            "here M=") +
               decimal<M>() + fixed_string(", N=") + decimal<N>() + fixed_string(", K=") + decimal<K>() +
               fixed_string(": pad K and N with zeros to multiples of 4");
    }
};

template <class XV, class WV, class AV>
struct int8_gemm_check {
    using SX = typename XV::shape;
    using SW = typename WV::shape;
    using SA = typename AV::shape;
    static constexpr bool ranks = SX::rank == 2 && SW::rank == 2 && SA::rank == 2;
    static constexpr std::size_t M = SX::extents[0], K = SX::extents[ranks ? 1 : 0];
    static constexpr std::size_t N = SW::extents[0];
    static constexpr bool shapes =
        ranks && SW::extents[ranks ? 1 : 0] == K && SA::extents[0] == M && SA::extents[ranks ? 1 : 0] == N;
    static constexpr bool types = std::is_same_v<typename XV::element_type, i8> &&
                                  std::is_same_v<typename WV::element_type, i8> &&
                                  std::is_same_v<typename AV::element_type, i32>;
    static constexpr bool contiguous = index_map<typename XV::layout>::contiguous &&
                                       index_map<typename WV::layout>::contiguous &&
                                       index_map<typename AV::layout>::contiguous;
    using place = typename AV::place;
    static constexpr bool places = std::is_same_v<typename XV::place, place> && std::is_same_v<typename WV::place, place>;
    static constexpr bool on_device = !host_accessible_v<place>;
    static constexpr bool aligned = !on_device || (K % 4 == 0 && N % 4 == 0);

    static constexpr bool ok = shapes && types && contiguous && places && aligned && K <= int8_gemm_max_k;

    static constexpr void assert_all()
    {
        static_assert(diagnose<shapes, int8_gemm_shapes_do_not_fit<SX, SW, SA>>::value);
        static_assert(types, "tenet: int8_gemm(acc, x, w) needs i8 x and w and an i32 acc");
        static_assert(contiguous, "tenet: int8_gemm needs contiguous row-major x, w and acc (copy a view first)");
        static_assert(places, "tenet: int8_gemm: x, w and acc must be in the same place");
        static_assert(K <= int8_gemm_max_k, "tenet: int8_gemm: K above 131071 can overflow the int32 accumulator");
        static_assert(!on_device || TENET_CUDA_COMPILER,
                      "tenet: int8_gemm on Device tensors needs a CUDA compiler: compile this file with nvcc");
        static_assert(diagnose<!shapes || !TENET_CUDA_COMPILER || aligned, int8_gemm_unaligned_on_device<M, N, K>>::value);
    }
};

// Four weight rows per pass over an x row: each x element is loaded once for
// four products, and the four sums vectorise as one reduction each. The
// operands are widened to i16 first: i16 x i16 -> i32 sums compile to
// multiply-add pairs (pmaddwd), about 4x faster than widening each i8 to i32.
template <std::size_t K>
void dot4(i32* out, const std::int16_t* row, const std::int16_t* w)
{
    i32 s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (std::size_t k = 0; k < K; ++k) {
        const i32 a = row[k];
        s0 += a * w[k];
        s1 += a * w[K + k];
        s2 += a * w[2 * K + k];
        s3 += a * w[3 * K + k];
    }
    out[0] = s0, out[1] = s1, out[2] = s2, out[3] = s3;
}

// Threads split the output columns four at a time: each widens its four
// weight rows once and runs them against every (already widened) x row.
template <std::size_t M, std::size_t N, std::size_t K>
void host_int8_gemm(i32* acc, const i8* x, const i8* w)
{
    [[maybe_unused]] constexpr bool parallel = M * N * K >= (std::size_t{1} << 18);
    std::vector<std::int16_t> xs(M * K);
    TENET_OMP_PARALLEL_FOR_IF(parallel)
    for (std::size_t i = 0; i < M * K; ++i) xs[i] = x[i];
    constexpr std::size_t blocks = (N + 3) / 4;
    TENET_OMP_PARALLEL_FOR_IF(parallel && blocks > 1)
    for (std::size_t block = 0; block < blocks; ++block) {
        const std::size_t n0 = block * 4, rows = N - n0 < 4 ? N - n0 : 4;
        std::vector<std::int16_t> ws(4 * K, 0);  // missing rows of the last block stay 0
        for (std::size_t i = 0; i < rows * K; ++i) ws[i] = w[n0 * K + i];
        i32 sums[4];
        for (std::size_t m = 0; m < M; ++m) {
            dot4<K>(sums, xs.data() + m * K, ws.data());
            for (std::size_t r = 0; r < rows; ++r) acc[m * N + n0 + r] = sums[r];
        }
    }
}

template <class V>
auto first_of(const V& v)
{
    return v.data() + V::layout::offset;
}

}  // namespace detail

template <class Acc, class X, class W>
void int8_gemm(Acc&& acc, const X& x, const W& w)
{
    const auto xv = tenet::as_view(x);
    const auto wv = tenet::as_view(w);
    const auto av = tenet::as_view(acc);
    using check = detail::int8_gemm_check<decltype(xv), decltype(wv), decltype(av)>;
    check::assert_all();
    if constexpr (check::ok) {
        if (!xv.data() || !wv.data() || !av.data())
            throw error("tenet: int8_gemm: an operand or the destination has no memory (a moved-from tensor?)");
        if constexpr (!check::on_device) {
            detail::host_int8_gemm<check::M, check::N, check::K>(detail::first_of(av), detail::first_of(xv),
                                                                 detail::first_of(wv));
        } else {
#if TENET_CUDA_COMPILER
            using w_transposed = decltype(transpose(wv));  // [K, N], column-major
            using problem = detail::gemm_problem<i8, i32, i32, matmul_math::standard,
                                                 detail::matrix_form<typename decltype(xv)::layout>,
                                                 detail::matrix_form<typename w_transposed::layout>,
                                                 detail::matrix_form<typename decltype(av)::layout>>;
            const detail::lt_pointers p{detail::first_of(xv), detail::first_of(wv), detail::first_of(av), nullptr, nullptr};
            if (!detail::lt_gemm<problem, detail::lt_epilogue_spec<detail::lt_epilogue::none>>(p, current_stream()))
                throw cublas_error(static_cast<int>(CUBLAS_STATUS_NOT_SUPPORTED), "cublasLtMatmul (int8 IMMA)",
                                   "no cuBLASLt algorithm for int8_gemm with M=" + std::to_string(check::M) +
                                       ", N=" + std::to_string(check::N) + ", K=" + std::to_string(check::K) +
                                       " (CUBLAS_STATUS_NOT_SUPPORTED)");
#endif
        }
    }
}

}  // namespace tenet::linalg
