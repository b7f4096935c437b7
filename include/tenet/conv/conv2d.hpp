// A 2-D convolution (NHWC input, weights [Cout, K, K, Cin / Groups], as
// cuDNN's KRSC) lowered onto GEMMs: the columns of im2col times the weights,
// with the bias and a ReLU applied in the GEMM's epilogue pattern. The
// caller owns the column buffer (allocated once), which the backward reuses:
//   conv2d_forward<G, Groups, Act>(y, cols, x, w, b)   y = act(conv(x, w) + b)
//   conv2d_backward_weights<G, Groups>(dw, db, dz, cols, x)  dw, db from the
//                                                       output gradient dz
//   conv2d_backward_input<G, Groups>(dx, dcols, dz, w)  dx = col2im(dz W)
// (b and db may be no_bias.) y, dz are the output as a matrix [M, Cout]
// (M = N Ho Wo output pixels); dx, x are NHWC. A 1x1 convolution with
// stride 1 and no padding reads x as its columns, with no im2col at all.
// Grouped convolutions are one batched GEMM over the groups. On the host,
// im2col and col2im run as loops over runs of channels (im2col.hpp).
#pragma once

#include "../linalg/linalg.hpp"
#include "../reduce/reduce.hpp"
#include "im2col.hpp"

namespace tenet::conv {

// Passed for the bias (and its gradient) of a convolution without one.
struct no_bias {};

template <class G, std::size_t Groups>
inline constexpr bool reads_input_as_columns =
    Groups == 1 && G::kernel == 1 && G::stride == 1 && G::padding == 0;

namespace detail {

template <class G, std::size_t Groups, std::size_t OutChannels>
struct gemm_shapes {
    static constexpr std::size_t m = G::positions, row_length = column_layout<G, Groups>::row_length;
    static constexpr std::size_t group_out = OutChannels / Groups;
    // the weights as one matrix per group, and the output as one per group
    using weights = std::conditional_t<Groups == 1, Shape<OutChannels, row_length>, Shape<Groups, group_out, row_length>>;
    using grouped_output = Shape<m, Groups, group_out>;
};

// An [M, Cout] matrix (output, or its gradient) as the GEMM sees it: itself
// for one group, else [Groups, M, Cout / Groups] (a strided view, no copy).
template <std::size_t Groups, class Z>
auto per_group(const Z& z)
{
    using S = typename Z::shape;
    if constexpr (Groups == 1) return z;
    else return permute<1, 0, 2>(reshape<Shape<S::extents[0], Groups, S::extents[1] / Groups>>(z));
}

template <linalg::activation Act, class E>
auto activate(E&& e)
{
    if constexpr (Act == linalg::activation::none) return as_node(std::forward<E>(e));
    else return map(linalg::activation_op<Act>{}, std::forward<E>(e));
}

template <class G, std::size_t Groups, class X, class Cols>
auto columns_of(const X& x, const Cols& cols)
{
    if constexpr (reads_input_as_columns<G, Groups>) return reshape<columns_shape<G, Groups>>(x);
    else return cols;
}

}  // namespace detail

template <class G, std::size_t Groups, linalg::activation Act, class Y, class Cols, class X, class W, class B>
void conv2d_forward(const Y& y, const Cols& cols, const X& x, const W& w, const B& b)
{
    constexpr std::size_t out_channels = Y::shape::extents[1];
    using shapes = detail::gemm_shapes<G, Groups, out_channels>;
    if constexpr (reads_input_as_columns<G, Groups>) {
    } else if constexpr (host_accessible_v<typename X::place>) {
        detail::require_separate(cols, x);
        detail::host_im2col<G, Groups>(cols.data(), x.data());
    } else {
        assign(cols, im2col<G, Groups>(x));
    }
    const auto columns = detail::columns_of<G, Groups>(x, cols);
    const auto weights = reshape<typename shapes::weights>(w);
    constexpr bool biased = !std::is_same_v<B, no_bias>;
    if constexpr (Groups == 1) {
        if constexpr (biased) assign(y, detail::activate<Act>(matmul(columns, transpose(weights)) + b));
        else assign(y, detail::activate<Act>(matmul(columns, transpose(weights))));
    } else {
        assign(detail::per_group<Groups>(y), matmul(columns, transpose(weights)));
        if constexpr (biased) assign(y, detail::activate<Act>(y + b));
        else if constexpr (Act != linalg::activation::none) assign(y, detail::activate<Act>(y));
    }
}

template <class G, std::size_t Groups, class DW, class DB, class DZ, class Cols, class X>
void conv2d_backward_weights(const DW& dw, const DB& db, const DZ& dz, const Cols& cols, const X& x)
{
    using shapes = detail::gemm_shapes<G, Groups, DZ::shape::extents[1]>;
    const auto columns = detail::columns_of<G, Groups>(x, cols);
    assign(reshape<typename shapes::weights>(dw), matmul(transpose(detail::per_group<Groups>(dz)), columns));
    if constexpr (!std::is_same_v<DB, no_bias>) assign(db, sum<0>(dz));
}

// dcols may be the forward's column buffer (its columns are no longer needed).
template <class G, std::size_t Groups, class DX, class Cols, class DZ, class W>
void conv2d_backward_input(const DX& dx, const Cols& dcols, const DZ& dz, const W& w)
{
    using shapes = detail::gemm_shapes<G, Groups, DZ::shape::extents[1]>;
    const auto weights = reshape<typename shapes::weights>(w);
    if constexpr (reads_input_as_columns<G, Groups>) {
        assign(reshape<columns_shape<G, Groups>>(dx), matmul(dz, weights));
    } else {
        assign(dcols, matmul(detail::per_group<Groups>(dz), weights));
        if constexpr (host_accessible_v<typename DX::place>) {
            detail::require_separate(dx, dcols);
            detail::host_col2im<G, Groups>(dx.data(), dcols.data());
        } else {
            assign(dx, col2im<G, Groups>(dcols));
        }
    }
}

}  // namespace tenet::conv
