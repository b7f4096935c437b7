// The layer protocol. A layer *spec* is what users write in a model
// (Linear<784, 256>, ReLU, Sequential<...>); it is an empty type with
//   output_shape<In>              the output shape for input shape In (a
//                                 tenet: static_assert when In does not fit)
//   layer<Policy, In, Place>      the instantiated layer, which has
//     parameter_numel             elements it takes from the model's flat
//                                 parameter (and gradient) buffers, padded
//     activation_bytes            bytes it allocates to keep for backward
//     activation_gradient_bytes   bytes of gradients it keeps between children
//     layer(parameter_slice&)     binds its parameters, allocates (once)
//     initialize(seed)            draws its parameters
//     forward(x, y, step)         y = f(x); x must stay alive until backward
//     backward(dy, dx, step, prev)  dx = df/dx^T dy and parameter gradients;
//                                 dx is no_input_gradient for a first layer;
//                                 prev is the layer before (for fusion)
//     for_each_parameter(f, prefix)  f(name, value view, gradient view)
//   and, for a layer with buffers (state that is not a parameter: BatchNorm's
//   running statistics), buffer_numel (f32 elements it takes from the model's
//   flat buffer store, padded) and for_each_buffer(f, prefix): f(name, view);
//   with frozen parameters (nn::Frozen), frozen_numel (see parameter_slice);
//   and skips_null_gradients where its backward skips parameter gradients
//   bound null; each optional member has a default (layer_traits.hpp).
// Shapes, byte counts and parameter layout are all compile-time. The
// concepts layer_spec and layer below state this; Sequential and model check
// every layer against it (detail::check_layer_spec: one tenet: line naming a
// missing member), built-in or a user's own type in any namespace.
#pragma once

#include "../exec/assign.hpp"
#include "../numeric/precision.hpp"
#include "init.hpp"
#include "layer_cost.hpp"
#include "layer_traits.hpp"
#include "../profile/step_observer.hpp"

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace tenet::nn {

// The type parameter gradients are kept in: the master-weight type, so that
// gradients of 16-bit weights are not rounded to 16 bits.
template <class P>
struct gradient_type {
    using type = typename P::storage;  // inference: no gradients are kept
};
template <training_policy P>
struct gradient_type<P> {
    using type = typename P::master;
};
template <precision_policy P>
using gradient_t = typename gradient_type<P>::type;

// Parameters start on 256-byte boundaries in the flat buffers (cuBLASLt's
// preferred alignment, and whole 16-byte vectors for the fused kernels).
inline constexpr std::size_t parameter_alignment_bytes = 256;

template <class T>
constexpr std::size_t padded_numel(std::size_t n)
{
    constexpr std::size_t per = parameter_alignment_bytes / sizeof(T);
    return (n + per - 1) / per * per;
}

// The part of the model's flat parameter and gradient buffers that a layer
// takes, handed out in order. The trainable parameters come first; frozen
// ones (nn::Frozen) from a block after them, which no gradient shadows.
template <class Value, class Gradient>
class parameter_slice {
public:
    parameter_slice(Value* values, Gradient* gradients, std::uint64_t first_stream, std::byte* recompute_arena = nullptr,
                    f32* buffers = nullptr, Value* frozen = nullptr)
        : values_(values), gradients_(gradients), stream_(first_stream), arena_(recompute_arena), buffers_(buffers),
          frozen_(frozen)
    {
    }

    // The next parameter of shape S, as writable views of its value and gradient.
    template <class S, class Place>
    auto take()
    {
        auto value = make_view<S, Place>(values_);
        auto gradient = make_view<S, Place>(gradients_);
        values_ += padded_numel<Value>(S::numel);
        if (gradients_ != nullptr) gradients_ += padded_numel<Value>(S::numel);  // same element offsets
        trainable_taken_ = true;
        return std::pair{value, gradient};
    }

    // The next frozen parameter: its gradient view over `gradient` (or null).
    template <class S, class Place>
    auto take_frozen(Gradient* gradient)
    {
        auto value = make_view<S, Place>(frozen_);
        frozen_ += padded_numel<Value>(S::numel);
        return std::pair{value, make_view<S, Place>(gradient)};
    }

    // Whether a trainable parameter was handed out before (layers bind in
    // forward order): if not, a Frozen layer is in a frozen prefix.
    bool trainable_taken() const { return trainable_taken_; }
    bool has_gradients() const { return gradients_ != nullptr; }

    // The next buffer of shape S (f32, saved with the model, never touched by
    // an optimizer), as a writable view.
    template <class S, class Place>
    auto take_buffer()
    {
        auto view = make_view<S, Place>(buffers_);
        buffers_ += padded_numel<f32>(S::numel);
        return view;
    }

    // A stream number of its own for each parameter, and one per random layer.
    std::uint64_t next_stream() { return stream_++; }

    // The model's scratch for recomputed activations (gradient checkpointing)
    // is shared by every Checkpointed segment, each from its start. While a
    // Checkpointed segment builds its layers (from start_keeping()
    // to stop_keeping(), which says how many bytes went), their kept tensors
    // are handed out from the arena's beginning, in order; elsewhere keep()
    // gives null and the kept tensor owns its memory.
    std::byte* start_keeping()
    {
        keep_at_ = arena_;
        return arena_;
    }
    std::size_t stop_keeping()
    {
        const auto used = static_cast<std::size_t>(keep_at_ - arena_);
        keep_at_ = nullptr;
        return used;
    }
    std::byte* keep(std::size_t bytes)
    {
        std::byte* at = keep_at_;
        if (at != nullptr) keep_at_ += bytes;
        return at;
    }

private:
    Value* values_;
    Gradient* gradients_;
    std::uint64_t stream_;
    std::byte* arena_;
    f32* buffers_;
    Value* frozen_;
    std::byte* keep_at_ = nullptr;
    bool trainable_taken_ = false;
};

// kept_tensor<T, S, Place>: an activation a layer keeps from its forward for
// its backward. It owns its memory, except inside a Checkpointed segment,
// whose backward runs the forward again first: there it is a view into the
// model's recompute arena, which every segment shares, so between a
// segment's forward and its backward it costs nothing. arena_bytes is what
// it takes from the arena (rounded to 256 bytes).
template <class T, class S, class Place>
class kept_tensor {
public:
    using element_type = T;
    using shape = S;
    using place = Place;
    static constexpr std::size_t arena_bytes = padded_numel<T>(S::numel) * sizeof(T);

    template <class Slice>
    explicit kept_tensor(Slice& slice) : kept_tensor(in_arena{slice.keep(arena_bytes)})
    {
    }

    T* data() { return data_; }
    const T* data() const { return data_; }
    auto view() { return make_view<S, Place>(data_); }
    auto view() const { return make_view<S, Place>(static_cast<const T*>(data_)); }

private:
    struct in_arena {
        std::byte* at;  // null: owned
    };
    explicit kept_tensor(in_arena arena)
        : owned_(arena.at != nullptr ? 0 : S::numel, current_stream()),
          data_(arena.at != nullptr ? reinterpret_cast<T*>(arena.at) : owned_.data())
    {
    }

    buffer<T, Place> owned_;
    T* data_;  // (a moved buffer keeps its memory: still valid after a move)
};

// What every forward and backward of one step shares.
struct step_info {
    std::uint64_t seed = 0;  // the model's seed (dropout masks)
    std::uint64_t step = 0;  // counts training forwards
    bool training = true;
    // The same count in the model's place, read by kernels when they run (a
    // replayed CUDA Graph sees it move); null for a layer driven by hand,
    // which then uses `step`.
    const f64* step_counter = nullptr;
    // A Checkpointed segment's second forward, recomputing what the first
    // computed: layers with state (BatchNorm's running statistics) leave it.
    bool recompute = false;
    // Each sequence's valid length (i32, one per batch entry, in the model's
    // place): attention ignores the keys past it. Null: every key counts.
    const i32* sequence_lengths = nullptr;
    // Which batch entries are real (1.0f) and which padding (0.0f), f32, one
    // per batch entry, in the model's place: layers whose results mix the
    // batch (BatchNorm's statistics) count the real ones alone, so a padded
    // batch gives what its real rows alone give. Null: every entry is real.
    const f32* valid_samples = nullptr;
    // A profiler told of each layer's forward and backward; null: not
    // profiled. Sequentials and Residuals pass it on to their children,
    // with the children's path ("2.0." for block 2's first Residual: the
    // parameters' names); other layers are timed whole and pass on none.
    profile::step_observer* observer = nullptr;
    std::string_view observer_path{};
    // Decoding (nn::decoding policies): each sequence's position of this
    // step's first token (i32, one per batch entry, in the model's place),
    // read by the layers that mix positions (PositionalEmbedding, attention's
    // key/value cache). Null: the sequences start at position 0.
    const i32* positions = nullptr;
};

// Passed as dx when the input needs no gradient (the model's first layer).
struct no_input_gradient {};
// Passed as prev to the first layer.
struct no_previous_layer {
    static constexpr bool wants_preactivation_gradient = false;
};

template <class T>
inline constexpr bool is_no_input_gradient = std::is_same_v<std::remove_cvref_t<T>, no_input_gradient>;

// Helpers for writing layers (the library's and users' own).

// S with its last extent replaced by N; S without its last extent.
template <class S, std::size_t N>
struct with_last_extent;
template <std::size_t... E, std::size_t N>
struct with_last_extent<Shape<E...>, N> {
    static constexpr std::array<std::size_t, sizeof...(E)> extents{E...};
    template <std::size_t... I>
    static auto make(std::index_sequence<I...>) -> Shape<(I + 1 == sizeof...(E) ? N : extents[I])...>;
    using type = decltype(make(std::make_index_sequence<sizeof...(E)>{}));
};
template <class S, std::size_t N>
using with_last_extent_t = typename with_last_extent<S, N>::type;

template <class S>
struct without_last_extent {
    static constexpr std::array<std::size_t, S::rank == 0 ? 0 : S::rank - 1> extents = [] {
        std::array<std::size_t, S::rank == 0 ? 0 : S::rank - 1> e{};
        for (std::size_t d = 0; d < e.size(); ++d) e[d] = S::extents[d];
        return e;
    }();
};
// The rows of a layer's output [rows..., N]: one mask entry, label or loss per row.
template <class S>
using rows_shape_t = shape_from_t<without_last_extent<S>>;

template <class S>
inline constexpr std::size_t last_extent = S::rank == 0 ? 1 : S::extents[S::rank == 0 ? 0 : S::rank - 1];
// Extent I of S, 1 where S has no axis I (stand-in shapes for inputs that do not fit).
template <class S, std::size_t I>
inline constexpr std::size_t extent_or_one = I < S::rank ? S::extents[I < S::rank ? I : 0] : 1;

// The input as a rows x features matrix (every layer here works on the last axis).
template <class S>
using matrix_shape_t = Shape<S::numel / last_extent<S>, last_extent<S>>;

// A layer input or output as a contiguous view of another shape: layers are
// fed tensors and the model's own buffers, both contiguous.
template <class S, class X>
auto contiguous_as(const X& x)
{
    auto view = tenet::destination_view(x);
    using V = decltype(view);
    static_assert(std::is_same_v<typename V::layout, contiguous_layout<typename V::shape>>,
                  "tenet: layers take contiguous tensors (or their plain views)");
    static_assert(V::shape::numel == S::numel, "tenet: internal: layer view of a different size");
    using element = std::remove_pointer_t<decltype(view.data())>;
    return make_view<S, typename V::place>(static_cast<element*>(view.data()));
}

namespace detail {

template <class Expected, class Given>
struct forward_needs_the_model_input_shape_reshape_if_meant {
    static constexpr auto text()
    {
        return fixed_string("tenet: forward: the input must have the model input shape ") + shape_name<Expected>::text() +
               fixed_string(", not ") + shape_name<Given>::text() + fixed_string(" (reshape<...>(x) if that is meant)");
    }
};

}  // namespace detail

// A model's forward takes its input shape exactly: a tensor of another shape
// with as many elements (an image batch [N, H, W, C] for a model of
// [N, H*W*C] inputs, or a transposed batch) is an error, not reinterpreted.
template <class In, class X>
constexpr bool check_model_input()
{
    using given = typename std::decay_t<X>::shape;
    return diagnose<std::is_same_v<given, In>, detail::forward_needs_the_model_input_shape_reshape_if_meant<In, given>>::value;
}

namespace detail {

// Named for nvcc, whose first line is the failure's name: X is the given
// tensor (or view, or expression), so its element type and shape show.
template <class InputType, class X>
struct input_type_text {
    static constexpr auto text()
    {
        return fixed_string("tenet: the model takes ") + text_of<element_name<InputType>>() +
               fixed_string(" inputs (its input_type), not ") + text_of<element_name<typename X::value_type>>() +
               fixed_string(": cast the input (i32 tokens are for a model whose first layer is an Embedding)");
    }
};
template <class X>
struct model_takes_i32_tokens_not : input_type_text<i32, X> {};
template <class InputType, class X>
struct model_takes_values_not_tokens : input_type_text<InputType, X> {};

}  // namespace detail

// Whether X (a tensor, view or expression) holds what a model of InputType
// takes: tokens (integers) for a model that starts with an Embedding, values
// (floating point) for any other. Where the input enters (model::forward,
// the trainer's step and evaluate) a mismatch is one error naming both types,
// before the layers or the token checks meet it.
template <class InputType, class X>
inline constexpr bool takes_input_kind =
    std::is_integral_v<typename std::decay_t<X>::value_type> == std::is_integral_v<InputType>;

template <class InputType, class X>
constexpr bool check_model_input_type()
{
    if constexpr (std::is_integral_v<InputType>)
        return diagnose<takes_input_kind<InputType, X>, detail::model_takes_i32_tokens_not<X>>::value;
    else
        return diagnose<takes_input_kind<InputType, X>, detail::model_takes_values_not_tokens<InputType, X>>::value;
}

// The element type a spec's layers take as input: the precision policy's
// storage type, unless the spec names another with
//   template <class P> using input_element = ...;
// (nn::Embedding: i32 tokens; a Sequential: its first layer's). nn::model and
// the trainer hold and stage their inputs in it.
template <class Spec, class P>
struct input_element {
    using type = typename P::storage;
};
template <class Spec, class P>
    requires requires { typename Spec::template input_element<P>; }
struct input_element<Spec, P> {
    using type = typename Spec::template input_element<P>;
};
template <class Spec, class P>
using input_element_t = typename input_element<Spec, P>::type;

// The bound integer inputs must lie below (an Embedding's Vocab), from
//   static constexpr std::size_t input_limit = ...;
// in the spec (a Sequential: its first layer's); 0 where there is none. The
// trainer checks a batch's tokens against it before the step.
template <class Spec>
constexpr std::size_t input_limit_of()
{
    if constexpr (requires { Spec::input_limit; }) return Spec::input_limit;
    else return 0;
}

// S with the extent N appended: Shape<E..., N>.
template <class S, std::size_t N>
struct with_extent_appended;
template <std::size_t... E, std::size_t N>
struct with_extent_appended<Shape<E...>, N> {
    using type = Shape<E..., N>;
};
template <class S, std::size_t N>
using with_extent_appended_t = typename with_extent_appended<S, N>::type;

template <class Storage, class X>
constexpr void check_input_element()
{
    using V = decltype(tenet::destination_view(std::declval<const X&>()));
    using element = std::remove_cv_t<std::remove_pointer_t<decltype(std::declval<V>().data())>>;
    static_assert(std::is_same_v<element, Storage>,
                  "tenet: a layer's input must hold the precision policy's storage type (cast it first)");
}

// What a layer without parameters, buffers or kept tensors declares
// (activations, pooling, Flatten): derive from it, add the shapes, forward
// and backward.
struct parameterless_layer {
    static constexpr bool wants_preactivation_gradient = false;
    static constexpr std::size_t parameter_count = 0, parameter_numel = 0;
    static constexpr std::size_t activation_bytes = 0, activation_gradient_bytes = 0;

    parameterless_layer() = default;
    template <class Slice>
    explicit parameterless_layer(Slice&)
    {
    }
    void initialize(std::uint64_t) {}
    template <class F>
    void for_each_parameter(F&&, const std::string&)
    {
    }
};

// What for_each_parameter is called with in the checks below.
struct parameter_probe {
    template <class Value, class Gradient>
    void operator()(const std::string&, Value, Gradient) const
    {
    }
};

// The protocol as concepts, one per member, so that a check can name the
// member a type misses. Layers are fed contiguous views of the storage type.
namespace detail {

template <class P, class S, class Place>
using input_view = TensorView<const typename P::storage, contiguous_layout<S>, Place>;
template <class P, class S, class Place>
using output_view = TensorView<typename P::storage, contiguous_layout<S>, Place>;

template <class L>
concept counts_parameters = requires {
    { L::parameter_count } -> std::convertible_to<std::size_t>;
};
template <class L>
concept counts_parameter_numel = requires {
    { L::parameter_numel } -> std::convertible_to<std::size_t>;
};
template <class L>
concept counts_activation_bytes = requires {
    { L::activation_bytes } -> std::convertible_to<std::size_t>;
};
template <class L>
concept counts_activation_gradient_bytes = requires {
    { L::activation_gradient_bytes } -> std::convertible_to<std::size_t>;
};
template <class L>
concept says_preactivation = requires {
    { L::wants_preactivation_gradient } -> std::convertible_to<bool>;
};
template <class L, class P>
concept binds_parameters = std::is_constructible_v<L, parameter_slice<typename P::storage, gradient_t<P>>&>;
template <class L>
concept initializes = requires(L& l) { l.initialize(std::uint64_t{}); };
template <class L, class P, class In, class Out, class Place>
concept runs_forward = requires(L& l, const input_view<P, In, Place>& x, const output_view<P, Out, Place>& y) {
    l.forward(x, y, step_info{});
};
template <class L, class P, class In, class Out, class Place>
concept runs_backward = requires(L& l, const output_view<P, Out, Place>& dy, const output_view<P, In, Place>& dx,
                                 no_previous_layer& prev) {
    l.backward(dy, dx, step_info{}, prev);
    l.backward(dy, no_input_gradient{}, step_info{}, prev);
};
template <class L>
concept lists_parameters = requires(L& l, parameter_probe& f) { l.for_each_parameter(f, std::string{}); };

}  // namespace detail

template <class L, class P, class In, class Out, class Place>
concept layer = detail::counts_parameters<L> && detail::counts_parameter_numel<L> &&
                detail::counts_activation_bytes<L> && detail::counts_activation_gradient_bytes<L> &&
                detail::says_preactivation<L> && detail::binds_parameters<L, P> && detail::initializes<L> &&
                detail::runs_forward<L, P, In, Out, Place> && detail::runs_backward<L, P, In, Out, Place> &&
                detail::lists_parameters<L>;

// A spec (what users write in a model) whose layer for input shape In is one.
template <class Spec, class P, class In, class Place>
concept layer_spec = requires {
    typename Spec::template output_shape<In>;
    typename Spec::template layer<P, In, Place>;
} && layer<typename Spec::template layer<P, In, Place>, P, In, typename Spec::template output_shape<In>, Place>;

namespace detail {

// One tenet: line naming the first member a layer misses (the concepts
// above say only "not satisfied"); true once reported, so the caller adds no
// error.
template <class L, class P, class In, class Out, class Place>
constexpr bool check_layer()
{
    if constexpr (!counts_parameters<L>)
        static_assert(counts_parameters<L>, "tenet: layer: needs static constexpr std::size_t parameter_count");
    else if constexpr (!counts_parameter_numel<L>)
        static_assert(counts_parameter_numel<L>,
                      "tenet: layer: needs static constexpr std::size_t parameter_numel (padded_numel of each "
                      "parameter, summed)");
    else if constexpr (!counts_activation_bytes<L>)
        static_assert(counts_activation_bytes<L>, "tenet: layer: needs static constexpr std::size_t activation_bytes");
    else if constexpr (!counts_activation_gradient_bytes<L>)
        static_assert(counts_activation_gradient_bytes<L>,
                      "tenet: layer: needs static constexpr std::size_t activation_gradient_bytes");
    else if constexpr (!says_preactivation<L>)
        static_assert(says_preactivation<L>, "tenet: layer: needs static constexpr bool wants_preactivation_gradient");
    else if constexpr (!binds_parameters<L, P>)
        static_assert(binds_parameters<L, P>, "tenet: layer: needs a constructor taking parameter_slice<...>&");
    else if constexpr (!initializes<L>)
        static_assert(initializes<L>, "tenet: layer: needs initialize(std::uint64_t seed)");
    else if constexpr (!runs_forward<L, P, In, Out, Place>)
        static_assert(runs_forward<L, P, In, Out, Place>, "tenet: layer: needs forward(x, y, const step_info&)");
    else if constexpr (!runs_backward<L, P, In, Out, Place>)
        static_assert(runs_backward<L, P, In, Out, Place>,
                      "tenet: layer: needs backward(dy, dx, const step_info&, prev), dx a view or no_input_gradient");
    else
        static_assert(lists_parameters<L>,
                      "tenet: layer: needs for_each_parameter(f, prefix), calling f(name, value view, gradient view)");
    return true;  // reported above: no second error at the caller
}

template <class Spec, class P, class In, class Place>
constexpr bool check_layer_spec()
{
    constexpr bool shaped = requires { typename Spec::template output_shape<In>; };
    constexpr bool instantiable = requires { typename Spec::template layer<P, In, Place>; };
    static_assert(shaped, "tenet: layer spec: needs template <class In> using output_shape = ... (the output shape for In)");
    static_assert(instantiable,
                  "tenet: layer spec: needs template <precision_policy P, class In, class Place> using layer = ...");
    if constexpr (shaped && instantiable)
        return check_layer<typename Spec::template layer<P, In, Place>, P, In, typename Spec::template output_shape<In>,
                           Place>();
    else
        return true;
}

}  // namespace detail

}  // namespace tenet::nn

namespace tenet::nn::detail {

using tenet::decimal;
using tenet::diagnose;
using tenet::fixed_string;
using tenet::shape_name;

}  // namespace tenet::nn::detail
