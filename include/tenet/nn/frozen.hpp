// Frozen<L>: the layer L with its parameters fixed, decided at compile time
// (fine-tuning a pretrained backbone: Sequential<Frozen<backbone>, head>).
//
// - Its parameters live in the model's frozen block, after the trainable
//   ones: no gradient buffer shadows them and no optimizer keeps master
//   weights or state for them (optimizer::numel is Model::trainable_numel).
// - They load, save and copy under L's names (safetensors, checkpoints,
//   for_each_parameter), drawn from the same random streams as L's, so a
//   Frozen<L> starts from the values L would.
// - A frozen prefix of a Sequential (every layer before the first trainable
//   one trains nothing) is skipped by the backward entirely: no weight or
//   input gradient is computed for it.
// - A Frozen layer after a trainable one must pass the input gradient on:
//   L's backward runs with null parameter gradient views, and computes the
//   input gradient alone (no weight-gradient GEMM; the norm layers, whose
//   dx needs their parameters' column sums anyway, write those to a
//   [Channels] scratch of their own). A user's layer that does not declare
//   skips_null_gradients (nn/layer.hpp) gets a scratch for its gradients
//   instead, thrown away: its weight-gradient work is still spent.
// Unfreezing at run time without changing the type: a parameter group with
// lr_scale 0 (train/parameter_groups.hpp), which still computes gradients.
#pragma once

#include "../memory/buffer.hpp"
#include "layer.hpp"
#include "sequential.hpp"

#include <string>

namespace tenet::nn {

namespace detail {

// The slice a Frozen layer hands its inner layer: parameters from the frozen
// block, gradients into `scratch` (null: none), everything else as given.
template <class Slice, class Gradient>
class frozen_slice {
public:
    frozen_slice(Slice& slice, Gradient* scratch) : slice_(slice), scratch_(scratch) {}

    template <class S, class Place>
    auto take()
    {
        auto views = slice_.template take_frozen<S, Place>(scratch_);
        if (scratch_ != nullptr) scratch_ += padded_numel<std::remove_pointer_t<decltype(views.first.data())>>(S::numel);
        return views;
    }
    template <class S, class Place>
    auto take_buffer()
    {
        return slice_.template take_buffer<S, Place>();
    }
    std::uint64_t next_stream() { return slice_.next_stream(); }
    std::byte* start_keeping() { return slice_.start_keeping(); }
    std::size_t stop_keeping() { return slice_.stop_keeping(); }
    std::byte* keep(std::size_t bytes) { return slice_.keep(bytes); }
    template <class S, class Place, class G>
    auto take_frozen(G* gradient)  // (a Frozen inside a Frozen)
    {
        return slice_.template take_frozen<S, Place>(gradient);
    }
    bool trainable_taken() const { return slice_.trainable_taken(); }
    bool has_gradients() const { return false; }

private:
    Slice& slice_;
    Gradient* scratch_;
};

template <precision_policy P, class In, class Place, class L>
class frozen_layer {
    using inner_t = typename L::template layer<P, In, Place>;
    using gradient = gradient_t<P>;

public:
    using input_shape = In;
    using output_shape = typename L::template output_shape<In>;
    static constexpr bool wants_preactivation_gradient = false;
    static constexpr std::size_t parameter_count = inner_t::parameter_count;
    static constexpr std::size_t frozen_count = inner_t::parameter_count;
    static constexpr std::size_t parameter_numel = 0;  // none trainable
    static constexpr std::size_t frozen_numel = inner_t::parameter_numel + frozen_numel_v<inner_t>;
    static constexpr std::size_t buffer_numel = buffer_numel_v<inner_t>;
    static constexpr std::size_t activation_bytes = inner_t::activation_bytes;
    static constexpr std::size_t activation_gradient_bytes = inner_t::activation_gradient_bytes;
    static constexpr std::size_t recompute_bytes = recompute_bytes_v<inner_t>;
    static constexpr std::size_t offloaded_bytes = offloaded_bytes_v<inner_t>;
    static constexpr std::size_t kept_bytes = kept_bytes_of<inner_t>();
    static constexpr std::size_t resident_activation_bytes = resident_activation_bytes_of<inner_t>();
    static constexpr bool skips_null_gradients = true;  // (it takes no trainable parameter)
    // (when it runs the backward: after a trainable layer, for the input gradient alone)
    static constexpr std::string_view kind = "Frozen";
    static constexpr layer_cost cost = cost_of<inner_t, typename P::storage, In, output_shape>().input_gradient_only();

    // A scratch for the parameter gradients only of a layer that cannot
    // skip them, when it may be asked for its input gradient.
    template <class Slice>
    explicit frozen_layer(Slice& slice)
        : passes_gradient_(P::trainable && slice.trainable_taken()),
          scratch_(passes_gradient_ && !skips_null_gradients_v<inner_t> ? inner_t::parameter_numel : 0, current_stream()),
          inner_(bind(slice))
    {
    }

    void initialize(std::uint64_t seed) { inner_.initialize(seed); }

    template <class X, class Y>
    void forward(const X& x, const Y& y, const step_info& step)
    {
        inner_.forward(x, y, step);
    }

    // Nothing to do unless the input gradient is wanted; then L's backward
    // computes it (its parameter gradients land in the scratch).
    template <class DY, class DX, class Prev>
    void backward(const DY& dy, const DX& dx, const step_info& step, Prev& prev)
    {
        if constexpr (!is_no_input_gradient<DX>) {
            if (!passes_gradient_)
                throw error("tenet: Frozen: asked for its input gradient, but it was built with no trainable layer "
                            "before it (a frozen prefix, whose backward never runs): a container layer passed a "
                            "gradient through a prefix that trains nothing");
            inner_.backward(dy, dx, step, prev);
        }
    }

    template <class F>
    void for_each_parameter(F&& f, const std::string& prefix)
    {
        inner_.for_each_parameter(f, prefix);
    }

    template <class F>
    void for_each_buffer(F&& f, const std::string& prefix)
    {
        if constexpr (buffer_numel > 0) inner_.for_each_buffer(f, prefix);
    }

    template <class F>
    void for_each_layer(F&& f)
    {
        if constexpr (requires { inner_.for_each_layer(f); }) inner_.for_each_layer(f);
        else f(inner_);
    }

private:
    template <class Slice>
    inner_t bind(Slice& slice)
    {
        frozen_slice<Slice, gradient> frozen(slice, scratch_.size() > 0 ? scratch_.data() : nullptr);
        return inner_t(frozen);
    }

    bool passes_gradient_;  // a trainable layer was bound before it (before an enclosing Frozen, too)
    buffer<gradient, Place> scratch_;
    inner_t inner_;
};

}  // namespace detail

template <class L>
struct Frozen {
    template <class In>
    using output_shape = typename L::template output_shape<In>;
    template <class In>
    static constexpr bool accepts = detail::accepts_input<L, In>();
    template <class P>
    using input_element = input_element_t<L, P>;  // (a frozen Embedding takes tokens)
    static constexpr std::size_t input_limit = input_limit_of<L>();

    template <precision_policy P, class In, class Place>
    using layer = detail::frozen_layer<P, In, Place, L>;
};

}  // namespace tenet::nn
