// The loss protocol: what train::trainer minimises, and the losses tenet has.
//
// A loss *spec* is what users pass to a trainer (softmax_cross_entropy{},
// mean_squared_error{}, elementwise_loss{huber{1.0f}}); it is a copyable
// type with
//   bound<Policy, OutputShape, Place>  the loss for one model's output,
//                                      constructible from the spec; it has
//     target_type                      the tensor a batch brings as targets
//                                      (class labels, values, ...)
//     forward(loss, pred, target, valid)  loss (f32, rank 0) = the mean over
//                                      the rows whose valid entry is 1; may
//                                      keep what backward needs
//     backward(dpred, pred, target, valid, scale)  dpred = scale * the
//                                      loss's gradient; exactly 0 on padding
//                                      rows, whatever they hold
//     check_batch(target, valid)       host operands: throws (before
//                                      anything changes) on a bad batch
//   classifies                         (optional, true) targets are class
//                                      labels: trainer::evaluate counts
//                                      correct argmax predictions
// pred has the model's output shape [rows..., N]; valid has its rows'
// shape [rows...]. A spec that cannot train a model with that output is a
// tenet: static_assert when the trainer instantiates bound.
//
// elementwise_loss<F> turns a user's functor f(prediction, target) -- an
// elementwise expression of two expressions, built from tenet's operators
// and tenet::map functors with derivatives -- into a loss: its mean over the
// valid rows' elements, differentiated by autodiff (one fused kernel).
#pragma once

#include "../autodiff/gradients.hpp"
#include "../nn/layer.hpp"
#include "../reduce/reduce.hpp"
#include "../rowwise/cross_entropy.hpp"
#include "../rowwise/mse.hpp"

#include <concepts>
#include <string>
#include <type_traits>

namespace tenet::train {

// Host check of a row mask: every entry 0 (padding) or 1 (a real row).
template <class Valid>
    requires expression<Valid>
void check_row_mask(const Valid& valid)
{
    using R = typename Valid::shape;
    Tensor<f64, R, Host> mask;
    mask = cast<f64>(valid);
    for (std::size_t r = 0; r < R::numel; ++r)
        if (mask.data()[r] != 0.0 && mask.data()[r] != 1.0)
            throw error("tenet: valid[" + std::to_string(r) + "] is neither 0 nor 1 (1: a real row, 0: padding)");
}

// The row mask spread over each row's N entries (a bool per element).
template <shape_type Out, class Valid>
auto row_mask(const Valid& valid)
{
    return broadcast_to<Out>(reshape<nn::with_last_extent_t<Out, 1>>(valid)) != 0;
}

// How many rows count, as a rank-0 f32 expression (at least 1: no valid row
// gives a mean of 0, not NaN).
template <class Valid>
auto valid_rows(const Valid& valid)
{
    return max(sum(cast<f32>(valid != 0)), 1.0f);
}

namespace detail {

template <class F, class X>
concept returns_expression = expression<std::decay_t<std::invoke_result_t<const F&, const X&, const X&>>>;

template <class Out, class Target>
struct target_shape_differs {
    static constexpr auto text()
    {
        using tenet::shape_name;
        return fixed_string("tenet: elementwise_loss: targets of shape ") + shape_name<Target>::text() +
               fixed_string(" for an output of shape ") + shape_name<Out>::text() +
               fixed_string(" (they must match: they would broadcast)");
    }
};

template <class T>
using shape_of = typename T::shape;

// True when the target has the output's shape; else one tenet: error.
template <class Out, class Target>
constexpr bool target_fits()
{
    constexpr bool fits = std::is_same_v<typename Target::shape, Out>;
    static_assert(tenet::diagnose<fits, target_shape_differs<Out, shape_of<Target>>>::value);
    return fits;
}

}  // namespace detail

// Softmax cross-entropy with integer class labels (i32 [rows...]); the
// trainer's default. Keeps the probabilities for the backward.
// label_smoothing: PyTorch's CrossEntropyLoss(label_smoothing=e), e in [0, 1]
// (the target is (1 - e) onehot + e / classes).
struct softmax_cross_entropy {
    static constexpr bool classifies = true;
    float label_smoothing = 0.0f;

    template <precision_policy P, shape_type Out, memory_place Place>
    class bound {
        // Softmax cross-entropy over one class is 0 whatever the model does.
        static_assert(Out::rank >= 1 && nn::last_extent<Out> >= 2,
                      "tenet: softmax_cross_entropy needs a model with at least 2 outputs (classes) per row; "
                      "train a one-output model with train::mean_squared_error or an elementwise_loss");

    public:
        using target_type = Tensor<i32, nn::rows_shape_t<Out>, Place>;

        explicit bound(const softmax_cross_entropy& spec) : smoothing_{spec.label_smoothing}
        {
            if (!(smoothing_.epsilon >= 0.0f && smoothing_.epsilon <= 1.0f))
                throw error("tenet: softmax_cross_entropy: label_smoothing " + std::to_string(smoothing_.epsilon) +
                            " must lie in [0, 1]");
        }

        template <class Loss, class Pred, class Target, class Valid>
        void forward(Loss& loss, const Pred& pred, const Target& target, const Valid& valid)
        {
            cross_entropy_forward(loss, probs_, pred, target, valid, smoothing_);
        }

        template <class Dpred, class Pred, class Target, class Valid, class Scale>
        void backward(Dpred& dpred, const Pred&, const Target& target, const Valid& valid, const Scale& scale)
        {
            cross_entropy_backward(dpred, probs_, target, valid, scale, smoothing_);
        }

        template <class Target, class Valid>
        void check_batch(const Target& target, const Valid& valid) const
        {
            check_cross_entropy_batch<Out>(target, valid);
        }

        // softmax of the last forward's logits
        const auto& probabilities() const { return probs_; }

    private:
        tenet::label_smoothing smoothing_;
        Tensor<typename P::accumulate, Out, Place> probs_;  // f32 for 16-bit policies
    };
};

// Mean squared error against targets of the output's shape: the mean of
// (pred - target)^2 over the valid rows' elements (rowwise/mse.hpp's kernels).
struct mean_squared_error {
    template <precision_policy P, shape_type Out, memory_place Place>
    class bound {
        static_assert(Out::rank >= 1, "tenet: mean_squared_error needs a model output with rows ([rows..., N])");

    public:
        using target_type = Tensor<typename P::storage, Out, Place>;

        explicit bound(const mean_squared_error&) {}

        template <class Loss, class Pred, class Target, class Valid>
        void forward(Loss& loss, const Pred& pred, const Target& target, const Valid& valid)
        {
            mse_forward(loss, pred, target, valid);
        }

        template <class Dpred, class Pred, class Target, class Valid, class Scale>
        void backward(Dpred& dpred, const Pred& pred, const Target& target, const Valid& valid, const Scale& scale)
        {
            mse_backward(dpred, pred, target, valid, scale);
        }

        template <class Target, class Valid>
        void check_batch(const Target&, const Valid& valid) const
        {
            check_row_mask(valid);
        }
    };
};

// A user's loss: f(prediction, target) -> an elementwise expression of their
// shape (per-element losses, computed in f32). The loss is its mean over the
// valid rows' elements; its gradient comes from autodiff, so f may use any
// differentiable operator, and tenet::map functors that carry a derivative.
//
//   struct huber {
//       float delta;
//       template <class P, class T>
//       auto operator()(const P& p, const T& t) const
//       {
//           const auto d = abs(p - t);
//           return where(d <= delta, 0.5f * d * d, delta * (d - 0.5f * delta));
//       }
//   };
//   train::trainer t(net, train::adamw{}, train::constant_lr{1e-3f}, {}, train::elementwise_loss{huber{1.0f}});
template <class F>
struct elementwise_loss {
    F f{};

    template <precision_policy P, shape_type Out, memory_place Place>
    class bound {
        static_assert(Out::rank >= 1, "tenet: elementwise_loss needs a model output with rows ([rows..., N])");
        using prediction = Tensor<f32, Out, Place>;
        static constexpr bool callable = std::is_invocable_v<const F&, const prediction&, const prediction&>;
        static_assert(callable, "tenet: elementwise_loss<F>: F must be callable as f(prediction, target) with two "
                                "expressions of the model's output shape");
        static_assert(!callable || detail::returns_expression<F, prediction>,
                      "tenet: elementwise_loss<F>: f(prediction, target) must return a tenet expression "
                      "(the per-element loss)");
        static constexpr bool usable = callable && detail::returns_expression<F, prediction>;  // else reported above
        static constexpr float elements_per_row = static_cast<float>(nn::last_extent<Out>);

    public:
        using target_type = Tensor<typename P::storage, Out, Place>;

        explicit bound(const elementwise_loss& spec) : f_(spec.f) {}

        template <class Loss, class Pred, class Target, class Valid>
        void forward(Loss& loss, const Pred& pred, const Target& target, const Valid& valid)
        {
            // padding rows may hold anything (NaN included): where() drops them
            if constexpr (usable && detail::target_fits<Out, Target>())
                loss = sum(where(row_mask<Out>(valid), f_(cast<f32>(pred), cast<f32>(target)), 0.0f)) /
                       (valid_rows(valid) * elements_per_row);
        }

        template <class Dpred, class Pred, class Target, class Valid, class Scale>
        void backward(Dpred& dpred, const Pred& pred, const Target& target, const Valid& valid, const Scale& scale)
        {
            if constexpr (usable && detail::target_fits<Out, Target>()) {
                const auto upstream = scale / (valid_rows(valid) * elements_per_row);
                dpred = where(row_mask<Out>(valid),
                              gradient<0>(f_(cast<f32>(var<0>(pred)), cast<f32>(target)), upstream), 0.0f);
            }
        }

        template <class Target, class Valid>
        void check_batch(const Target&, const Valid& valid) const
        {
            check_row_mask(valid);
        }

    private:
        F f_;
    };
};

template <class F>
elementwise_loss(F) -> elementwise_loss<F>;

namespace detail {

template <class B, class Out, class Place>
concept loss_forward = requires(B& b, Tensor<f32, Shape<>, Place>& loss, const Tensor<f32, Out, Place>& pred,
                                const typename B::target_type& target,
                                const Tensor<i32, nn::rows_shape_t<Out>, Place>& valid) {
    b.forward(loss, pred, target, valid);
};

template <class B, class Out, class Place>
concept loss_backward = requires(B& b, Tensor<f32, Out, Place>& dpred, const Tensor<f32, Out, Place>& pred,
                                 const typename B::target_type& target,
                                 const Tensor<i32, nn::rows_shape_t<Out>, Place>& valid) {
    b.backward(dpred, pred, target, valid, 1.0f);
};

template <class B, class Out, class Place>
concept loss_batch_check = requires(const B& b, const typename B::target_type& target,
                                    const Tensor<i32, nn::rows_shape_t<Out>, Place>& valid) {
    b.check_batch(target, valid);
};

template <class L, class P, class Out, class Place>
using bound_loss_t = typename L::template bound<P, Out, Place>;

// One tenet: line naming what a loss spec misses (returns true: nothing more
// is reported at the caller).
template <class L, class P, class Out, class Place>
constexpr bool check_loss()
{
    constexpr bool has_bound = requires { typename bound_loss_t<L, P, Out, Place>; };
    static_assert(has_bound, "tenet: loss: needs template <precision_policy P, shape_type Out, memory_place Place> "
                             "class bound (the loss for one model's output)");
    if constexpr (has_bound) {
        using B = bound_loss_t<L, P, Out, Place>;
        static_assert(std::copy_constructible<L>, "tenet: loss: the spec must be copyable");
        static_assert(std::constructible_from<B, const L&>, "tenet: loss: bound needs a constructor taking the spec");
        constexpr bool targets = requires { typename B::target_type; };
        static_assert(targets, "tenet: loss: bound needs target_type (the tensor a batch brings as targets)");
        if constexpr (targets) {
            static_assert(loss_forward<B, Out, Place>,
                          "tenet: loss: bound needs forward(loss, pred, target, valid) writing the rank-0 mean loss");
            static_assert(loss_backward<B, Out, Place>,
                          "tenet: loss: bound needs backward(dpred, pred, target, valid, scale)");
            static_assert(loss_batch_check<B, Out, Place>,
                          "tenet: loss: bound needs check_batch(target, valid) (host operands; throws on a bad batch)");
        }
    }
    return true;
}

}  // namespace detail

// L is a loss spec that trains a model of policy P whose output has shape
// Out in Place (its bound has the members above).
template <class L, class P, class Out, class Place>
concept loss = std::copy_constructible<L> && requires { typename detail::bound_loss_t<L, P, Out, Place>; } &&
               std::constructible_from<detail::bound_loss_t<L, P, Out, Place>, const L&> &&
               requires { typename detail::bound_loss_t<L, P, Out, Place>::target_type; } &&
               detail::loss_forward<detail::bound_loss_t<L, P, Out, Place>, Out, Place> &&
               detail::loss_backward<detail::bound_loss_t<L, P, Out, Place>, Out, Place> &&
               detail::loss_batch_check<detail::bound_loss_t<L, P, Out, Place>, Out, Place>;

template <class L>
inline constexpr bool classifies = [] {
    if constexpr (requires { L::classifies; }) return bool(L::classifies);
    else return false;
}();

}  // namespace tenet::train
