// decoding<Base, Context>: the policy of a model that generates one token at
// a time (infer::decoder builds it). It is Base's precision for inference
// alone (no gradients, no master weights) and tells the layers that mix
// positions to keep what earlier steps computed, for sequences of up to
// Context positions:
//   - causal MultiHeadAttention keeps a key/value cache [Batch, Heads,
//     Context, Dim / Heads] in the storage type, allocated once, and each
//     forward appends one position per sequence and attends over the cache;
//   - PositionalEmbedding adds the table's row at each sequence's position.
// Every other layer works on the step's one position as it would on any
// sequence. Each forward reads the positions from step_info::positions.
#pragma once

#include "../numeric/precision.hpp"

#include <cstddef>

namespace tenet::nn {

template <precision_policy Base, std::size_t Context>
struct decoding : Base {
    static_assert(Context >= 1, "tenet: decoding<Base, Context>: Context must be at least 1");
    using base_policy = Base;
    static constexpr bool trainable = false;
    static constexpr bool dynamic_loss_scaling = false;
    static constexpr std::size_t decode_context = Context;
};

// Whether P is a decoding policy, and its context.
template <class P>
concept decoding_policy = precision_policy<P> && requires {
    { P::decode_context } -> std::convertible_to<std::size_t>;
};

}  // namespace tenet::nn
