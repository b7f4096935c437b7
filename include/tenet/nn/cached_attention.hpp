// Causal MultiHeadAttention under a decoding<Base, Context> policy: each
// forward takes one new position per sequence, x [Batch, 1, Dim] (sequence
// b's token at position positions[b], step_info::positions), appends its key
// and value to a cache [2 (k, v), Batch, Heads, Context, Dim / Heads] kept in
// the storage type, and attends over the cache's positions 0..positions[b]:
//   q, k, v = split(x W_in^T + b_in)            (one position)
//   K[b, :, positions[b]] = k,  V[b, :, positions[b]] = v
//   p = softmax(q K^T / sqrt(d) + mask)          mask hides keys after positions[b]
//   y = concat_heads(p V) W_out^T + b_out
// so a token costs O(Context), where recomputing the sequence costs
// O(Context^2), and the logits are the full causal forward's at that
// position (the same expressions, over one query row). The parameters are
// the training layer's, in the same order and with the same names, so a
// trained model's parameters load as they are (nn::copy_parameters).
//
// The cache is allocated once and zeroed, so keys past a sequence's position
// (never written, or left by an earlier sequence in that row) are finite and
// hidden: their probability is exactly 0. Writing a position rewrites the
// cache row where the position matches (one elementwise pass, positions read
// in the model's place), so a step replays as a CUDA Graph unchanged.
#pragma once

#include "../index/index_range.hpp"
#include "../rowwise/softmax.hpp"
#include "attention_projections.hpp"
#include "decoding.hpp"

#include <cmath>

namespace tenet::nn::detail {

template <class S>
struct MultiHeadAttention_decodes_one_position_per_sequence_Batch_1_Dim_not {
    static constexpr auto text()
    {
        return fixed_string("tenet: MultiHeadAttention: a decoding model steps one position per sequence: its input "
                            "must be [Batch, 1, Dim], not ") +
               shape_name<S>::text();
    }
};

template <decoding_policy P, class S, class Place, std::size_t Dim, std::size_t Heads, bool Causal>
class cached_attention_layer {
    static_assert(Causal, "tenet: MultiHeadAttention: only causal attention decodes token by token (a later token would "
                          "change what an earlier position attends to)");
    static_assert(diagnose<S::rank == 3 && S::extents[1] == 1,
                           MultiHeadAttention_decodes_one_position_per_sequence_Batch_1_Dim_not<S>>::value);
    using storage = typename P::storage;
    static constexpr std::size_t B = S::extents[0], C = P::decode_context, H = Heads, d = Dim / Heads, BH = B * H;
    using projections = attention_projections<P, S, Place, Dim>;
    using heads_shape = Shape<3, B, H, 1, d>;  // the step's q, k, v, head-major
    using cache_shape = Shape<2, B, H, C, d>;  // every position's k, then v
    using query_batch = Shape<BH, 1, d>;
    using key_batch = Shape<BH, C, d>;
    using scores_shape = Shape<B, H, 1, C>;
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));  // as the training layer rounds it
    static constexpr float hidden = -1e30f;

public:
    using input_shape = S;
    using output_shape = S;
    static constexpr bool wants_preactivation_gradient = false;
    static constexpr std::size_t parameter_count = projections::parameter_count;
    static constexpr std::size_t parameter_numel = projections::parameter_numel;
    static constexpr std::size_t cache_bytes = cache_shape::numel * sizeof(storage);
    static constexpr std::size_t activation_bytes =
        projections::activation_bytes + cache_bytes +
        (with_last_extent_t<S, 3 * Dim>::numel + heads_shape::numel + scores_shape::numel + S::numel) * sizeof(storage);
    static constexpr std::size_t activation_gradient_bytes = 0;
    static constexpr std::string_view kind = "MultiHeadAttention";
    // The projections, the two batched products over the cache (2 B H C d
    // each), the cache rewritten and read, the scores and their softmax.
    static constexpr layer_cost cost = [] {
        constexpr std::uint64_t bmm = 2 * BH * C * d, t = sizeof(storage);
        const layer_cost core{2 * bmm, t * (3 * cache_shape::numel + 4 * scores_shape::numel + 4 * S::numel), 0, 0, 0, 0};
        return projections::template around<storage>(core);
    }();

    template <class Slice>
    explicit cached_attention_layer(Slice& parameters) : proj_(parameters)
    {
        assign(cache_.view(), 0);
        assign(start_.view(), 0);
    }

    void initialize(std::uint64_t seed) { proj_.initialize(seed); }

    template <class X, class Y>
    void forward(const X& x, const Y& y, const step_info& step)
    {
        check_input_element<storage, X>();
        const auto at = make_view<Shape<B>, Place>(step.positions != nullptr ? step.positions : start_.data());
        if constexpr (host_accessible_v<Place>) check_index_range<C>(at, "MultiHeadAttention: decoding positions");
        proj_.in.forward(x, qkv_.view(), step);
        assign(heads_.view(), permute<2, 0, 3, 1, 4>(reshape<Shape<B, 1, 3, H, d>>(qkv_.view())));
        append(at);
        const auto keys = make_view<key_batch, Place>(cache_.data());
        const auto values = make_view<key_batch, Place>(cache_.data() + key_batch::numel);
        const auto query = make_view<query_batch, Place>(heads_.data());
        const auto scores = reshape<scores_shape>(matmul(query, transpose(keys))) * scale;
        const auto key = broadcast_to<scores_shape>(reshape<Shape<1, 1, 1, C>>(iota<Shape<C>, i32>()));
        const auto last = broadcast_to<scores_shape>(reshape<Shape<B, 1, 1, 1>>(at));
        assign(probs_.view(), softmax(scores + where(key > last, hidden, 0.0f)));
        assign(context_.view(), matmul(make_view<Shape<BH, 1, C>, Place>(probs_.data()), values));
        // [B, H, 1, d] is [B, 1, H d] in memory: the heads are merged as they lie
        proj_.out.forward(make_view<S, Place>(context_.data()), y, step);
    }

    template <class DY, class DX, class Prev>
    void backward(const DY&, const DX&, const step_info&, Prev&)
    {
        throw error("tenet: MultiHeadAttention: a decoding model has no backward (train the model it was copied from)");
    }

    template <class F>
    void for_each_parameter(F&& f, const std::string& prefix)
    {
        proj_.for_each_parameter(f, prefix);
    }

    // The cache: keys [Batch, Heads, Context, Dim / Heads], then values.
    const auto& cache() const { return cache_; }

private:
    // The step's k and v written at each sequence's position.
    template <class At>
    void append(const At& at)
    {
        const auto slot = broadcast_to<cache_shape>(reshape<Shape<1, 1, 1, C, 1>>(iota<Shape<C>, i32>()));
        const auto position = broadcast_to<cache_shape>(reshape<Shape<1, B, 1, 1, 1>>(at));
        const auto fresh = broadcast_to<cache_shape>(make_view<Shape<2, B, H, 1, d>, Place>(heads_.data() + query_batch::numel));
        assign(cache_.view(), where(slot == position, fresh, cache_.view()));
    }

    projections proj_;
    Tensor<storage, with_last_extent_t<S, 3 * Dim>, Place> qkv_;
    Tensor<storage, heads_shape, Place> heads_;
    Tensor<storage, cache_shape, Place> cache_;
    Tensor<storage, scores_shape, Place> probs_;
    Tensor<storage, query_batch, Place> context_;
    Tensor<i32, Shape<B>, Place> start_;  // positions 0: a forward without positions starts each sequence
};

}  // namespace tenet::nn::detail
