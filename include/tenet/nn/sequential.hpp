// Sequential<Layers...>: layers applied in order, composed at compile time.
// It is itself a layer spec (so Sequentials nest). Its layer owns the
// activations between its children and their gradients, allocated once at
// construction; forward and backward are unrolled over the children.
//
// Before instantiating, the spec list is regrouped: Linear, then ReLU / GELU
// / GELUTanh, then another Linear, becomes one fused unit (see
// linear_layer.hpp); Conv2d (or Conv2dNoBias) then ReLU becomes a
// convolution with the ReLU in its epilogue (conv_layer.hpp).
#pragma once

#include "../memory/buffer.hpp"
#include "../memory/copy_bytes.hpp"
#include "activation_layers.hpp"
#include "conv_layer.hpp"
#include "linear_layer.hpp"
#include "../profile/step_observer.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

namespace tenet::nn {

// Compile-time lists of layer specs (a Sequential's units, a spec's Linear
// units): type_list<T...>, its length list_size<L>, its I-th type at_t<I, L>.
template <class... T>
struct type_list {};

template <std::size_t I, class List>
struct at;
template <std::size_t I, class H, class... T>
struct at<I, type_list<H, T...>> : at<I - 1, type_list<T...>> {};
template <class H, class... T>
struct at<0, type_list<H, T...>> {
    using type = H;
};
template <std::size_t I, class List>
using at_t = typename at<I, List>::type;

template <class List>
inline constexpr std::size_t list_size = 0;
template <class... T>
inline constexpr std::size_t list_size<type_list<T...>> = sizeof...(T);

// A layer that trains nothing: no trainable parameters (frozen, or none).
template <class L>
inline constexpr bool trains_nothing_v = L::parameter_numel == 0;

namespace detail {

// A unit with the index of the spec it came from (for parameter names).
template <std::size_t Index, class Spec>
struct indexed {
    static constexpr std::size_t index = Index;
    using spec = Spec;
};

template <class A>
concept fusable_activation = requires {
    { A::fusable } -> std::convertible_to<linalg::activation>;
} && A::fusable != linalg::activation::none;

// group<Next, type_list<done...>, rest...>: Next is the index of rest's first spec.
template <std::size_t Next, class Done, class... Rest>
struct group;
template <std::size_t Next, class... Done>
struct group<Next, type_list<Done...>> {
    using type = type_list<Done...>;
};
template <std::size_t Next, class... Done, class L, class... Rest>
struct group<Next, type_list<Done...>, L, Rest...> {
    using type = typename group<Next + 1, type_list<Done..., indexed<Next, L>>, Rest...>::type;
};
template <std::size_t Next, class... Done, std::size_t In, std::size_t Out, fusable_activation A, std::size_t In2,
          std::size_t Out2, class... Rest>
struct group<Next, type_list<Done...>, Linear<In, Out>, A, Linear<In2, Out2>, Rest...> {
    using fused = indexed<Next, linear_unit<In, Out, A::fusable>>;
    using type = typename group<Next + 2, type_list<Done..., fused>, Linear<In2, Out2>, Rest...>::type;
};

template <class Spec>
concept relu_fusable_conv = !std::is_void_v<typename conv_with_relu<Spec>::type>;

template <std::size_t Next, class... Done, relu_fusable_conv C, class... Rest>
struct group<Next, type_list<Done...>, C, ReLU, Rest...> {
    using fused = indexed<Next, typename conv_with_relu<C>::type>;
    using type = typename group<Next + 2, type_list<Done..., fused>, Rest...>::type;
};

// The shapes between units: In, then each unit's output.
template <class In, class Units>
struct chain_shapes;
template <class In>
struct chain_shapes<In, type_list<>> {
    using type = type_list<In>;
};
template <class In, class U, class... Us>
struct chain_shapes<In, type_list<U, Us...>> {
    template <class... S>
    static auto prepend(type_list<S...>) -> type_list<In, S...>;
    using out = typename U::spec::template output_shape<In>;
    using type = decltype(prepend(typename chain_shapes<out, type_list<Us...>>::type{}));
};

// A spec's accepts<In>, where it says (a layer that checks its input shape
// says whether that check passes, without reporting), else true.
template <class Spec, class In>
constexpr bool accepts_input()
{
    if constexpr (requires { Spec::template accepts<In>; }) return Spec::template accepts<In>;
    else return true;
}

// What stands in for a unit after the first that rejected its input: it
// passes its input on and does nothing.
struct passed_over {
    template <class S>
    using output_shape = S;
    template <precision_policy P, class S, class Place>
    struct layer : parameterless_layer {
        using input_shape = S;
        using output_shape = S;
        using parameterless_layer::parameterless_layer;
        template <class X, class Y>
        void forward(const X&, const Y&, const step_info&)
        {
        }
        template <class DY, class DX, class Prev>
        void backward(const DY&, const DX&, const step_info&, Prev&)
        {
        }
    };
};

// One mistake, one error: the first unit that rejects its input reports it
// and outputs a stand-in (its output for the input it wanted, as far as that
// can be read); each later unit that rejects what it is fed is passed over in
// silence, so no error is about a shape the user never wrote.
template <class In, bool Failed, class Units>
struct checked_units;
template <class In, bool Failed>
struct checked_units<In, Failed, type_list<>> {
    using type = type_list<>;
};
template <class In, bool Failed, class U, class... Us>
struct checked_units<In, Failed, type_list<U, Us...>> {
    static constexpr bool fits = accepts_input<typename U::spec, In>();
    using unit = std::conditional_t<Failed && !fits, indexed<U::index, passed_over>, U>;
    using rest = checked_units<typename unit::spec::template output_shape<In>, Failed || !fits, type_list<Us...>>;
    template <class... R>
    static auto prepend(type_list<R...>) -> type_list<unit, R...>;
    using type = decltype(prepend(typename rest::type{}));
};

// Whether each unit accepts what the one before gives it (silent: no
// rejected unit's output is computed).
template <class In>
constexpr bool chain_accepts(type_list<>)
{
    return true;
}
template <class In, class U, class... Us>
constexpr bool chain_accepts(type_list<U, Us...>)
{
    if constexpr (accepts_input<typename U::spec, In>())
        return chain_accepts<typename U::spec::template output_shape<In>>(type_list<Us...>{});
    else
        return false;
}

// Recompute: a Checkpointed segment. Its activations between children, and
// every kept tensor of its children (nested Sequentials, Residuals,
// attention, LayerNorm, fused activations), live in the model's shared
// recompute arena instead of being kept: the forward writes them there (later
// segments overwrite them), and the backward first runs the forward again
// from the saved input. Offload too: an Offloaded segment, whose training
// forward copies its part of the arena to host memory of its own, and whose
// backward copies it back instead of recomputing.
template <precision_policy P, class In, class Place, class Units, class Shapes, class Indices, bool Recompute = false,
          bool Offload = false>
class sequential_layer;

template <precision_policy P, class In, class Place, class... U, class Shapes, std::size_t... I, bool Recompute,
          bool Offload>
class sequential_layer<P, In, Place, type_list<U...>, Shapes, std::index_sequence<I...>, Recompute, Offload> {
    static_assert(Recompute || !Offload, "tenet: internal: an offloaded segment uses the recompute arena");
    static_assert((check_layer_spec<typename U::spec, P, at_t<I, Shapes>, Place>() && ...));
    static constexpr std::size_t n = sizeof...(U);
    using storage = typename P::storage;
    template <std::size_t K>
    using shape_at = at_t<K, Shapes>;  // input of child K; shape_at<n> is the output
    template <std::size_t K>
    using child_t = typename at_t<K, type_list<U...>>::spec::template layer<P, shape_at<K>, Place>;
    // A child that views its input (Flatten) and is not the last: its output
    // is its input's memory, read by the next child with the next shape; it
    // is not run, and no tensor is kept for its output. If it is not the
    // first either, its input gradient is likewise its output gradient.
    template <std::size_t K>
    static constexpr bool aliased = [] {
        if constexpr (K + 1 < n) return views_input_v<child_t<K>>;
        else return false;
    }();
    template <std::size_t K>
    static constexpr bool gradient_aliased = aliased<K> && K > 0;
    struct no_tensor {  // in place of an aliased output or gradient
        static constexpr std::size_t arena_bytes = 0;
        no_tensor() = default;
        template <class Slice>
        explicit no_tensor(Slice&)
        {
        }
    };
    // The tensors between children: the output of child K < n - 1 (kept
    // tensors: in the recompute arena inside a Checkpointed segment), and
    // the gradient of each.
    template <std::size_t K>
    using between_t = std::conditional_t<aliased<K>, no_tensor, kept_tensor<storage, shape_at<K + 1>, Place>>;
    template <std::size_t K>
    using gradient_t = std::conditional_t<gradient_aliased<K + 1>, no_tensor, Tensor<storage, shape_at<K + 1>, Place>>;
    template <std::size_t... K>
    static auto betweens(std::index_sequence<K...>) -> std::tuple<between_t<K>...>;
    using between_tuple = decltype(betweens(std::make_index_sequence<n - 1>{}));
    template <std::size_t... K>
    static auto gradients(std::index_sequence<K...>) -> std::tuple<gradient_t<K>...>;
    using gradient_tuple = decltype(gradients(std::make_index_sequence<n - 1>{}));
    // elements of the betweens kept, and of their gradients
    template <std::size_t K>
    static constexpr std::size_t kept_numel = K + 1 < n && !aliased<K> ? shape_at<K + 1>::numel : 0;
    static constexpr std::size_t between_bytes = (std::size_t{0} + ... + kept_numel<I>) * sizeof(storage);
    static constexpr std::size_t between_gradient_bytes =
        (std::size_t{0} + ... + (I + 1 < n && !gradient_aliased<I + 1> ? shape_at<I + 1>::numel : 0)) * sizeof(storage);
    // What the kept tensors take in a recompute arena: the betweens', then the children's.
    static constexpr std::size_t arena_bytes = (std::size_t{0} + ... + padded_numel<storage>(kept_numel<I>)) * sizeof(storage) +
                                               (std::size_t{0} + ... + kept_bytes_of<child_t<I>>());
    static constexpr std::size_t children_resident_bytes = (std::size_t{0} + ... + resident_activation_bytes_of<child_t<I>>());
    static constexpr std::size_t children_recompute_bytes = std::max({std::size_t{0}, recompute_bytes_v<child_t<I>>...});
    static_assert(!Recompute || children_recompute_bytes == 0,
                  "tenet: Checkpointed and Offloaded segments do not nest");
    // Where an Offloaded segment keeps its activations: pinned host memory
    // for a Device model (copies run asynchronously on the stream), plain
    // host memory for a Host model.
    using offload_place = std::conditional_t<host_accessible_v<Place>, Host, HostPinned>;

public:
    static_assert(n >= 1, "tenet: Sequential needs at least one layer");
    using input_shape = In;
    using output_shape = shape_at<n>;
    static constexpr bool wants_preactivation_gradient = false;
    static constexpr std::size_t parameter_count = (std::size_t{0} + ... + child_t<I>::parameter_count);
    static constexpr std::size_t parameter_numel = (std::size_t{0} + ... + child_t<I>::parameter_numel);
    static constexpr std::size_t buffer_numel = (std::size_t{0} + ... + buffer_numel_v<child_t<I>>);
    static constexpr std::size_t frozen_numel = (std::size_t{0} + ... + frozen_numel_v<child_t<I>>);
    static constexpr std::size_t frozen_count = (std::size_t{0} + ... + frozen_count_v<child_t<I>>);
    static constexpr bool skips_null_gradients = (skips_null_gradients_v<child_t<I>> && ...);
    static constexpr std::string_view kind = Offload ? "Offloaded" : Recompute ? "Checkpointed" : "Sequential";
    // (a recomputed segment is timed whole: its forward runs again in its backward)
    static constexpr bool reports_children = !Recompute;
    // (an aliased child, Flatten, runs nothing; a Checkpointed segment's
    // backward runs its forward again first)
    static constexpr layer_cost cost = [] {
        layer_cost c = (layer_cost{} + ... + (aliased<I> ? layer_cost{} : cost_of<child_t<I>, storage, shape_at<I>, shape_at<I + 1>>()));
        if (Recompute) c.backward_flops += c.forward_flops, c.backward_bytes += c.forward_bytes;
        return c;
    }();
    static constexpr std::size_t activation_bytes =
        Recompute ? children_resident_bytes : between_bytes + (std::size_t{0} + ... + child_t<I>::activation_bytes);
    static constexpr std::size_t recompute_bytes = Recompute ? arena_bytes : children_recompute_bytes;
    static constexpr std::size_t offloaded_bytes =
        Offload ? arena_bytes : (std::size_t{0} + ... + offloaded_bytes_v<child_t<I>>);
    // Inside a Checkpointed segment (kept_tensor), a plain Sequential's
    // betweens and its children's kept tensors go to the arena too.
    static constexpr std::size_t kept_bytes = Recompute ? 0 : arena_bytes;
    static constexpr std::size_t resident_activation_bytes = Recompute ? activation_bytes : children_resident_bytes;
    static constexpr std::size_t activation_gradient_bytes =
        (P::trainable ? between_gradient_bytes : 0) + (std::size_t{0} + ... + child_t<I>::activation_gradient_bytes);

    template <class Slice>
    explicit sequential_layer(Slice& parameters) : sequential_layer(parameters, start_keeping(parameters))
    {
        if constexpr (Recompute) {
            // (every kept tensor's arena_bytes is counted above; an arena overrun would corrupt memory)
            if (parameters.stop_keeping() != arena_bytes)
                throw error("tenet: internal: a Checkpointed segment's kept tensors do not fill its arena exactly");
        }
        if constexpr (P::trainable) gradients_.emplace();
    }

    void initialize(std::uint64_t seed) { (std::get<I>(children_).initialize(seed), ...); }

    template <class X, class Y>
    void forward(const X& x, const Y& y, const step_info& step)
    {
        if constexpr (Recompute) {
            input_ = tenet::destination_view(x).data();
            output_ = tenet::destination_view(y).data();
        }
        (forward_child<I>(x, y, step), ...);
        // (the next segment's forward overwrites the arena: the copy is
        // ordered before it on the stream)
        if constexpr (Offload)
            if (step.training) copy_bytes<offload_place, Place>(saved_.data(), arena_, arena_bytes, current_stream());
    }

    template <class DY, class DX, class Prev>
    void backward(const DY& dy, const DX& dx, const step_info& step, Prev& prev)
    {
        static_assert(P::trainable, "tenet: backward() needs a training precision policy");
        if constexpr (Offload) {
            copy_bytes<Place, offload_place>(arena_, saved_.data(), arena_bytes, current_stream());
        } else if constexpr (Recompute) {
            step_info again = step;
            again.recompute = true;
            again.observer = nullptr;  // (a profiled segment's recompute is part of its backward)
            forward(make_view<In, Place>(input_), make_view<output_shape, Place>(output_), again);
        }
        backward_from<n - 1>(dy, dx, step, prev);
    }

    template <class F>
    void for_each_parameter(F&& f, const std::string& prefix)
    {
        (std::get<I>(children_).for_each_parameter(f, prefix + std::to_string(U::index) + "."), ...);
    }

    // f(name, view) for each buffer (BatchNorm's running statistics), in order.
    template <class F>
    void for_each_buffer(F&& f, const std::string& prefix)
    {
        (visit_buffers(std::get<I>(children_), f, prefix + std::to_string(U::index) + "."), ...);
    }

    // f(layer) for every leaf layer (nested Sequentials are walked), in order.
    template <class F>
    void for_each_layer(F&& f)
    {
        (visit_layer(std::get<I>(children_), f), ...);
    }

private:
    // The slice hands out kept tensors from the arena (a segment: from
    // `arena`, its start) or not.
    struct keeping {
        std::byte* arena = nullptr;
    };

    template <class Slice>
    static keeping start_keeping(Slice& parameters)
    {
        if constexpr (Recompute) return {parameters.start_keeping()};
        else return {};
    }

    template <class Slice>
    sequential_layer(Slice& parameters, keeping k)
        : children_{child_t<I>(parameters)...}, activations_(make_betweens(parameters, std::make_index_sequence<n - 1>{})),
          arena_(k.arena)
    {
    }

    template <class L, class F>
    static void visit_layer(L& layer, F& f)
    {
        if constexpr (requires { layer.for_each_layer(f); }) layer.for_each_layer(f);
        else f(layer);
    }

    template <class L, class F>
    static void visit_buffers(L& layer, F& f, const std::string& prefix)
    {
        if constexpr (buffer_numel_v<L> > 0) layer.for_each_buffer(f, prefix);
    }

    template <class Slice, std::size_t... K>
    static between_tuple make_betweens([[maybe_unused]] Slice& parameters, std::index_sequence<K...>)
    {
        return between_tuple{between_t<K>(parameters)...};
    }

    // With an observer in the step, each child's forward and backward is a
    // section named by its path ("2.1 Linear"): a Sequential or Residual
    // child is opened, its own children reported under "2.", and any other
    // is timed whole, seeing no observer.
    template <std::size_t K, class X, class Y>
    void forward_child(const X& x, const Y& y, const step_info& step)
    {
        if constexpr (!aliased<K>) {
            auto& child = std::get<K>(children_);
            if (!step.observer) return child.forward(input_of<K>(x), output_of<K>(y), step);
            if constexpr (reports_children_v<child_t<K>>) {
                const std::string path = child_path<K>(step) + ".";
                return child.forward(input_of<K>(x), output_of<K>(y), observed_at(step, path));
            }
            const profile::observed_section observed(step.observer, [&] {
                constexpr layer_cost c = cost_of<child_t<K>, storage, shape_at<K>, shape_at<K + 1>>();
                return child_section<K>(step, "forward", c.forward_flops, c.forward_bytes);
            });
            child.forward(input_of<K>(x), output_of<K>(y), observed_at(step, {}, nullptr));
        }
    }

    template <std::size_t K, class DY, class DX, class Prev>
    void backward_child(const DY& dy, const DX& dx, const step_info& step, Prev& prev)
    {
        auto& child = std::get<K>(children_);
        if (!step.observer) return child.backward(dy, dx, step, prev);
        if constexpr (reports_children_v<child_t<K>>) {
            const std::string path = child_path<K>(step) + ".";
            return child.backward(dy, dx, observed_at(step, path), prev);
        }
        const profile::observed_section observed(step.observer, [&] {
            constexpr layer_cost all = cost_of<child_t<K>, storage, shape_at<K>, shape_at<K + 1>>();
            // (no input gradient wanted: the weight gradients alone)
            constexpr layer_cost c = is_no_input_gradient<DX> ? all.weight_gradient_only() : all;
            return child_section<K>(step, "backward", c.backward_flops, c.backward_bytes);
        });
        child.backward(dy, dx, observed_at(step, {}, nullptr), prev);
    }

    template <std::size_t K>
    static std::string child_path(const step_info& step)
    {
        return std::string(step.observer_path) + std::to_string(at_t<K, type_list<U...>>::index);
    }

    template <std::size_t K>
    static profile::section child_section(const step_info& step, const char* pass, std::uint64_t flops, std::uint64_t bytes)
    {
        constexpr std::string_view kind = layer_kind_v<child_t<K>>;
        return {.kind = profile::section_kind::layer,
                .name = child_path<K>(step) + " " + std::string(kind.empty() ? "layer" : kind),
                .pass = pass,
                .shape = std::string(shape_name<shape_at<K>>::text().chars) + " -> " + shape_name<shape_at<K + 1>>::text().chars,
                .flops = flops,
                .bytes = bytes,
                .device = !host_accessible_v<Place>};
    }

    static step_info observed_at(const step_info& step, std::string_view path, profile::step_observer* observer)
    {
        step_info inner = step;
        inner.observer = observer;
        inner.observer_path = path;
        return inner;
    }
    static step_info observed_at(const step_info& step, std::string_view path)
    {
        return observed_at(step, path, step.observer);
    }

    template <std::size_t K, class X>
    auto input_of(const X& x)
    {
        if constexpr (K == 0) return tenet::destination_view(x);
        else if constexpr (aliased<K - 1>) return contiguous_as<shape_at<K>>(input_of<K - 1>(x));
        else return std::get<K - 1>(activations_).view();
    }
    template <std::size_t K, class Y>
    auto output_of(const Y& y)
    {
        if constexpr (K + 1 == n) return tenet::destination_view(y);
        else return std::get<K>(activations_).view();
    }

    // Whether children [0, K) train nothing (frozen, or without parameters).
    template <std::size_t K>
    static constexpr bool nothing_trains_before = [] {
        bool none = true;
        [&]<std::size_t... J>(std::index_sequence<J...>) {
            ((none = none && trains_nothing_v<child_t<J>>), ...);
        }(std::make_index_sequence<K>{});
        return none;
    }();

    // The gradient of child K's output.
    template <std::size_t K, class DY>
    auto output_gradient(const DY& dy)
    {
        if constexpr (K + 1 == n) return tenet::destination_view(dy);
        else if constexpr (gradient_aliased<K + 1>) return contiguous_as<shape_at<K + 1>>(output_gradient<K + 1>(dy));
        else return std::get<K>(*gradients_).view();
    }

    // A frozen prefix (children [0, K) train nothing, and no gradient is
    // wanted of the input) is not gone through at all: child K is the last
    // whose backward runs, and computes no input gradient.
    template <std::size_t K, class DY, class DX, class Prev>
    void backward_from(const DY& dy, const DX& dx, const step_info& step, Prev& prev)
    {
        if constexpr (K == 0) {
            backward_child<K>(output_gradient<K>(dy), dx, step, prev);
        } else if constexpr (is_no_input_gradient<DX> && nothing_trains_before<K>) {
            no_previous_layer none;
            backward_child<K>(output_gradient<K>(dy), dx, step, none);
        } else {
            if constexpr (!gradient_aliased<K>)
                backward_child<K>(output_gradient<K>(dy), output_gradient<K - 1>(dy), step, std::get<K - 1>(children_));
            backward_from<K - 1>(dy, dx, step, prev);
        }
    }

    std::tuple<child_t<I>...> children_;
    between_tuple activations_;
    std::optional<gradient_tuple> gradients_;
    const storage* input_ = nullptr;  // Checkpointed: where the forward read and wrote
    storage* output_ = nullptr;
    std::byte* arena_ = nullptr;  // a segment's: the start of the shared arena
    buffer<std::byte, offload_place> saved_{Offload ? arena_bytes : 0, current_stream()};  // Offloaded: its copy
};

}  // namespace detail

template <class... Layers>
struct Sequential {
    using units = typename detail::group<0, type_list<>, Layers...>::type;
    static constexpr std::size_t unit_count = list_size<units>;
    // What its first layer takes (i32 tokens for an Embedding).
    template <class P>
    using input_element = input_element_t<at_t<0, type_list<Layers...>>, P>;
    static constexpr std::size_t input_limit = input_limit_of<at_t<0, type_list<Layers...>>>();

    // The units for input In: after a unit that rejects it, those that
    // reject what they are fed are passed over (see checked_units).
    template <class In>
    using units_for = typename detail::checked_units<In, false, units>::type;
    template <class In>
    static constexpr bool accepts = detail::chain_accepts<In>(units{});

    template <class In>
    using shapes = typename detail::chain_shapes<In, units_for<In>>::type;

    template <class In>
    using output_shape = at_t<unit_count, shapes<In>>;

    template <precision_policy P, class In, class Place>
    using layer = detail::sequential_layer<P, In, Place, units_for<In>, shapes<In>, std::make_index_sequence<unit_count>>;
};

namespace detail {

// What Checkpointed and Offloaded share: a Sequential's spec whose layer is a
// segment (Recompute = true), offloaded or not.
template <bool Offload, class... Layers>
struct segment_spec {
    using inner = Sequential<Layers...>;
    template <class P>
    using input_element = typename inner::template input_element<P>;
    static constexpr std::size_t input_limit = inner::input_limit;

    template <class In>
    using output_shape = typename inner::template output_shape<In>;
    template <class In>
    static constexpr bool accepts = inner::template accepts<In>;

    template <precision_policy P, class In, class Place>
    using layer = sequential_layer<P, In, Place, typename inner::template units_for<In>, typename inner::template shapes<In>,
                                   std::make_index_sequence<inner::unit_count>, true, Offload>;
};

}  // namespace detail

// Checkpointed<Layers...>: a Sequential segment trained with gradient
// checkpointing. Only its input and output are kept; the activations between
// its layers go to a scratch arena that every Checkpointed segment of the
// model shares (the model allocates the largest one), and the backward
// recomputes the segment's forward before going back through it. Memory:
// activation_bytes drops by the segments' inner activations and gains the
// arena; time: one more forward per segment. Fused units, dropout masks
// (regenerated from the step) and saved statistics behave exactly as without it.
//
//   using net = Sequential<Checkpointed<Linear<784, 1024>, ReLU, Linear<1024, 1024>, ReLU>,
//                          Checkpointed<Linear<1024, 1024>, ReLU, Linear<1024, 10>>>;
template <class... Layers>
struct Checkpointed : detail::segment_spec<false, Layers...> {};

// Offloaded<Layers...>: activation offloading, a segment like Checkpointed
// whose activations are kept in host memory rather than recomputed. Its
// training forward writes them to the shared arena as a Checkpointed
// segment's does, then copies its part of the arena to a host buffer of its
// own (pinned for a Device model, allocated once: its size is static); its
// backward copies them back into the arena and goes back through the
// segment without a second forward. Device memory as Checkpointed (the
// arena, shared), host memory offloaded_bytes (nn::model::offloaded_bytes:
// every segment's), time: two copies of the segment's activations instead
// of one more forward, and the plain model's results. (The
// copies run on the compute stream; a side stream to overlap them with the
// next segment's forward is not built.)
template <class... Layers>
struct Offloaded : detail::segment_spec<true, Layers...> {};

}  // namespace tenet::nn
