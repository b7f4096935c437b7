// How a GEMM reads its operands' memory, worked out at compile time from
// static layouts. A BLAS multiplies matrices stored row-major or
// column-major with a leading dimension (ld), in batches a fixed stride
// apart; any layout that is one of those -- a tensor, a slice of its
// columns, a transpose(...) view -- is multiplied in place, without a copy.
// Anything else is first copied into a contiguous scratch tensor.
#pragma once

#include "../numeric/precision.hpp"
#include "../shape/layout.hpp"

#include <cstddef>

namespace tenet::linalg::detail {

enum class matrix_order { row_major, column_major, other };

// A rank-2 or rank-3 layout seen as `batch` matrices of rows x cols: element
// (r, c) of matrix i at offset + i * batch_stride + r * ld + c (row-major) or
// + c * ld + r (column-major). Extent-1 dimensions fit either order.
template <class L>
struct matrix_form {
    static_assert(L::rank == 2 || L::rank == 3, "tenet: internal: a GEMM operand has rank 2 or 3");
    static constexpr std::size_t rank = L::rank;
    static constexpr std::size_t batch = rank == 3 ? L::extents[0] : 1;
    static constexpr std::size_t rows = L::extents[rank - 2];
    static constexpr std::size_t cols = L::extents[rank - 1];
    static constexpr std::size_t row_stride = L::strides[rank - 2];
    static constexpr std::size_t col_stride = L::strides[rank - 1];
    static constexpr std::size_t batch_stride = batch > 1 ? L::strides[0] : 0;
    static constexpr std::size_t offset = L::offset;

    static constexpr bool row_major = (cols == 1 || col_stride == 1) && (rows == 1 || row_stride >= cols);
    static constexpr bool column_major = (rows == 1 || row_stride == 1) && (cols == 1 || col_stride >= rows);
    static constexpr matrix_order order =
        row_major ? matrix_order::row_major : (column_major ? matrix_order::column_major : matrix_order::other);
    static constexpr std::size_t ld =
        row_major ? (rows == 1 ? cols : row_stride) : (cols == 1 ? rows : col_stride);
};

// One matrix operand of a GEMM problem: its order, leading dimension and
// batch stride (0: the same matrix for every batch).
struct gemm_operand {
    bool column_major;
    std::size_t ld;
    std::size_t batch_stride;
};

// D[m, n] = A[m, k] B[k, n], `batch` times; D is always row-major.
struct gemm_dims {
    std::size_t m, n, k, batch;
    gemm_operand a, b, d;
};

template <class F, std::size_t Batch>
constexpr gemm_operand operand_of()
{
    return {F::order == matrix_order::column_major, F::ld, Batch > 1 ? F::batch_stride : 0};
}

// The GEMM of operand forms FA [.., m, k] and FB [.., k, n] into FD [.., m, n].
// A batch of row-major A matrices one after another against one shared B is
// a single taller GEMM (the Linear layer on [batch, tokens, features]).
template <class FA, class FB, class FD>
constexpr gemm_dims make_gemm_dims()
{
    constexpr std::size_t batch = FD::batch;
    constexpr bool stacked = batch > 1 && FB::batch == 1 && FA::batch == batch &&
                             FA::order == matrix_order::row_major && FA::batch_stride == FA::rows * FA::ld &&
                             FD::batch_stride == FD::rows * FD::ld;
    if constexpr (stacked) {
        return {FA::rows * batch, FB::cols, FA::cols, 1,
                operand_of<FA, 1>(), operand_of<FB, 1>(), operand_of<FD, 1>()};
    } else {
        return {FA::rows, FB::cols, FA::cols, batch,
                operand_of<FA, batch>(), operand_of<FB, batch>(), operand_of<FD, batch>()};
    }
}

// What one GEMM multiplies: input element type T (A and B), destination type
// TD, accumulation type, math mode, and the static dimensions.
template <class T, class TD, class Acc, matmul_math Math, class FA, class FB, class FD>
struct gemm_problem {
    using input_type = T;
    using output_type = TD;
    using accumulate_type = Acc;
    static constexpr matmul_math math = Math;
    static constexpr gemm_dims dims = make_gemm_dims<FA, FB, FD>();
};

}  // namespace tenet::linalg::detail
