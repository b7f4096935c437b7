// PatchEmbed<Patch, Channels, Dim>: a Vision Transformer's tokens from NHWC
// images [N, H, W, Channels]: each Patch x Patch square (row-major over the
// image) becomes one token, its Patch * Patch * Channels values (in (row,
// column, channel) order) projected to Dim by a Linear ("proj.weight"
// [Dim, Patch * Patch * Channels], "proj.bias"): [N, H/P * W/P, Dim]. The
// same as a Conv2d with kernel and stride Patch, as PyTorch's ViTs write it,
// done as one copy into patch rows and one GEMM.
#pragma once

#include "linear_layer.hpp"

namespace tenet::nn {
namespace detail {

template <std::size_t Patch, std::size_t Channels, class S>
struct PatchEmbed_takes_NHWC_images_with_Channels_and_sides_multiple_of_Patch_not {
    static constexpr auto text()
    {
        return fixed_string("tenet: PatchEmbed<") + decimal<Patch>() + fixed_string(", ") + decimal<Channels>() +
               fixed_string(", ...> fed ") + shape_name<S>::text() + fixed_string(": it takes NHWC images with ") +
               decimal<Channels>() + fixed_string(" channels whose height and width are multiples of ") +
               decimal<Patch>();
    }
};

template <std::size_t Patch, std::size_t Channels, class S>
inline constexpr bool patch_embed_fits = S::rank == 4 && Patch >= 1 && S::extents[3] == Channels &&
                                        S::extents[1] % Patch == 0 && S::extents[2] % Patch == 0;

template <std::size_t Patch, std::size_t Channels, std::size_t Dim, class S>
struct patch_embed_output {
    static constexpr bool fits = patch_embed_fits<Patch, Channels, S>;
    static_assert(diagnose<fits, PatchEmbed_takes_NHWC_images_with_Channels_and_sides_multiple_of_Patch_not<Patch, Channels, S>>::value);
    using type = Shape<S::extents[0], S::extents[1] / Patch * (S::extents[2] / Patch), Dim>;
};

template <precision_policy P, class S, class Place, std::size_t Patch, std::size_t Channels, std::size_t Dim>
class patch_embed_layer {
    using storage = typename P::storage;
    static constexpr std::size_t N = S::extents[0], Rows = S::extents[1] / Patch, Columns = S::extents[2] / Patch;
    static constexpr std::size_t Tokens = Rows * Columns, Values = Patch * Patch * Channels;
    using patches_shape = Shape<N, Tokens, Values>;
    using proj_t = typename Linear<Values, Dim>::template layer<P, patches_shape, Place>;
    // the image cut into squares, and the squares in token order
    using cut_shape = Shape<N, Rows, Patch, Columns, Patch, Channels>;
    using ordered_shape = Shape<N, Rows, Columns, Patch, Patch, Channels>;

public:
    using input_shape = S;
    using output_shape = Shape<N, Tokens, Dim>;
    static constexpr bool wants_preactivation_gradient = false;
    static constexpr std::size_t parameter_count = proj_t::parameter_count;
    static constexpr std::size_t parameter_numel = proj_t::parameter_numel;
    static constexpr std::size_t activation_bytes = proj_t::activation_bytes + patches_shape::numel * sizeof(storage);
    static constexpr std::size_t activation_gradient_bytes = patches_shape::numel * sizeof(storage);
    static constexpr bool skips_null_gradients = skips_null_gradients_v<proj_t>;
    static constexpr std::string_view kind = "PatchEmbed";

    template <class Slice>
    explicit patch_embed_layer(Slice& parameters) : proj_(parameters)
    {
    }

    void initialize(std::uint64_t seed) { proj_.initialize(seed); }

    template <class X, class Y>
    void forward(const X& x, const Y& y, const step_info& step)
    {
        check_input_element<storage, X>();
        assign(patches_.view(), reshape<patches_shape>(permute<0, 1, 3, 2, 4, 5>(contiguous_as<cut_shape>(x))));
        proj_.forward(patches_.view(), y, step);
    }

    template <class DY, class DX, class Prev>
    void backward(const DY& dy, const DX& dx, const step_info& step, Prev&)
    {
        no_previous_layer none;
        if constexpr (is_no_input_gradient<DX>) {
            proj_.backward(dy, dx, step, none);
        } else {  // (not the first layer: the patches' gradient, put back in image order)
            proj_.backward(dy, d_patches_.view(), step, none);
            assign(contiguous_as<S>(dx), reshape<S>(permute<0, 1, 3, 2, 4, 5>(reshape<ordered_shape>(d_patches_))));
        }
    }

    template <class F>
    void for_each_parameter(F&& f, const std::string& prefix)
    {
        proj_.for_each_parameter(f, prefix + "proj.");
    }

private:
    proj_t proj_;
    Tensor<storage, patches_shape, Place> patches_, d_patches_;
};

}  // namespace detail

template <std::size_t Patch, std::size_t Channels, std::size_t Dim>
struct PatchEmbed {
    template <class S>
    using output_shape = typename detail::patch_embed_output<Patch, Channels, Dim, S>::type;
    template <class S>
    static constexpr bool accepts = detail::patch_embed_fits<Patch, Channels, S>;
    template <precision_policy P, class S, class Place>
    using layer = detail::patch_embed_layer<P, S, Place, Patch, Channels, Dim>;
};

}  // namespace tenet::nn
