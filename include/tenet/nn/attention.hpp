// MultiHeadAttention<Dim, Heads, Causal = false>: self-attention over
// sequences [Batch, Seq, Dim], as PyTorch's nn.MultiheadAttention with
// batch_first (its parameter names: in_proj_weight [3 Dim, Dim],
// in_proj_bias, out_proj.weight, out_proj.bias):
//   q, k, v = split(x W_in^T + b_in), each cut into Heads heads of Dim / Heads
//   p = softmax(q k^T / sqrt(Dim / Heads) + mask)   per head, over the keys
//   y = concat_heads(p v) W_out^T + b_out
// The mask hides the keys after the query (Causal) and the keys past each
// sequence's valid length (model::forward(x, lengths): key padding). A query
// with no key left (a sequence of length 0) attends to nothing: its output is
// the output bias alone, never NaN.
//
// The projections are the policy's Linear layers; the attention itself is
// batched GEMMs over Batch * Heads matrices (matmul: the host GEMM, or
// cuBLASLt's strided batches on the device) and one fused row softmax whose
// input expression adds the masks. q, k and v are copied once into
// head-major order so that every head is one matrix of a strided batch. The
// forward keeps q/k/v and the probabilities for the backward:
//   dp = dctx v^T, dv = p^T dctx, ds = softmax_backward(dp, p) / sqrt(d),
//   dq = ds k, dk = ds^T q.
#pragma once

#include "../expr/random.hpp"
#include "../rowwise/softmax.hpp"
#include "attention_projections.hpp"
#include "cached_attention.hpp"

#include <cmath>

namespace tenet::nn {
namespace detail {

template <std::size_t Dim, std::size_t Heads>
struct MultiHeadAttention_Dim_Heads_Heads_must_divide_Dim {
    static constexpr auto text()
    {
        return fixed_string("tenet: MultiHeadAttention<") + decimal<Dim>() + fixed_string(", ") + decimal<Heads>() +
               fixed_string(">: Heads must divide Dim");
    }
};

template <std::size_t Dim, class S>
struct MultiHeadAttention_takes_sequences_Batch_Seq_Dim_not {
    static constexpr auto text()
    {
        return fixed_string("tenet: MultiHeadAttention<") + decimal<Dim>() + fixed_string(", ...> fed ") +
               shape_name<S>::text() + fixed_string(": it takes sequences [Batch, Seq, ") + decimal<Dim>() +
               fixed_string("]");
    }
};

template <std::size_t Dim, class S>
inline constexpr bool attention_fits = S::rank == 3 && S::extents[S::rank - 1] == Dim;

template <std::size_t Dim, class S>
struct attention_output {
    static constexpr bool fits = attention_fits<Dim, S>;
    static_assert(diagnose<fits, MultiHeadAttention_takes_sequences_Batch_Seq_Dim_not<Dim, S>>::value);
    using type = S;
};

template <precision_policy P, class S, class Place, std::size_t Dim, std::size_t Heads, bool Causal>
class attention_layer {
    using storage = typename P::storage;
    static constexpr std::size_t B = S::extents[0], T = S::extents[1], H = Heads, d = Dim / Heads, BH = B * H;
    using projections = attention_projections<P, S, Place, Dim>;
    using in_proj_t = typename projections::in_type;
    using out_proj_t = typename projections::out_type;
    using heads_shape = Shape<3, B, H, T, d>;  // q, k, v, head-major
    using head_batch = Shape<BH, T, d>;
    using scores_shape = Shape<BH, T, T>;
    // 1 / sqrt(d), rounded once (std::sqrt is not constexpr under nvcc)
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    // A hidden key's score: finite, so that a row with no key left is not NaN.
    static constexpr float hidden = -1e30f;

public:
    using input_shape = S;
    using output_shape = S;
    static constexpr bool wants_preactivation_gradient = false;
    static constexpr std::size_t parameter_count = projections::parameter_count;
    static constexpr std::size_t parameter_numel = projections::parameter_numel;
    // q/k/v (projected, then head-major), the probabilities, the merged heads
    static constexpr std::size_t activation_bytes = projections::activation_bytes +
                                                    (2 * heads_shape::numel + scores_shape::numel + 2 * S::numel) * sizeof(storage);
    static constexpr std::size_t activation_gradient_bytes =
        (heads_shape::numel + scores_shape::numel + S::numel) * sizeof(storage);
    static constexpr bool skips_null_gradients =
        skips_null_gradients_v<in_proj_t> && skips_null_gradients_v<out_proj_t>;
    static constexpr std::string_view kind = "MultiHeadAttention";
    // The projections, and the two batched GEMMs each way (q k^T and p v;
    // dp, dv, dq and dk), each 2 B H T T d. Bytes: the head-major copies,
    // the scores, the softmax and its backward, the merges.
    static constexpr layer_cost cost = [] {
        constexpr std::uint64_t btd = B * T * Dim, scores = BH * T * T, t = sizeof(storage);
        constexpr std::uint64_t bmm = 2 * BH * T * T * d;
        const layer_cost core{2 * bmm, t * (12 * btd + 4 * scores), 4 * bmm, t * (16 * btd + 7 * scores), 0, 0};
        return projections::template around<storage>(core);
    }();

    // q/k/v, the probabilities, the context and the merged heads are kept
    // tensors (the recompute arena inside a Checkpointed segment).
    static constexpr std::size_t kept_bytes = kept_bytes_of<in_proj_t>() + kept_bytes_of<out_proj_t>() +
                                              kept_tensor<storage, with_last_extent_t<S, 3 * Dim>, Place>::arena_bytes +
                                              kept_tensor<storage, heads_shape, Place>::arena_bytes +
                                              kept_tensor<storage, scores_shape, Place>::arena_bytes +
                                              kept_tensor<storage, head_batch, Place>::arena_bytes +
                                              kept_tensor<storage, S, Place>::arena_bytes;
    static constexpr std::size_t resident_activation_bytes =
        resident_activation_bytes_of<in_proj_t>() + resident_activation_bytes_of<out_proj_t>();

    template <class Slice>
    explicit attention_layer(Slice& parameters)
        : proj_(parameters), qkv_(parameters), heads_(parameters), probs_(parameters),
          context_(parameters), merged_(parameters)
    {
        assign(full_lengths_.view(), static_cast<i32>(T));
    }

    void initialize(std::uint64_t seed) { proj_.initialize(seed); }

    template <class X, class Y>
    void forward(const X& x, const Y& y, const step_info& step)
    {
        check_input_element<storage, X>();
        lengths_ = step.sequence_lengths != nullptr ? step.sequence_lengths : full_lengths_.data();
        proj_.in.forward(x, qkv_.view(), step);
        assign(make_view<heads_shape, Place>(heads_.data()), permute<2, 0, 3, 1, 4>(reshape<Shape<B, T, 3, H, d>>(qkv_.view())));
        const auto scores = reshape<Shape<B, H, T, T>>(matmul(part(heads_, 0), transpose(part(heads_, 1)))) * scale;
        assign(as_4d(probs_), softmax(scores + mask()));
        assign(context_.view(), matmul(probs_.view(), part(heads_, 2)));
        assign(merged_.view(),
               where(has_keys(), reshape<S>(permute<0, 2, 1, 3>(reshape<Shape<B, H, T, d>>(context_.view()))), 0));
        proj_.out.forward(merged_.view(), y, step);
    }

    template <class DY, class DX, class Prev>
    void backward(const DY& dy, const DX& dx, const step_info& step, Prev&)
    {
        no_previous_layer none;
        proj_.out.backward(dy, d_merged_.view(), step, none);
        assign(context_.view(),
               reshape<head_batch>(permute<0, 2, 1, 3>(reshape<Shape<B, T, H, d>>(where(has_keys(), d_merged_, 0)))));
        const auto dcontext = std::as_const(context_).view();
        const auto probs = std::as_const(probs_).view();
        assign(part(d_heads_, 2), matmul(transpose(probs), dcontext));                   // dv
        assign(d_scores_.view(), matmul(dcontext, transpose(part(heads_, 2))));           // dp
        softmax_backward(d_scores_, std::as_const(d_scores_).view(), probs);            // ds (in place, row by row)
        assign(part(d_heads_, 0), matmul(d_scores_, part(heads_, 1)) * scale);           // dq
        assign(part(d_heads_, 1), matmul(transpose(d_scores_), part(heads_, 0)) * scale);  // dk
        assign(qkv_.view(), reshape<Shape<B, T, 3 * Dim>>(permute<1, 3, 0, 2, 4>(make_view<heads_shape, Place>(d_heads_.data()))));
        proj_.in.backward(qkv_.view(), dx, step, none);
    }

    template <class F>
    void for_each_parameter(F&& f, const std::string& prefix)
    {
        proj_.for_each_parameter(f, prefix);
    }

private:
    // q (0), k (1) or v (2): Batch * Heads matrices [Seq, Dim / Heads]
    template <class Buffer>
    static auto part(Buffer& b, std::size_t which)
    {
        return make_view<head_batch, Place>(b.data() + which * head_batch::numel);
    }

    template <class V>
    static auto as_4d(V& probabilities)
    {
        return make_view<Shape<B, H, T, T>, Place>(probabilities.data());
    }

    // Sequences with a key left, as a mask of the input's shape. (In one of
    // length 0 every query's probabilities are uniform over hidden keys;
    // their context is zeroed here, and so is its gradient.)
    auto has_keys() const
    {
        return broadcast_to<S>(reshape<Shape<B, 1, 1>>(make_view<Shape<B>, Place>(lengths_))) > 0;
    }

    // The additive mask [Batch, Heads, Seq (query), Seq (key)]: hidden where
    // the key is past the sequence's length, or (Causal) after the query.
    auto mask() const
    {
        using S4 = Shape<B, H, T, T>;
        const auto key = broadcast_to<S4>(reshape<Shape<1, 1, 1, T>>(iota<Shape<T>, i32>()));
        const auto length = broadcast_to<S4>(reshape<Shape<B, 1, 1, 1>>(make_view<Shape<B>, Place>(lengths_)));
        if constexpr (Causal) {
            const auto query = broadcast_to<S4>(reshape<Shape<1, 1, T, 1>>(iota<Shape<T>, i32>()));
            return where(key >= length, hidden, where(key > query, hidden, 0.0f));
        } else {
            return where(key >= length, hidden, 0.0f);
        }
    }

    projections proj_;
    kept_tensor<storage, with_last_extent_t<S, 3 * Dim>, Place> qkv_;  // (its gradient in the backward)
    kept_tensor<storage, heads_shape, Place> heads_;
    kept_tensor<storage, scores_shape, Place> probs_;
    kept_tensor<storage, head_batch, Place> context_;  // (its gradient in the backward)
    kept_tensor<storage, S, Place> merged_;            // the out projection's input
    Tensor<storage, S, Place> d_merged_;
    Tensor<storage, heads_shape, Place> d_heads_;
    Tensor<storage, scores_shape, Place> d_scores_;
    Tensor<i32, Shape<B>, Place> full_lengths_;
    const i32* lengths_ = nullptr;
};

template <precision_policy P, class S, class Place, std::size_t Dim, std::size_t Heads, bool Causal>
struct attention_for {
    using type = attention_layer<P, S, Place, Dim, Heads, Causal>;
};
template <decoding_policy P, class S, class Place, std::size_t Dim, std::size_t Heads, bool Causal>
struct attention_for<P, S, Place, Dim, Heads, Causal> {
    using type = cached_attention_layer<P, S, Place, Dim, Heads, Causal>;
};

}  // namespace detail

template <std::size_t Dim, std::size_t Heads, bool Causal = false>
struct MultiHeadAttention {
    static_assert(diagnose<Heads >= 1 && Dim % Heads == 0, detail::MultiHeadAttention_Dim_Heads_Heads_must_divide_Dim<Dim, Heads>>::value);
    template <class S>
    using output_shape = typename detail::attention_output<Dim, S>::type;
    template <class S>
    static constexpr bool accepts = detail::attention_fits<Dim, S>;
    // (under a decoding policy: the cached layer, cached_attention.hpp)
    template <precision_policy P, class S, class Place>
    using layer = typename detail::attention_for<P, S, Place, Dim, Heads, Causal>::type;
};

}  // namespace tenet::nn
