// The two projections of MultiHeadAttention, named as PyTorch names them
// (in_proj_weight [3 Dim, Dim], in_proj_bias, out_proj.weight,
// out_proj.bias): the policy's Linear layers. The training layer
// (attention.hpp) and the decoding one (cached_attention.hpp) both hold
// them, so both take the same parameter slots in the same order and a
// trained model's parameters load into a decoder as they are.
#pragma once

#include "linear_layer.hpp"

#include <cstddef>
#include <string>

namespace tenet::nn::detail {

template <precision_policy P, class S, class Place, std::size_t Dim>
struct attention_projections {
    using in_type = typename linear_unit<Dim, 3 * Dim, linalg::activation::none>::template layer<P, S, Place>;
    using out_type = typename Linear<Dim, Dim>::template layer<P, S, Place>;
    static constexpr std::size_t parameter_count = in_type::parameter_count + out_type::parameter_count;
    static constexpr std::size_t parameter_numel = in_type::parameter_numel + out_type::parameter_numel;
    static constexpr std::size_t activation_bytes = in_type::activation_bytes + out_type::activation_bytes;

    template <class Slice>
    explicit attention_projections(Slice& parameters) : in(parameters), out(parameters)
    {
    }

    void initialize(std::uint64_t seed)
    {
        in.initialize(seed);
        out.initialize(seed);
    }

    template <class F>
    void for_each_parameter(F& f, const std::string& prefix)
    {
        in.for_each_parameter(f, prefix + "in_proj_");
        out.for_each_parameter(f, prefix + "out_proj.");
    }

    // Both projections' cost around the attention's own.
    template <class T>
    static constexpr layer_cost around(const layer_cost& core)
    {
        return cost_of<in_type, T>() + core + cost_of<out_type, T>();
    }

    in_type in;
    out_type out;
};

}  // namespace tenet::nn::detail
