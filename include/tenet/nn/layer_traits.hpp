// The layer protocol's optional members, each with the default a layer
// that does not declare it gets (nn/layer.hpp states the protocol): what it
// keeps for the backward, Offloaded and Checkpointed bytes, whether it views
// its input, its buffers, its frozen parameters, whether it skips
// parameter gradients bound null, and its kind.
#pragma once

#include <cstddef>
#include <string_view>

namespace tenet::nn {

// A layer built from kept tensors declares
//   static constexpr std::size_t kept_bytes = ...;  // its kept tensors' arena_bytes, its children's included
// and, when some of its activation_bytes stay owned inside a Checkpointed
// segment (children that keep plain tensors),
//   static constexpr std::size_t resident_activation_bytes = ...;
// A layer without kept_bytes keeps all of its activation_bytes everywhere.
template <class L>
constexpr std::size_t kept_bytes_of()
{
    if constexpr (requires { L::kept_bytes; }) return L::kept_bytes;
    else return 0;
}
template <class L>
constexpr std::size_t resident_activation_bytes_of()
{
    if constexpr (requires { L::resident_activation_bytes; }) return L::resident_activation_bytes;
    else if constexpr (requires { L::kept_bytes; }) return 0;
    else return L::activation_bytes;
}

// Bytes of host memory a layer's Offloaded segments keep their activations
// in (0 unless it holds one).
template <class L>
inline constexpr std::size_t offloaded_bytes_v = 0;
template <class L>
    requires requires { L::offloaded_bytes; }
inline constexpr std::size_t offloaded_bytes_v<L> = L::offloaded_bytes;

// Bytes of the shared recompute arena a layer needs (0 unless it holds a
// Checkpointed segment).
template <class L>
inline constexpr std::size_t recompute_bytes_v = 0;
template <class L>
    requires requires { L::recompute_bytes; }
inline constexpr std::size_t recompute_bytes_v<L> = L::recompute_bytes;

// A layer whose output is its input read with another shape (Flatten) says
// views_input = true: inside a Sequential, where it is not the last child,
// it is not run, and the next child reads its input's memory (see
// sequential.hpp). It still implements forward and backward (a copy) for
// where it is last, or first (its input gradient).
template <class L>
inline constexpr bool views_input_v = false;
template <class L>
    requires requires { L::views_input; }
inline constexpr bool views_input_v<L> = L::views_input;

// f32 elements of the model's buffer store a layer takes (0 unless it has buffers).
template <class L>
inline constexpr std::size_t buffer_numel_v = 0;
template <class L>
    requires requires { L::buffer_numel; }
inline constexpr std::size_t buffer_numel_v<L> = L::buffer_numel;

// Elements of the model's frozen block a layer takes (nn::Frozen; else 0).
template <class L>
inline constexpr std::size_t frozen_numel_v = 0;
template <class L>
    requires requires { L::frozen_numel; }
inline constexpr std::size_t frozen_numel_v<L> = L::frozen_numel;

// Frozen parameters' elements (without padding) a layer holds.
template <class L>
inline constexpr std::size_t frozen_count_v = 0;
template <class L>
    requires requires { L::frozen_count; }
inline constexpr std::size_t frozen_count_v<L> = L::frozen_count;

// Whether a layer's backward computes only its input gradient when the
// gradient views its parameters were bound with are null (a layer inside
// nn::Frozen): no weight-gradient GEMM, no gradient memory. A layer says so
// with `static constexpr bool skips_null_gradients = true;` (containers: when
// every child does); one that takes no parameters has nothing to skip.
// Frozen hands any other layer a scratch for the gradients it writes.
template <class L>
inline constexpr bool skips_null_gradients_v = L::parameter_numel == 0 && frozen_numel_v<L> == 0;
template <class L>
    requires requires { L::skips_null_gradients; }
inline constexpr bool skips_null_gradients_v<L> = L::skips_null_gradients;

// The kind of layer a leaf is, as parameter groups select it
// (train::parameter_group::layer): "Linear", "Conv2d", "LayerNorm",
// "BatchNorm2d", "Embedding", "PositionalEmbedding", "MultiHeadAttention",
// "PatchEmbed" for the built-ins; a user's layer names its own with
// `static constexpr std::string_view kind = "...";`, else it has none ("").
template <class L>
inline constexpr std::string_view layer_kind_v{};
template <class L>
    requires requires { std::string_view{L::kind}; }
inline constexpr std::string_view layer_kind_v<L> = L::kind;

// A container whose children a profile sees one by one (Sequential,
// Residual: `static constexpr bool reports_children = true;`); any other
// layer is timed as a whole.
template <class L>
inline constexpr bool reports_children_v = false;
template <class L>
    requires requires { L::reports_children; }
inline constexpr bool reports_children_v<L> = L::reports_children;

// Whether a gradient view is bound (false inside nn::Frozen).
template <class View>
bool gradient_wanted(const View& gradient)
{
    return gradient.data() != nullptr;
}

}  // namespace tenet::nn
