// Embedding<Vocab, Dim>: integer tokens [Batch, Seq] (any shape of i32) ->
// vectors [Batch, Seq, Dim], row tokens[b, s] of the weight [Vocab, Dim]
// (PyTorch's nn.Embedding: the parameter "weight", drawn from N(0, 1)). The
// forward is the fusable gather take<0>(weight, tokens); the backward is the
// deterministic scatter-add of dy into the weight gradient (index/): the same
// bits on every run, host and device. A token outside [0, Vocab) is a
// tenet::index_error before anything is written. Tokens are the model's
// input (the spec's input_element is i32), so Embedding comes first.
//
// PositionalEmbedding<Seq, Dim>: a learned position vector added to every
// sequence [..., T, Dim] of T <= Seq positions (the parameter "weight" [Seq,
// Dim], drawn from N(0, 0.02^2) as GPT-2 and ViT do): rows 0..T-1 of the
// table, or, when decoding (step_info::positions, sequences [Batch, T, Dim]),
// rows positions[b]..positions[b]+T-1 for sequence b. Its gradient is dy
// summed over the batch (rows T.. of it zero).
#pragma once

#include "../index/index.hpp"
#include "layer.hpp"

namespace tenet::nn {
namespace detail {

// The one parameter of both embeddings: a table named "weight", drawn from
// N(0, deviation^2) with a random stream of its own.
template <class Storage, class Gradient, class Place, class TableShape>
struct table_parameter {
    using views = decltype(std::declval<parameter_slice<Storage, Gradient>&>().template take<TableShape, Place>());
    static constexpr std::size_t count = TableShape::numel;
    static constexpr std::size_t numel = padded_numel<Storage>(count);

    template <class Slice>
    explicit table_parameter(Slice& parameters)
        : table(parameters.template take<TableShape, Place>()), stream(parameters.next_stream())
    {
    }

    void initialize(std::uint64_t seed, double deviation) { fill_normal(table.first, {seed, stream}, deviation); }

    template <class F>
    void for_each(F& f, const std::string& prefix)
    {
        f(prefix + "weight", table.first, table.second);
    }

    const auto& value() const { return table.first; }
    const auto& gradient() const { return table.second; }

    views table;  // (value, gradient) views
    std::uint64_t stream;
};

template <std::size_t Vocab, std::size_t Dim>
struct Embedding_takes_integer_tokens_i32_cast_the_input_or_put_the_Embedding_first {
    static constexpr auto text()
    {
        return fixed_string("tenet: Embedding<") + decimal<Vocab>() + fixed_string(", ") + decimal<Dim>() +
               fixed_string("> takes integer tokens (i32): cast the input, or put the Embedding first");
    }
};

template <precision_policy P, class S, class Place, std::size_t Vocab, std::size_t Dim>
class embedding_layer {
    using storage = typename P::storage;
    using gradient = gradient_t<P>;
    using weight_type = table_parameter<storage, gradient, Place, Shape<Vocab, Dim>>;

public:
    using input_shape = S;
    using output_shape = with_extent_appended_t<S, Dim>;
    static constexpr bool wants_preactivation_gradient = false;
    static constexpr std::size_t parameter_count = weight_type::count;
    static constexpr std::size_t parameter_numel = weight_type::numel;
    static constexpr std::size_t activation_bytes = 0;  // it keeps a pointer to the tokens
    static constexpr std::size_t activation_gradient_bytes = 0;
    static constexpr bool skips_null_gradients = true;
    static constexpr std::string_view kind = "Embedding";
    // forward: the tokens read, a row gathered and written per token;
    // backward: the table's gradient (no input gradient: tokens have none),
    // dy read and added into a cleared table.
    static constexpr layer_cost cost = [] {
        constexpr std::uint64_t rows = S::numel, out = output_shape::numel, table = std::uint64_t{Vocab} * Dim;
        constexpr std::uint64_t weight_bytes = sizeof(storage) * out + sizeof(gradient) * (2 * table + out);
        return layer_cost{0, sizeof(i32) * rows + 2 * sizeof(storage) * out, 0, weight_bytes, 0, weight_bytes};
    }();

    template <class Slice>
    explicit embedding_layer(Slice& parameters) : weight_(parameters)
    {
    }

    void initialize(std::uint64_t seed) { weight_.initialize(seed, 1.0); }

    template <class X, class Y>
    void forward(const X& x, const Y& y, const step_info&)
    {
        using element = std::remove_cv_t<std::remove_pointer_t<decltype(tenet::destination_view(x).data())>>;
        constexpr bool tokens = std::is_same_v<element, i32>;
        static_assert(diagnose<tokens, Embedding_takes_integer_tokens_i32_cast_the_input_or_put_the_Embedding_first<Vocab, Dim>>::value);
        if constexpr (tokens) {
            const auto t = contiguous_as<S>(x);
            tokens_ = t.data();
            assign(contiguous_as<output_shape>(y), take<0>(weight_.value(), t));
        }
    }

    // Tokens have no gradient: dx is no_input_gradient (Embedding is first).
    template <class DY, class DX, class Prev>
    void backward(const DY& dy, const DX&, const step_info&, Prev&)
    {
        static_assert(is_no_input_gradient<DX>, "tenet: Embedding takes the model's tokens: it must be the first layer");
        if (!gradient_wanted(weight_.gradient())) return;  // (inside nn::Frozen)
        assign(weight_.gradient(), 0);
        scatter_add_rows(weight_.gradient(), make_view<S, Place>(tokens_), contiguous_as<output_shape>(dy));
    }

    template <class F>
    void for_each_parameter(F&& f, const std::string& prefix)
    {
        weight_.for_each(f, prefix);
    }

private:
    weight_type weight_;
    const i32* tokens_ = nullptr;
};

template <std::size_t Seq, std::size_t Dim, class S>
struct PositionalEmbedding_Seq_Dim_needs_last_extent_Dim_and_at_most_Seq_positions_not {
    static constexpr auto text()
    {
        return fixed_string("tenet: PositionalEmbedding<") + decimal<Seq>() + fixed_string(", ") + decimal<Dim>() +
               fixed_string("> fed ") + shape_name<S>::text() + fixed_string(": its last extent must be ") +
               decimal<Dim>() + fixed_string(" and the one before at most ") + decimal<Seq>();
    }
};

template <std::size_t Seq, std::size_t Dim, class S>
inline constexpr bool positional_fits = S::rank >= 2 && S::extents[S::rank - 1] == Dim && S::extents[S::rank - 2] >= 1 &&
                                        S::extents[S::rank - 2] <= Seq;

template <std::size_t Seq, std::size_t Dim, class S>
struct positional_output {
    static constexpr bool fits = positional_fits<Seq, Dim, S>;
    static_assert(diagnose<fits, PositionalEmbedding_Seq_Dim_needs_last_extent_Dim_and_at_most_Seq_positions_not<Seq, Dim, S>>::value);
    using type = S;
};

template <precision_policy P, class S, class Place, std::size_t Seq, std::size_t Dim>
class positional_embedding_layer {
    using storage = typename P::storage;
    using gradient = gradient_t<P>;
    using table_type = table_parameter<storage, gradient, Place, Shape<Seq, Dim>>;
    static constexpr std::size_t T = S::extents[S::rank - 2];  // positions per sequence
    // every sequence as one row of T * Dim values
    using rows = Shape<S::numel / (T * Dim), T * Dim>;

public:
    using input_shape = S;
    using output_shape = S;
    static constexpr bool wants_preactivation_gradient = false;
    static constexpr std::size_t parameter_count = table_type::count;
    static constexpr std::size_t parameter_numel = table_type::numel;
    static constexpr std::size_t activation_bytes = 0;
    static constexpr std::size_t activation_gradient_bytes = 0;
    static constexpr bool skips_null_gradients = true;
    static constexpr std::string_view kind = "PositionalEmbedding";
    // y = x + the table broadcast over the batch; the table's gradient sums dy over it.
    static constexpr layer_cost cost = [] {
        constexpr std::uint64_t n = S::numel, table = std::uint64_t{Seq} * Dim;
        constexpr std::uint64_t weight_bytes = sizeof(storage) * n + sizeof(gradient) * table;
        return layer_cost{0, sizeof(storage) * (2 * n + table), 0, sizeof(storage) * 2 * n + weight_bytes, 0, weight_bytes};
    }();

    template <class Slice>
    explicit positional_embedding_layer(Slice& parameters) : table_(parameters)
    {
    }

    void initialize(std::uint64_t seed) { table_.initialize(seed, 0.02); }

    template <class X, class Y>
    void forward(const X& x, const Y& y, const step_info& step)
    {
        check_input_element<storage, X>();
        if (step.positions != nullptr) return forward_at(x, y, step.positions);
        assign(contiguous_as<rows>(y), contiguous_as<rows>(x) + broadcast_to<rows>(first_rows(table_.value())));
    }

    template <class DY, class DX, class Prev>
    void backward(const DY& dy, const DX& dx, const step_info& step, Prev&)
    {
        if (step.positions != nullptr) throw error("tenet: PositionalEmbedding: a decoding forward has no backward");
        const auto g = contiguous_as<rows>(dy);
        if (gradient_wanted(table_.gradient())) {
            assign(first_rows(table_.gradient()), sum<0>(g, keepdims));
            if constexpr (T < Seq) assign(make_view<Shape<(Seq - T) * Dim>, Place>(table_.gradient().data() + T * Dim), 0);
        }
        if constexpr (!is_no_input_gradient<DX>) assign(contiguous_as<rows>(dx), g);
    }

    template <class F>
    void for_each_parameter(F&& f, const std::string& prefix)
    {
        table_.for_each(f, prefix);
    }

private:
    // The table's first T rows, as one row.
    template <class V>
    static auto first_rows(const V& v)
    {
        return make_view<Shape<1, T * Dim>, Place>(v.data());
    }

    // Sequence b's rows are table rows positions[b] + t (a position past the
    // table is a tenet::index_error).
    template <class X, class Y>
    void forward_at(const X& x, const Y& y, const i32* positions)
    {
        static_assert(S::rank == 3, "tenet: PositionalEmbedding: decoding takes sequences [Batch, T, Dim]");
        constexpr std::size_t B = S::extents[0];
        using at_shape = Shape<B, T>;
        const auto first = broadcast_to<at_shape>(reshape<Shape<B, 1>>(make_view<Shape<B>, Place>(positions)));
        const auto at = first + broadcast_to<at_shape>(reshape<Shape<1, T>>(iota<Shape<T>, i32>()));
        assign(contiguous_as<S>(y), contiguous_as<S>(x) + take<0>(table_.value(), at));
    }

    table_type table_;
};

}  // namespace detail

template <std::size_t Vocab, std::size_t Dim>
struct Embedding {
    static_assert(Vocab >= 1 && Dim >= 1, "tenet: Embedding<Vocab, Dim>: both must be at least 1");
    static_assert(Vocab <= (std::size_t{1} << 31), "tenet: Embedding<Vocab, Dim>: tokens are i32, so Vocab <= 2^31");
    template <class P>
    using input_element = i32;
    static constexpr std::size_t input_limit = Vocab;  // tokens lie in [0, Vocab)
    template <class S>
    using output_shape = with_extent_appended_t<S, Dim>;
    template <precision_policy P, class S, class Place>
    using layer = detail::embedding_layer<P, S, Place, Vocab, Dim>;
};

template <std::size_t Seq, std::size_t Dim>
struct PositionalEmbedding {
    template <class S>
    using output_shape = typename detail::positional_output<Seq, Dim, S>::type;
    template <class S>
    static constexpr bool accepts = detail::positional_fits<Seq, Dim, S>;
    template <precision_policy P, class S, class Place>
    using layer = detail::positional_embedding_layer<P, S, Place, Seq, Dim>;
};

}  // namespace tenet::nn
