// Residual<Layers...>: y = x + f(x), f being Sequential<Layers...> (any
// layers, Checkpointed segments included), which must keep the shape. The
// layer keeps f's output in a tensor of its own (f's last layer may keep its
// output for its backward), so the forward is f, then one add; the backward
// is f's backward, then dx += dy. Parameter and buffer names are f's, under
// the Residual's prefix ("1.0.weight" for the first Linear of a Residual at
// index 1 of a Sequential).
#pragma once

#include "sequential.hpp"

namespace tenet::nn {
namespace detail {

template <class In, class Out>
struct Residual_layers_must_keep_the_shape_In_not_Out {
    static constexpr auto text()
    {
        return fixed_string("tenet: Residual: its layers must keep the shape: fed ") + shape_name<In>::text() +
               fixed_string(" they give ") + shape_name<Out>::text();
    }
};

template <class Inner, class S>
struct residual_output {
    using out = typename Inner::template output_shape<S>;
    // (where the inner layers reject S, theirs is the error)
    static_assert(diagnose<!Inner::template accepts<S> || std::is_same_v<out, S>, Residual_layers_must_keep_the_shape_In_not_Out<S, out>>::value);
    using type = S;
};

template <class Inner, class S>
constexpr bool residual_fits()
{
    if constexpr (Inner::template accepts<S>) return std::is_same_v<typename Inner::template output_shape<S>, S>;
    else return false;
}

template <precision_policy P, class S, class Place, class Inner>
class residual_layer {
    using storage = typename P::storage;
    using inner_t = typename Inner::template layer<P, S, Place>;
    using branch_t = kept_tensor<storage, S, Place>;

public:
    using input_shape = S;
    using output_shape = S;
    static constexpr bool wants_preactivation_gradient = false;
    static constexpr std::size_t parameter_count = inner_t::parameter_count;
    static constexpr std::size_t parameter_numel = inner_t::parameter_numel;
    static constexpr std::size_t buffer_numel = buffer_numel_v<inner_t>;
    static constexpr std::size_t frozen_numel = frozen_numel_v<inner_t>;
    static constexpr std::size_t frozen_count = frozen_count_v<inner_t>;
    static constexpr bool skips_null_gradients = skips_null_gradients_v<inner_t>;
    // the inner layers, and y = x + inner(x) (dx = dy + the inner's dx)
    static constexpr std::string_view kind = "Residual";
    static constexpr bool reports_children = true;  // (the inner layers under its path, and its add)
    static constexpr layer_cost cost =
        cost_of<inner_t, storage, S, S>() + layer_cost{0, 3 * S::numel * sizeof(storage), 0, 3 * S::numel * sizeof(storage), 0, 0};
    static constexpr std::size_t activation_bytes = inner_t::activation_bytes + S::numel * sizeof(storage);
    static constexpr std::size_t activation_gradient_bytes = inner_t::activation_gradient_bytes;
    static constexpr std::size_t recompute_bytes = recompute_bytes_v<inner_t>;
    static constexpr std::size_t offloaded_bytes = offloaded_bytes_v<inner_t>;
    static constexpr std::size_t kept_bytes = kept_bytes_of<inner_t>() + branch_t::arena_bytes;
    static constexpr std::size_t resident_activation_bytes = resident_activation_bytes_of<inner_t>();

    template <class Slice>
    explicit residual_layer(Slice& parameters) : inner_(parameters), branch_(parameters)
    {
    }

    void initialize(std::uint64_t seed) { inner_.initialize(seed); }

    template <class X, class Y>
    void forward(const X& x, const Y& y, const step_info& step)
    {
        check_input_element<storage, X>();
        inner_.forward(x, branch_.view(), step);
        const profile::observed_section add(step.observer, [&] { return add_section(step, "forward"); });
        assign(contiguous_as<S>(y), contiguous_as<S>(x) + branch_.view());
    }

    // f's first layer is handed no previous layer: the gradient it gives is
    // that of the Residual's input, to which dy is then added.
    template <class DY, class DX, class Prev>
    void backward(const DY& dy, const DX& dx, const step_info& step, Prev&)
    {
        static_assert(!Prev::wants_preactivation_gradient, "tenet: internal: a fused unit before a Residual");
        no_previous_layer none;
        inner_.backward(dy, dx, step, none);
        if constexpr (!is_no_input_gradient<DX>) {
            const profile::observed_section add(step.observer, [&] { return add_section(step, "backward"); });
            const auto d = contiguous_as<S>(dx);
            assign(d, d + contiguous_as<S>(dy));
        }
    }

    template <class F>
    void for_each_parameter(F&& f, const std::string& prefix)
    {
        inner_.for_each_parameter(f, prefix);
    }

    template <class F>
    void for_each_buffer(F&& f, const std::string& prefix)
    {
        if constexpr (buffer_numel > 0) inner_.for_each_buffer(f, prefix);
    }

    template <class F>
    void for_each_layer(F&& f)
    {
        inner_.for_each_layer(f);
    }

private:
    // The add, reported under the Residual's own path ("2.0" from "2.0.").
    static profile::section add_section(const step_info& step, const char* pass)
    {
        std::string_view path = step.observer_path;
        if (!path.empty() && path.back() == '.') path.remove_suffix(1);
        return {.kind = profile::section_kind::layer,
                .name = std::string(path) + (path.empty() ? "" : " ") + "residual add",
                .pass = pass,
                .shape = std::string(shape_name<S>::text().chars) + " -> " + shape_name<S>::text().chars,
                .bytes = 3 * S::numel * sizeof(storage),
                .device = !host_accessible_v<Place>};
    }

    inner_t inner_;
    branch_t branch_;
};

}  // namespace detail

template <class... Layers>
struct Residual {
    using inner = Sequential<Layers...>;

    template <class S>
    using output_shape = typename detail::residual_output<inner, S>::type;
    template <class S>
    static constexpr bool accepts = detail::residual_fits<inner, S>();

    template <precision_policy P, class S, class Place>
    using layer = detail::residual_layer<P, S, Place, inner>;
};

}  // namespace tenet::nn
