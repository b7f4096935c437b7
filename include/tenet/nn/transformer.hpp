// TransformerEncoderLayer<Dim, Heads, Hidden, Causal = false, DropoutRate =
// std::ratio<0>>: the pre-norm encoder block of GPT-2 and ViT,
//   x = x + Dropout(MultiHeadAttention(LayerNorm(x)))
//   x = x + Dropout(Linear<Hidden, Dim>(GELU(Linear<Dim, Hidden>(LayerNorm(x)))))
// on sequences [Batch, Seq, Dim]. It is a Sequential of two Residuals, so it
// stacks, nests in Checkpointed<...> (one recomputed segment per layer), and
// its parameters are named as such: "0.0.weight" (the first LayerNorm),
// "0.1.in_proj_weight", ..., "1.1.weight" (the MLP's first Linear). The
// MLP's Linear + GELU + Linear is one fused unit (sequential.hpp). Without
// a dropout rate there is no Dropout layer at all.
#pragma once

#include "attention.hpp"
#include "dropout.hpp"
#include "layernorm_layer.hpp"
#include "residual.hpp"

#include <ratio>

namespace tenet::nn {
namespace detail {

template <class Rate, class... Layers>
struct with_dropout {
    using type = Residual<Layers..., Dropout<Rate>>;
};
template <class... Layers>
struct with_dropout<std::ratio<0>, Layers...> {
    using type = Residual<Layers...>;
};

}  // namespace detail

template <std::size_t Dim, std::size_t Heads, std::size_t Hidden, bool Causal = false, class DropoutRate = std::ratio<0>>
struct TransformerEncoderLayer
    : Sequential<typename detail::with_dropout<typename DropoutRate::type, LayerNorm<Dim>,
                                               MultiHeadAttention<Dim, Heads, Causal>>::type,
                 typename detail::with_dropout<typename DropoutRate::type, LayerNorm<Dim>, Linear<Dim, Hidden>, GELU,
                                               Linear<Hidden, Dim>>::type> {};

}  // namespace tenet::nn
