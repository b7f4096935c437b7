// parameterised_layer<P, Place, parameter<"name", Shape, Init>...>: what the
// layer protocol (layer.hpp) asks of a layer with parameters, beyond its
// shapes, forward and backward, written once. Derive a layer from it and
// inherit its constructor; it supplies
//   parameter_count, parameter_numel   from the parameters' shapes
//   the constructor taking the slice   binds each parameter's value and
//                                      gradient in the model's flat buffers,
//                                      in order, and its random stream
//   initialize(seed)                   each parameter's Init
//   for_each_parameter(f, prefix)      names (checkpoints, safetensors)
//   value(tag), gradient(tag)          a parameter's views, by its type
//   activation_bytes = 0, activation_gradient_bytes = 0,
//   wants_preactivation_gradient = false   (declare your own to change them)
// A layer that keeps more than plain members (kept_tensor, which takes the
// slice) writes its own constructor calling this one first. The walkthrough
// is docs/CUSTOM_LAYERS.md.
//
//   using weight = nn::parameter<"weight", Shape<N>, nn::init_ones>;
//   struct layer : nn::parameterised_layer<P, Place, weight> {
//       using layer::parameterised_layer::parameterised_layer;
//       ... forward(x, y, step) and backward(dy, dx, step, prev),
//           reading this->value(weight{}), writing this->gradient(weight{})
//   };
#pragma once

#include "layer.hpp"

#include <string_view>

namespace tenet::nn {

// How a parameter starts: a type whose operator()(value view, init_source)
// fills it (a user's own, or one of these).
struct init_zeros {
    template <class V>
    void operator()(const V& w, init_source) const
    {
        assign(w, 0);
    }
};
struct init_ones {
    template <class V>
    void operator()(const V& w, init_source) const
    {
        assign(w, 1);
    }
};
// Kaiming (He) uniform for ReLU, fan_in from the shape [Out, In, k...].
struct init_kaiming_uniform {
    template <class V>
    void operator()(const V& w, init_source from) const
    {
        kaiming_uniform(w, from);
    }
};
// Xavier (Glorot) uniform, fans from the shape.
struct init_xavier_uniform {
    template <class V>
    void operator()(const V& w, init_source from) const
    {
        xavier_uniform(w, from);
    }
};

// One parameter: its name (as PyTorch's state_dict has it), shape and
// initialiser. The type is also the tag value() and gradient() take.
template <fixed_string Name, shape_type S, class Init = init_zeros>
struct parameter {
    using shape = S;
    using init = Init;
    static constexpr std::string_view name{Name.chars, Name.size()};
};

namespace detail {

// A parameter's value and gradient views and its random stream.
template <class Storage, class Gradient, class Place, class Param>
struct bound_parameter {
    using views =
        decltype(std::declval<parameter_slice<Storage, Gradient>&>().template take<typename Param::shape, Place>());

    template <class Slice>
    explicit bound_parameter(Slice& slice)
        : views_(slice.template take<typename Param::shape, Place>()), stream_(slice.next_stream())
    {
    }

    views views_;
    std::uint64_t stream_;
};

template <class... Params>
constexpr bool distinct_names()
{
    const std::string_view names[] = {Params::name...};
    for (std::size_t i = 0; i < sizeof...(Params); ++i)
        for (std::size_t j = 0; j < i; ++j)
            if (names[i] == names[j]) return false;
    return true;
}

}  // namespace detail

template <precision_policy P, class Place, class... Params>
class parameterised_layer
    : private detail::bound_parameter<typename P::storage, gradient_t<P>, Place, Params>... {
    static_assert(sizeof...(Params) > 0 && detail::distinct_names<Params...>(),
                  "tenet: parameterised_layer: give one or more parameters, each with a name of its own");
    template <class Param>
    using bound = detail::bound_parameter<typename P::storage, gradient_t<P>, Place, Param>;

public:
    static constexpr bool wants_preactivation_gradient = false;
    static constexpr std::size_t parameter_count = (Params::shape::numel + ...);
    static constexpr std::size_t parameter_numel = (padded_numel<typename P::storage>(Params::shape::numel) + ...);
    static constexpr std::size_t activation_bytes = 0, activation_gradient_bytes = 0;

    // (base classes are initialised in order: the parameters take their
    // slices in the order they are listed)
    template <class Slice>
    explicit parameterised_layer(Slice& parameters) : bound<Params>(parameters)...
    {
    }

    void initialize(std::uint64_t seed)
    {
        (typename Params::init{}(value(Params{}), init_source{seed, stream(Params{})}), ...);
    }

    template <class F>
    void for_each_parameter(F&& f, const std::string& prefix)
    {
        (f(prefix + std::string(Params::name), value(Params{}), gradient(Params{})), ...);
    }

    // The writable views of a parameter's value and of its gradient (the
    // master type; null in a model without gradients), by its tag.
    template <class Param>
    auto value(Param) const
    {
        return static_cast<const bound<Param>&>(*this).views_.first;
    }
    template <class Param>
    auto gradient(Param) const
    {
        return static_cast<const bound<Param>&>(*this).views_.second;
    }

private:
    template <class Param>
    std::uint64_t stream(Param) const
    {
        return static_cast<const bound<Param>&>(*this).stream_;
    }
};

}  // namespace tenet::nn
