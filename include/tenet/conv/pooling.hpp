// Pooling over NHWC images, forward and backward, as gathers (window_expr):
//   max_pool2d<G>(x)               the window's largest element; NaN wins (the
//                                  first NaN), ties go to the first tap in
//                                  row-major window order, padding is skipped
//   max_pool2d_backward<G>(x, dy)  dy to the tap each window chose (found
//                                  again from x: nothing is saved)
//   avg_pool2d<G>(x)               the window's sum over Kernel^2, padding
//                                  counted as zeros (PyTorch's default,
//                                  count_include_pad)
//   avg_pool2d_backward<G>(dy)     dy / Kernel^2 to every tap
// Each input gradient element sums the windows that read it in a fixed
// order: deterministic, no atomics.
#pragma once

#include "../memory/converting_chunks.hpp"
#include "../numeric/convert.hpp"
#include "geometry.hpp"
#include "window_expr.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

namespace tenet::conv {
namespace detail {

// An output element's coordinates (n, oh, ow, c) from its index.
template <class G>
struct output_coordinates {
    std::size_t n, oh, ow, c;
    template <class Index>
    TENET_HD explicit output_coordinates(Index i)
        : n(i / (G::out_height * G::out_width * G::channels)),
          oh(i / (G::out_width * G::channels) % G::out_height),
          ow(i / G::channels % G::out_width),
          c(i % G::channels)
    {
    }
};

template <class G>
TENET_HD constexpr typename G::input_index input_offset(std::size_t n, std::int64_t h, std::int64_t w, std::size_t c)
{
    using index = typename G::input_index;
    return ((static_cast<index>(n) * G::height + static_cast<index>(h)) * G::width + static_cast<index>(w)) *
               G::channels + static_cast<index>(c);
}

// The tap (kh K + kw) a max window chooses: the first NaN, else the first
// largest value; taps on padding are skipped (a window always has one inside).
template <class G, class X>
TENET_HD std::size_t max_tap(const X& x, const output_coordinates<G>& o)
{
    typename X::value_type best{};
    std::size_t chosen = G::taps;
    for (std::size_t kh = 0; kh < G::kernel; ++kh) {
        const std::int64_t h = G::source(o.oh, kh);
        if (h < 0 || h >= std::int64_t{G::height}) continue;
        for (std::size_t kw = 0; kw < G::kernel; ++kw) {
            const std::int64_t w = G::source(o.ow, kw);
            if (w < 0 || w >= std::int64_t{G::width}) continue;
            const auto v = x.at(input_offset<G>(o.n, h, w, o.c));
            const bool best_is_nan = chosen != G::taps && best != best;
            if (chosen == G::taps || (!best_is_nan && (v > best || v != v))) {
                best = v;
                chosen = kh * G::kernel + kw;
            }
        }
    }
    return chosen;
}

template <class G>
struct max_pool_rule {
    using shape = typename G::template output_shape<G::channels>;

    template <class Index, class X>
    TENET_HD static typename X::value_type at(Index i, const value_pack<X>& operands)
    {
        const output_coordinates<G> o(i);
        const std::size_t tap = max_tap(get<0>(operands), o);
        return get<0>(operands).at(
            input_offset<G>(o.n, G::source(o.oh, tap / G::kernel), G::source(o.ow, tap % G::kernel), o.c));
    }
};

template <class G>
struct avg_pool_rule {
    using shape = typename G::template output_shape<G::channels>;

    template <class Index, class X>
    TENET_HD static typename X::value_type at(Index i, const value_pack<X>& operands)
    {
        const output_coordinates<G> o(i);
        typename X::value_type sum(0);
        for (std::size_t kh = 0; kh < G::kernel; ++kh) {
            const std::int64_t h = G::source(o.oh, kh);
            if (h < 0 || h >= std::int64_t{G::height}) continue;
            for (std::size_t kw = 0; kw < G::kernel; ++kw) {
                const std::int64_t w = G::source(o.ow, kw);
                if (w < 0 || w >= std::int64_t{G::width}) continue;
                sum += get<0>(operands).at(input_offset<G>(o.n, h, w, o.c));
            }
        }
        return sum / typename X::value_type(G::taps);
    }
};

// Input gradients: for input element (n, h, w, c), f(tap, output offset)
// for every window that reads it, in row-major tap order.
template <class G, class Index, class F>
TENET_HD void for_each_reader(Index i, F&& f)
{
    const std::size_t c = i % G::channels, w = i / G::channels % G::width,
                      h = i / (G::channels * G::width) % G::height, n = i / (G::channels * G::width * G::height);
    for (std::size_t kh = 0; kh < G::kernel; ++kh) {
        const std::int64_t oh = G::template reader<G::out_height>(h, kh);
        if (oh < 0) continue;
        for (std::size_t kw = 0; kw < G::kernel; ++kw) {
            const std::int64_t ow = G::template reader<G::out_width>(w, kw);
            if (ow < 0) continue;
            const output_coordinates<G> o(((n * G::out_height + oh) * G::out_width + ow) * G::channels + c);
            f(kh * G::kernel + kw, o, ((n * G::out_height + oh) * G::out_width + ow) * G::channels + c);
        }
    }
}

template <class G>
struct max_pool_backward_rule {
    using shape = typename G::input_shape;

    template <class Index, class X, class D>
    TENET_HD static typename D::value_type at(Index i, const value_pack<X, D>& operands)
    {
        typename D::value_type sum(0);
        for_each_reader<G>(i, [&](std::size_t tap, const output_coordinates<G>& o, std::size_t out) {
            if (max_tap(get<0>(operands), o) == tap) sum += get<1>(operands).at(out);
        });
        return sum;
    }
};

template <class G>
struct avg_pool_backward_rule {
    using shape = typename G::input_shape;

    template <class Index, class D>
    TENET_HD static typename D::value_type at(Index i, const value_pack<D>& operands)
    {
        typename D::value_type sum(0);
        for_each_reader<G>(i, [&](std::size_t, const output_coordinates<G>&, std::size_t out) {
            sum += get<0>(operands).at(out);
        });
        return sum / typename D::value_type(G::taps);
    }
};

// Max pooling on the host as loops over whole runs of channels (contiguous in
// NHWC), output pixels split across cores: the same values as the
// expressions. The backward loop is for windows that do not overlap (Stride
// >= Kernel), where each input element is chosen by one window at most.
//
// Output pixel p's window, every channel at once: the chosen value and the
// input pixel (h W + w, within the image) it came from.
template <class G, class T, class Value>
void host_max_window(const T* x, std::size_t p, std::array<Value, G::channels>& best,
                     std::array<std::uint32_t, G::channels>& chosen)
{
    constexpr std::size_t C = G::channels;
    const std::size_t ow = p % G::out_width, oh = p / G::out_width % G::out_height, n = p / (G::out_width * G::out_height);
    bool first = true;
    for (std::size_t kh = 0; kh < G::kernel; ++kh) {
        const std::int64_t h = G::source(oh, kh);
        if (h < 0 || h >= std::int64_t{G::height}) continue;
        for (std::size_t kw = 0; kw < G::kernel; ++kw) {
            const std::int64_t w = G::source(ow, kw);
            if (w < 0 || w >= std::int64_t{G::width}) continue;
            const auto at = static_cast<std::uint32_t>(static_cast<std::size_t>(h) * G::width + static_cast<std::size_t>(w));
            const T* from = x + input_offset<G>(n, h, w, 0);
            // 16 channels converted at a time where C allows (f16 inline
            // in this loop would keep it scalar: memory/converting_chunks.hpp)
            constexpr std::size_t K = C % 16 == 0 ? 16 : C;
            for (std::size_t c0 = 0; c0 < C; c0 += K) {
                const vec<Value, K> v = internal::load_chunk_as<Value, K>(from + c0);
#pragma omp simd
                for (std::size_t k = 0; k < K; ++k) {
                    const std::size_t c = c0 + k;
                    const bool take = first || (best[c] == best[c] && (v[k] > best[c] || v[k] != v[k]));  // first NaN, else first max
                    best[c] = take ? v[k] : best[c];
                    chosen[c] = take ? at : chosen[c];
                }
            }
            first = false;
        }
    }
}

template <class G, class T>
void host_max_pool(T* y, const T* x)
{
    constexpr std::size_t C = G::channels, pixels = G::batch * G::out_height * G::out_width;
    TENET_OMP_PARALLEL_FOR_IF(pixels * C * G::taps > 32768)
    for (std::size_t p = 0; p < pixels; ++p) {
        std::array<compute_t<T>, C> best{};
        std::array<std::uint32_t, C> chosen{};
        host_max_window<G>(x, p, best, chosen);
        T* out = y + p * C;
#pragma omp simd
        for (std::size_t c = 0; c < C; ++c) out[c] = convert<T>(best[c]);
    }
}

template <class G, class T, class D>
void host_max_pool_backward(T* dx, const T* x, const D* dy)
{
    static_assert(G::stride >= G::kernel, "tenet: internal: the host max-pool backward loop needs windows apart");
    constexpr std::size_t C = G::channels, pixels = G::batch * G::out_height * G::out_width;
    std::fill_n(dx, G::input_shape::numel, T(0.0f));  // inputs no window reads
    TENET_OMP_PARALLEL_FOR_IF(pixels * C * G::taps > 32768)
    for (std::size_t p = 0; p < pixels; ++p) {
        std::array<compute_t<T>, C> best{};
        std::array<std::uint32_t, C> chosen{};
        host_max_window<G>(x, p, best, chosen);
        const D* g = dy + p * C;
        T* image = dx + p / (G::out_width * G::out_height) * G::height * G::width * C;
        for (std::size_t c = 0; c < C; ++c) image[chosen[c] * C + c] = convert<T>(convert<compute_t<T>>(g[c]));
    }
}

template <class X, class S>
inline constexpr bool has_shape = std::is_same_v<typename std::decay_t<X>::shape, S>;

}  // namespace detail

template <class G, class X>
    requires expression<std::decay_t<X>>
auto max_pool2d(X&& x)
{
    static_assert(detail::has_shape<X, typename G::input_shape>, "tenet: internal: max_pool2d's input is not its geometry's");
    return detail::make_window_expr<detail::max_pool_rule<G>>(std::forward<X>(x));
}

template <class G, class X, class D>
    requires(expression<std::decay_t<X>> && expression<std::decay_t<D>>)
auto max_pool2d_backward(X&& x, D&& dy)
{
    static_assert(detail::has_shape<X, typename G::input_shape> &&
                      detail::has_shape<D, typename G::template output_shape<G::channels>>,
                  "tenet: internal: max_pool2d_backward's operands do not fit its geometry");
    return detail::make_window_expr<detail::max_pool_backward_rule<G>>(std::forward<X>(x), std::forward<D>(dy));
}

template <class G, class X>
    requires expression<std::decay_t<X>>
auto avg_pool2d(X&& x)
{
    static_assert(detail::has_shape<X, typename G::input_shape>, "tenet: internal: avg_pool2d's input is not its geometry's");
    return detail::make_window_expr<detail::avg_pool_rule<G>>(std::forward<X>(x));
}

template <class G, class D>
    requires expression<std::decay_t<D>>
auto avg_pool2d_backward(D&& dy)
{
    static_assert(detail::has_shape<D, typename G::template output_shape<G::channels>>,
                  "tenet: internal: avg_pool2d_backward's gradient does not fit its geometry");
    return detail::make_window_expr<detail::avg_pool_backward_rule<G>>(std::forward<D>(dy));
}

// y = max_pool2d<G>(x) into a view: on the host by a loop over runs of channels.
template <class G, class Y, class X>
void max_pool2d_into(const Y& y, const X& x)
{
    if constexpr (host_accessible_v<typename X::place>) {
        detail::require_separate(y, x);
        detail::host_max_pool<G>(y.data(), x.data());
    } else {
        assign(y, max_pool2d<G>(x));
    }
}

// dx = max_pool2d_backward<G>(x, dy) into a view: on the host by a loop when
// windows do not overlap (Stride >= Kernel).
template <class G, class DX, class X, class DY>
void max_pool2d_backward_into(const DX& dx, const X& x, const DY& dy)
{
    if constexpr (host_accessible_v<typename X::place> && G::stride >= G::kernel) {
        detail::require_separate(dx, x);
        detail::require_separate(dx, dy);
        detail::host_max_pool_backward<G>(dx.data(), x.data(), dy.data());
    } else {
        assign(dx, max_pool2d_backward<G>(x, dy));
    }
}

}  // namespace tenet::conv
