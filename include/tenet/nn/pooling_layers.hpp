// Pooling over NHWC images (Shape<N, H, W, C>), as PyTorch's:
//   MaxPool2d<Kernel, Stride = Kernel, Padding = 0>   the window's maximum
//       (NaN propagates; ties go to the first tap in row-major order)
//   AvgPool2d<Kernel, Stride = Kernel, Padding = 0>   the window's mean,
//       padding counted as zeros (count_include_pad)
//   GlobalAvgPool2d                                   the mean over H and W:
//       Shape<N, H, W, C> -> Shape<N, C>, ready for a Linear
// No parameters; each direction is one fused gather (conv/pooling.hpp). Max
// pooling saves nothing: its backward finds each window's choice again from
// the input (which layers keep alive until the backward).
#pragma once

#include "../conv/conv.hpp"
#include "layer.hpp"

#include <algorithm>

namespace tenet::nn {
namespace detail {

enum class pool_misfit { none, padding, rank, kernel };

template <bool Max, std::size_t K, std::size_t S, std::size_t P, class Shape>
struct MaxPool2d_AvgPool2d_take_NHWC_images_with_padding_at_most_half_the_kernel_not {
    static constexpr pool_misfit why = [] {
        if (2 * P > K) return pool_misfit::padding;
        if (Shape::rank != 4) return pool_misfit::rank;
        return pool_misfit::kernel;
    }();
    static constexpr auto reason()
    {
        if constexpr (why == pool_misfit::padding)
            return fixed_string(": padding ") + decimal<P>() + fixed_string(" must be at most half the kernel ") +
                   decimal<K>();
        else if constexpr (why == pool_misfit::rank)
            return fixed_string(": it takes NHWC images, Shape<N, H, W, C>");
        else
            return fixed_string(": the ") + decimal<K>() + fixed_string("x") + decimal<K>() +
                   fixed_string(" window is larger than the padded input");
    }
    static constexpr auto text()
    {
        return fixed_string(Max ? "tenet: MaxPool2d<" : "tenet: AvgPool2d<") + decimal<K>() + fixed_string(", ") +
               decimal<S>() + fixed_string(", ") + decimal<P>() + fixed_string("> fed ") + shape_name<Shape>::text() +
               reason();
    }
};

template <std::size_t K, std::size_t S, std::size_t P, class X>
inline constexpr bool pool_fits =
    2 * P <= K && X::rank == 4 && conv::window_geometry<std::conditional_t<X::rank == 4, X, Shape<1, 1, 1, 1>>, K, S, P>::fits;

// Where the input does not fit, a stand-in: the batch, channels and pixels
// (at least the window) of the input, as far as it has them.
template <std::size_t K, class X>
using pool_stand_in =
    Shape<extent_or_one<X, 0>, std::max(extent_or_one<X, 1>, K), std::max(extent_or_one<X, 2>, K), extent_or_one<X, 3>>;

template <bool Max, std::size_t K, std::size_t S, std::size_t P, class Shape>
struct pool_output {
    static_assert(K >= 1 && S >= 1, "tenet: MaxPool2d/AvgPool2d: kernel and stride must be at least 1");
    using nhwc = std::conditional_t<pool_fits<K, S, P, Shape>, Shape, pool_stand_in<K, Shape>>;
    using geometry = conv::window_geometry<nhwc, K, S, P>;
    static_assert(diagnose<pool_fits<K, S, P, Shape>, MaxPool2d_AvgPool2d_take_NHWC_images_with_padding_at_most_half_the_kernel_not<Max, K, S, P, Shape>>::value);
    using type = typename geometry::template output_shape<geometry::channels>;
};

template <precision_policy P, class InShape, class Place, bool Max, class Geometry>
class pool_layer : public parameterless_layer {
    using storage = typename P::storage;

public:
    using input_shape = InShape;
    using output_shape = typename Geometry::template output_shape<Geometry::channels>;
    static constexpr std::string_view kind = Max ? "MaxPool2d" : "AvgPool2d";
    using parameterless_layer::parameterless_layer;

    template <class X, class Y>
    void forward(const X& x, const Y& y, const step_info&)
    {
        check_input_element<storage, X>();
        const auto xv = contiguous_as<InShape>(x);
        input_ = xv.data();
        if constexpr (Max) conv::max_pool2d_into<Geometry>(contiguous_as<output_shape>(y), xv);
        else assign(contiguous_as<output_shape>(y), conv::avg_pool2d<Geometry>(xv));
    }

    template <class DY, class DX, class Prev>
    void backward(const DY& dy, const DX& dx, const step_info&, Prev&)
    {
        if constexpr (!is_no_input_gradient<DX>) {
            const auto d = contiguous_as<output_shape>(dy);
            if constexpr (Max)
                conv::max_pool2d_backward_into<Geometry>(contiguous_as<InShape>(dx), make_view<InShape, Place>(input_), d);
            else
                assign(contiguous_as<InShape>(dx), conv::avg_pool2d_backward<Geometry>(d));
        }
    }

private:
    const storage* input_ = nullptr;
};

template <class Shape>
struct GlobalAvgPool2d_takes_NHWC_images_Shape_N_H_W_C_not {
    static constexpr auto text()
    {
        return fixed_string("tenet: GlobalAvgPool2d fed ") + shape_name<Shape>::text() +
               fixed_string(": it takes NHWC images, Shape<N, H, W, C>");
    }
};

template <class Shape>
struct global_pool_output {
    static_assert(diagnose<Shape::rank == 4, GlobalAvgPool2d_takes_NHWC_images_Shape_N_H_W_C_not<Shape>>::value);
    using nhwc = std::conditional_t<Shape::rank == 4, Shape, tenet::Shape<extent_or_one<Shape, 0>, 1, 1, 1>>;
    using type = tenet::Shape<nhwc::extents[0], nhwc::extents[3]>;
};

template <precision_policy P, class InShape, class Place>
class global_avg_pool_layer : public parameterless_layer {
    using nhwc = typename global_pool_output<InShape>::nhwc;  // (a stand-in where InShape is no image)
    static constexpr std::size_t n = nhwc::extents[0], pixels = nhwc::extents[1] * nhwc::extents[2], c = nhwc::extents[3];
    using pixels_shape = Shape<n, pixels, c>;

public:
    static constexpr std::string_view kind = "GlobalAvgPool2d";
    using input_shape = InShape;
    using output_shape = Shape<n, c>;
    using parameterless_layer::parameterless_layer;

    template <class X, class Y>
    void forward(const X& x, const Y& y, const step_info&)
    {
        check_input_element<typename P::storage, X>();
        assign(contiguous_as<output_shape>(y), mean<1>(contiguous_as<pixels_shape>(x)));
    }

    template <class DY, class DX, class Prev>
    void backward(const DY& dy, const DX& dx, const step_info&, Prev&)
    {
        if constexpr (!is_no_input_gradient<DX>)
            assign(contiguous_as<pixels_shape>(dx),
                   broadcast_to<pixels_shape>(unsqueeze<1>(contiguous_as<output_shape>(dy))) * (1.0f / pixels));
    }
};

}  // namespace detail

template <std::size_t Kernel, std::size_t Stride = Kernel, std::size_t Padding = 0>
struct MaxPool2d {
    template <class S>
    using output_shape = typename detail::pool_output<true, Kernel, Stride, Padding, S>::type;
    template <class S>
    static constexpr bool accepts = detail::pool_fits<Kernel, Stride, Padding, S>;
    template <precision_policy P, class S, class Place>
    using layer = detail::pool_layer<P, S, Place, true, typename detail::pool_output<true, Kernel, Stride, Padding, S>::geometry>;
};

template <std::size_t Kernel, std::size_t Stride = Kernel, std::size_t Padding = 0>
struct AvgPool2d {
    template <class S>
    using output_shape = typename detail::pool_output<false, Kernel, Stride, Padding, S>::type;
    template <class S>
    static constexpr bool accepts = detail::pool_fits<Kernel, Stride, Padding, S>;
    template <precision_policy P, class S, class Place>
    using layer = detail::pool_layer<P, S, Place, false, typename detail::pool_output<false, Kernel, Stride, Padding, S>::geometry>;
};

struct GlobalAvgPool2d {
    template <class S>
    using output_shape = typename detail::global_pool_output<S>::type;
    template <class S>
    static constexpr bool accepts = S::rank == 4;
    template <precision_policy P, class S, class Place>
    using layer = detail::global_avg_pool_layer<P, S, Place>;
};

}  // namespace tenet::nn
