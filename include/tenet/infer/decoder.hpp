// decoder<Spec, Policy, Batch, Context, Place>: a causal token model (an
// Embedding first, causal attention, logits last) that generates one token
// per sequence per step, with every buffer planned at construction:
//
//   infer::decoder<gpt, fp32, 4, 128, Device> d(trained);  // copies its parameters
//   auto logits = d.step(tokens);    // tokens i32 [4]; logits [4, Vocab]
//
// It is the spec instantiated under nn::decoding<Policy, Context> for input
// [Batch, 1]: attention keeps a key/value cache of Context positions and
// each step appends one position to every sequence, so a token costs
// O(Context) where recomputing the context costs O(Context^2). Each sequence
// has its own position (position(b); reset(b) starts sequence b over while
// the others go on), kept in the model's place, where the step itself moves
// it on, and mirrored on the host to check: a step past Context positions is
// a tenet::error (reset the sequence first).
//
// On a device the step is captured as a CUDA Graph on its second call and
// replayed from then on (the first runs eagerly: it makes the GEMM plans);
// the tokens are copied into the buffer the graph reads.
// use_graphs(false) runs every step eagerly. On the host the steps run with
// the thread count a train::thread_tuner finds fastest by timing them (a
// step of a small model at batch 1 is too little work to share between
// threads on a busy machine), from the time between one step's end and the
// next's, sampling included.
#pragma once

#include "../nn/model.hpp"
#include "../profile/timer.hpp"
#include "../train/graph.hpp"
#include "../train/thread_tuner.hpp"

#include <cstddef>
#include <span>
#include <string>
#include <type_traits>

namespace tenet::infer {
namespace detail {

template <class S>
inline constexpr bool is_step_logits = S::rank == 3 && S::extents[1] == 1;

}  // namespace detail

template <class Spec, precision_policy P, std::size_t Batch, std::size_t Context, memory_place Place = Device>
class decoder {
public:
    using model_type = nn::model<Spec, nn::decoding<P, Context>, Shape<Batch, 1>, Place>;
    using storage_type = typename model_type::storage_type;
    static_assert(std::is_same_v<typename model_type::input_type, i32>,
                  "tenet: decoder: the model must take tokens (an Embedding first)");
    static_assert(detail::is_step_logits<typename model_type::output_shape>,
                  "tenet: decoder: the model must give logits [Batch, Seq, Vocab]");
    static constexpr std::size_t batch = Batch;
    static constexpr std::size_t context = Context;
    static constexpr std::size_t vocabulary = model_type::output_shape::extents[2];
    using logits_shape = Shape<Batch, vocabulary>;
    // Every buffer the steps use, the key/value caches included.
    static constexpr std::size_t state_bytes = model_type::activation_bytes;

    explicit decoder(stream_ref s = current_stream()) : model_(0, s)
    {
        model_.eval();
        reset();
    }

    // A decoder over a copy of `trained`'s parameters (an nn::model of the
    // same spec and storage type, at any input shape and place).
    template <class Trained>
    explicit decoder(const Trained& trained, stream_ref s = current_stream()) : decoder(s)
    {
        load_parameters(trained);
    }

    // Copies `trained`'s parameters in, and starts every sequence over.
    template <class Trained>
    void load_parameters(const Trained& trained)
    {
        nn::copy_parameters(model_, trained);
        reset();
    }

    // Every sequence back to position 0 (their cached positions are hidden
    // from then on, and overwritten as the sequences grow again).
    void reset()
    {
        for (std::size_t b = 0; b < Batch; ++b) at_.data()[b] = 0;
        assign(positions_.view(), 0);
    }
    void reset(std::size_t sequence)
    {
        at_.data()[checked(sequence)] = 0;
        assign(positions_.view(), where(iota<Shape<Batch>, i32>() == static_cast<i32>(sequence), 0, positions_.view()));
    }

    // How many tokens sequence b holds: the position its next token takes.
    std::size_t position(std::size_t sequence) const { return static_cast<std::size_t>(at_.data()[checked(sequence)]); }

    // Appends tokens[b] to sequence b, for every b, and returns the logits
    // for the position after it, [Batch, Vocab] in the model's place (valid
    // until the next step). tokens: i32 [Batch] in any place, or a span of
    // Batch tokens in host memory.
    template <class Tokens>
        requires expression<std::decay_t<Tokens>>
    auto step(const Tokens& tokens)
    {
        const auto v = tenet::destination_view(tokens);
        using V = decltype(v);
        static_assert(std::is_same_v<typename V::shape, Shape<Batch>> &&
                          std::is_same_v<std::remove_cv_t<typename V::element_type>, i32> &&
                          index_map<typename V::layout>::contiguous,
                      "tenet: decoder::step: tokens must be contiguous i32 [Batch]");
        if constexpr (host_accessible_v<typename V::place>) check_tokens(std::span<const i32>(v.data(), Batch));
        copy_bytes<Place, typename V::place>(tokens_.data(), v.data(), sizeof(i32) * Batch, current_stream());
        return run();
    }

    auto step(std::span<const i32> tokens)
    {
        if (tokens.size() != Batch)
            throw error("tenet: decoder::step: " + std::to_string(tokens.size()) + " tokens for a batch of " +
                        std::to_string(Batch));
        check_tokens(tokens);
        copy_bytes<Place, Host>(tokens_.data(), tokens.data(), sizeof(i32) * Batch, current_stream());
        return run();
    }

    // Device: capture the step as a CUDA Graph and replay it (the default).
    void use_graphs(bool on) { graphs_.enable(on && !host_accessible_v<Place>); }
    bool uses_graphs() const { return graphs_.enabled(); }

    model_type& model() { return model_; }
    const model_type& model() const { return model_; }

private:
    std::size_t checked(std::size_t sequence) const
    {
        if (sequence >= Batch)
            throw error("tenet: decoder: sequence " + std::to_string(sequence) + " of a batch of " + std::to_string(Batch));
        return sequence;
    }

    void check_tokens(std::span<const i32> tokens) const
    {
        for (std::size_t b = 0; b < Batch; ++b)
            if (tokens[b] < 0 || static_cast<std::size_t>(tokens[b]) >= vocabulary)
                throw index_error("tenet: decoder::step: token " + std::to_string(tokens[b]) + " of sequence " +
                                  std::to_string(b) + " lies outside [0, " + std::to_string(vocabulary) + ")");
    }

    auto run()
    {
        for (std::size_t b = 0; b < Batch; ++b)
            if (static_cast<std::size_t>(at_.data()[b]) >= Context)
                throw error("tenet: decoder::step: sequence " + std::to_string(b) + " holds " + std::to_string(Context) +
                            " tokens, the decoder's context: reset it first");
        if constexpr (host_accessible_v<Place>) {
            host_threads_scope threads(tuner_.threads());
            forward();
        } else {
            graphs_.run(0, current_stream(), [&] { forward(); });
        }
        for (std::size_t b = 0; b < Batch; ++b) ++at_.data()[b];
        if constexpr (host_accessible_v<Place>) {
            tuner_.record(since_step_.seconds());
            since_step_.restart();
        }
        return make_view<logits_shape, Place>(std::as_const(model_).output().data());
    }

    void forward()
    {
        model_.forward_at(tokens_, positions_);
        assign(positions_.view(), positions_.view() + 1);
    }

    model_type model_;
    Tensor<i32, Shape<Batch, 1>, Place> tokens_;    // the step's tokens, where the model (and a graph) reads them
    Tensor<i32, Shape<Batch>, Place> positions_;    // ... and their positions, moved on by the step itself
    Tensor<i32, Shape<Batch>, Host> at_;            // the same positions, kept on the host to check
    train::thread_tuner tuner_{host_threads()};  // (host: the steps' thread count, measured)
    profile::host_timer since_step_;
    train::graph_cache<int> graphs_ = [] {
        train::graph_cache<int> g;
        g.enable(!host_accessible_v<Place>);
        return g;
    }();
};

}  // namespace tenet::infer
