// im2col and col2im: a convolution as a GEMM. im2col<Geometry, Groups>(x)
// lays each output pixel's receptive field out as a row: element
// (g, m, k) with m = (n, oh, ow) an output pixel and k = (kh, kw, c) a tap
// and an input channel of group g, zero where the tap reads padding (or a
// given value: an int8 input pads with its zero point, the real 0). Then
// y[m, g, :] = cols[g, m, :] W[g]^T, with W of shape [Cout, K, K, Cin / G]
// seen as [G, Cout / G, K K Cin / G]. col2im is its adjoint: element
// (n, h, w, c) of the input gradient sums the column entries that read it,
// in a fixed order (deterministic, no atomics), from a gather rather than a
// scatter. With one group the columns are [M, K K C], without the group axis.
#pragma once

#include "../expr/scalar.hpp"
#include "../numeric/convert.hpp"
#include "geometry.hpp"
#include "window_expr.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

namespace tenet::conv {
namespace detail {

template <class G, std::size_t Groups>
struct column_layout {
    static constexpr std::size_t group_channels = G::channels / Groups;
    static constexpr std::size_t row_length = G::taps * group_channels;  // K K Cin / G
    using shape = std::conditional_t<Groups == 1, Shape<G::positions, row_length>,
                                     Shape<Groups, G::positions, row_length>>;
};

template <class G, std::size_t Groups>
struct im2col_rule {
    using columns = column_layout<G, Groups>;
    using shape = typename columns::shape;

    template <class Index, class X, class... Pad>
    TENET_HD static typename X::value_type at(Index i, const value_pack<X, Pad...>& operands)
    {
        using source = typename G::input_index;
        constexpr Index row_length = columns::row_length, group_channels = columns::group_channels;
        const Index k = i % row_length, row = i / row_length;
        const Index m = row % Index{G::positions}, g = row / Index{G::positions};
        const Index c = k % group_channels, tap = k / group_channels;
        const Index ow = m % Index{G::out_width}, oh = (m / Index{G::out_width}) % Index{G::out_height},
                    n = m / Index{G::out_width * G::out_height};
        const std::int64_t h = G::source(oh, tap / G::kernel), w = G::source(ow, tap % G::kernel);
        if (h < 0 || h >= std::int64_t{G::height} || w < 0 || w >= std::int64_t{G::width}) {
            if constexpr (sizeof...(Pad) == 1) return get<1>(operands).at(i);
            else return typename X::value_type(0);
        }
        const source at = ((static_cast<source>(n) * G::height + static_cast<source>(h)) * G::width +
                           static_cast<source>(w)) * G::channels +
                          static_cast<source>(g) * group_channels + static_cast<source>(c);
        return get<0>(operands).at(at);
    }
};

template <class G, std::size_t Groups>
struct col2im_rule {
    using columns = column_layout<G, Groups>;
    using shape = typename G::input_shape;

    template <class Index, class D>
    TENET_HD static typename D::value_type at(Index i, const value_pack<D>& operands)
    {
        using column_index = index_for<columns::shape::numel>;
        constexpr std::size_t group_channels = columns::group_channels;
        const Index channel = i % Index{G::channels}, pixel = i / Index{G::channels};
        const Index w = pixel % Index{G::width}, h = (pixel / Index{G::width}) % Index{G::height},
                    n = pixel / Index{G::width * G::height};
        const column_index g = channel / group_channels, c = channel % group_channels;
        typename D::value_type sum(0);
        for (std::size_t kh = 0; kh < G::kernel; ++kh) {
            const std::int64_t oh = G::template reader<G::out_height>(h, kh);
            if (oh < 0) continue;
            for (std::size_t kw = 0; kw < G::kernel; ++kw) {
                const std::int64_t ow = G::template reader<G::out_width>(w, kw);
                if (ow < 0) continue;
                const column_index m = (static_cast<column_index>(n) * G::out_height + static_cast<column_index>(oh)) *
                                           G::out_width + static_cast<column_index>(ow);
                const column_index k = (kh * G::kernel + kw) * group_channels + c;
                sum += get<0>(operands).at((g * G::positions + m) * columns::row_length + k);
            }
        }
        return sum;
    }
};

// The same two on the host as loops over whole runs of channels (contiguous
// in NHWC, so they copy and add as vectors), rows split across cores: what
// conv2d uses there. They give the expressions' values exactly (col2im adds
// in the same order).
template <class G, std::size_t Groups, class T>
void host_im2col(T* columns, const T* x)
{
    using layout = column_layout<G, Groups>;
    constexpr std::size_t rows = Groups * G::positions, cg = layout::group_channels;
    TENET_OMP_PARALLEL_FOR_IF(rows * layout::row_length > 32768)
    for (std::size_t r = 0; r < rows; ++r) {
        const std::size_t g = r / G::positions, m = r % G::positions;
        const std::size_t ow = m % G::out_width, oh = m / G::out_width % G::out_height,
                          n = m / (G::out_width * G::out_height);
        T* row = columns + r * layout::row_length;
        for (std::size_t kh = 0; kh < G::kernel; ++kh) {
            const std::int64_t h = G::source(oh, kh);
            for (std::size_t kw = 0; kw < G::kernel; ++kw, row += cg) {
                const std::int64_t w = G::source(ow, kw);
                if (h < 0 || h >= std::int64_t{G::height} || w < 0 || w >= std::int64_t{G::width}) {
                    std::fill_n(row, cg, T(0.0f));
                    continue;
                }
                const T* from = x + ((n * G::height + static_cast<std::size_t>(h)) * G::width + static_cast<std::size_t>(w)) *
                                        G::channels + g * cg;
                std::copy_n(from, cg, row);
            }
        }
    }
}

template <class G, std::size_t Groups, class T, class D>
void host_col2im(T* dx, const D* columns)
{
    using layout = column_layout<G, Groups>;
    using sum_type = compute_t<D>;
    constexpr std::size_t pixels = G::batch * G::height * G::width, cg = layout::group_channels;
    TENET_OMP_PARALLEL_FOR_IF(pixels * G::channels > 32768)
    for (std::size_t p = 0; p < pixels; ++p) {
        const std::size_t w = p % G::width, h = p / G::width % G::height, n = p / (G::width * G::height);
        std::array<sum_type, G::channels> sum{};
        for (std::size_t kh = 0; kh < G::kernel; ++kh) {
            const std::int64_t oh = G::template reader<G::out_height>(h, kh);
            if (oh < 0) continue;
            for (std::size_t kw = 0; kw < G::kernel; ++kw) {
                const std::int64_t ow = G::template reader<G::out_width>(w, kw);
                if (ow < 0) continue;
                const std::size_t m = (n * G::out_height + static_cast<std::size_t>(oh)) * G::out_width +
                                      static_cast<std::size_t>(ow);
                const std::size_t k = (kh * G::kernel + kw) * cg;
                for (std::size_t g = 0; g < Groups; ++g) {
                    const D* from = columns + (g * G::positions + m) * layout::row_length + k;
                    sum_type* to = sum.data() + g * cg;
#pragma omp simd
                    for (std::size_t c = 0; c < cg; ++c) to[c] += convert<sum_type>(from[c]);
                }
            }
        }
        T* out = dx + p * G::channels;
#pragma omp simd
        for (std::size_t c = 0; c < G::channels; ++c) out[c] = convert<T>(sum[c]);
    }
}

}  // namespace detail

// The GEMM rows of a convolution of x (NHWC) with the geometry G: [M, K K C]
// for one group, [Groups, M, K K C / Groups] for more (see the file comment).
template <class G, std::size_t Groups = 1, class X>
    requires expression<std::decay_t<X>>
auto im2col(X&& x)
{
    static_assert(std::is_same_v<typename std::decay_t<X>::shape, typename G::input_shape>,
                  "tenet: internal: im2col's input is not its geometry's");
    return detail::make_window_expr<detail::im2col_rule<G, Groups>>(std::forward<X>(x));
}

// The same with `pad` (a number of x's element type) where a tap reads padding.
template <class G, std::size_t Groups = 1, class X>
    requires expression<std::decay_t<X>>
auto im2col(X&& x, typename std::decay_t<X>::value_type pad)
{
    static_assert(std::is_same_v<typename std::decay_t<X>::shape, typename G::input_shape>,
                  "tenet: internal: im2col's input is not its geometry's");
    using value = typename std::decay_t<X>::value_type;
    return detail::make_window_expr<detail::im2col_rule<G, Groups>>(std::forward<X>(x),
                                                                    tenet::scalar_expr<value>{pad});
}

// The adjoint of im2col: the gradient of x (NHWC) from the gradient of its columns.
template <class G, std::size_t Groups = 1, class D>
    requires expression<std::decay_t<D>>
auto col2im(D&& columns)
{
    static_assert(std::is_same_v<typename std::decay_t<D>::shape, typename detail::column_layout<G, Groups>::shape>,
                  "tenet: internal: col2im's columns do not have im2col's shape");
    return detail::make_window_expr<detail::col2im_rule<G, Groups>>(std::forward<D>(columns));
}

// The shape of im2col<G, Groups>'s result.
template <class G, std::size_t Groups = 1>
using columns_shape = typename detail::column_layout<G, Groups>::shape;

}  // namespace tenet::conv
