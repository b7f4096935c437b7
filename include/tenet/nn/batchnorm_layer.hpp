// BatchNorm2d<Channels>: normalises each channel of NHWC images (the last
// axis) over the batch and the pixels, as PyTorch's nn.BatchNorm2d:
//   training    y = (x - mean) / sqrt(var + eps) * gamma + beta, with the
//               batch's mean and biased variance; the running statistics
//               move by momentum towards the batch's mean and unbiased
//               variance: running = (1 - momentum) running + momentum batch
//   evaluation  the same with the running statistics (model::eval())
// gamma and beta are parameters (1 and 0 at first); running_mean and
// running_var (0 and 1 at first) are buffers: saved in checkpoints with the
// parameters, never touched by an optimizer. Options as PyTorch's eps,
// momentum and affine:
//   nn::BatchNorm2d<64, nn::batchnorm_options{.eps = 1e-3f, .momentum = 0.01f}>
// A Checkpointed segment's recomputing forward leaves the running statistics
// alone (they move once per training step). Statistics and the backward
// compute in f32 (f64 for an f64 model); each is a column reduction over the
// [N H W, C] matrix.
// Padding: a forward told which samples are real (model::forward(x,
// valid_samples(v)); train::trainer always tells) takes the batch statistics
// over the real samples' pixels alone, and the backward gives padding
// samples no gradient, so a padded last batch trains as the smaller batch of
// its real samples would. A batch with at most one real value per channel
// leaves the running statistics where they are (PyTorch refuses it).
#pragma once

#include "../reduce/reduce.hpp"
#include "layer.hpp"

namespace tenet::nn {

struct batchnorm_options {
    float eps = 1e-5f;       // added to the variance
    float momentum = 0.1f;   // how far the running statistics move each training step
    bool affine = true;      // learnable gamma and beta
};

namespace detail {

template <std::size_t C, class S>
struct BatchNorm2d_takes_NHWC_images_Shape_N_H_W_Channels_not {
    static constexpr auto text()
    {
        return fixed_string("tenet: BatchNorm2d<") + decimal<C>() + fixed_string("> fed ") + shape_name<S>::text() +
               fixed_string(": it takes NHWC images, Shape<N, H, W, ") + decimal<C>() + fixed_string(">");
    }
};

template <std::size_t C, class S>
struct batch_norm_output {
    static_assert(diagnose<S::rank == 4 && last_extent<S> == C, BatchNorm2d_takes_NHWC_images_Shape_N_H_W_Channels_not<C, S>>::value);
    using type = S;
};

template <precision_policy P, class S, class Place, std::size_t C, batchnorm_options Options>
class batch_norm_layer {
    using storage = typename P::storage;
    using gradient = gradient_t<P>;
    using statistic = std::conditional_t<std::is_same_v<storage, f64>, f64, f32>;
    static constexpr std::size_t rows = S::numel / C;
    using matrix = Shape<rows, C>;
    using channels = Shape<C>;
    static constexpr bool affine = Options.affine;
    static_assert(rows > 1, "tenet: BatchNorm2d needs more than one value per channel (N H W > 1)");

public:
    using input_shape = S;
    using output_shape = S;
    static constexpr bool wants_preactivation_gradient = false;
    static constexpr std::size_t parameter_count = affine ? 2 * C : 0;
    static constexpr std::size_t parameter_numel = affine ? 2 * padded_numel<storage>(C) : 0;
    static constexpr std::size_t buffer_numel = 2 * padded_numel<f32>(C);
    // the mean and 1/stddev the forward used, and a padded batch's count of real rows
    static constexpr std::size_t activation_bytes = (2 * C + 1) * sizeof(statistic);
    static constexpr std::size_t activation_gradient_bytes = 0;
    static constexpr bool skips_null_gradients = true;
    static constexpr std::string_view kind = "BatchNorm2d";

    template <class Slice>
    explicit batch_norm_layer(Slice& parameters)
        : gamma_(take(parameters)),
          beta_(take(parameters)),
          running_mean_(parameters.template take_buffer<channels, Place>()),
          running_var_(parameters.template take_buffer<channels, Place>()),
          discarded_(keeps_gradients() || !P::trainable ? 0 : 2 * padded_numel<gradient>(C), current_stream())
    {
    }

    void initialize(std::uint64_t)
    {
        if constexpr (affine) {
            assign(gamma_.first, 1);
            assign(beta_.first, 0);
        }
        assign(running_mean_, 0);
        assign(running_var_, 1);
    }

    template <class X, class Y>
    void forward(const X& x, const Y& y, const step_info& step)
    {
        check_input_element<storage, X>();
        const auto xm = contiguous_as<matrix>(x);
        input_ = xm.data();
        batch_statistics_ = step.training;
        if (batch_statistics_ && step.valid_samples) {
            masked_statistics(contiguous_as<cube>(x), step);
        } else if (batch_statistics_) {
            mean_ = mean<0>(xm);
            rstd_ = mean<0>(square(xm - mean_));  // the biased variance, for now
            if (!step.recompute) {
                constexpr float m = Options.momentum;
                assign(running_mean_, (1 - m) * running_mean_ + m * mean_);
                assign(running_var_, (1 - m) * running_var_ + (m * rows / (rows - 1.0)) * rstd_);
            }
            rstd_ = rsqrt(rstd_ + Options.eps);
        } else {
            mean_ = running_mean_;
            rstd_ = rsqrt(running_var_ + Options.eps);
        }
        if constexpr (affine) assign(contiguous_as<matrix>(y), (xm - mean_) * (rstd_ * gamma_.first) + beta_.first);
        else assign(contiguous_as<matrix>(y), (xm - mean_) * rstd_);
    }

    template <class DY, class DX, class Prev>
    void backward(const DY& dy, const DX& dx, const step_info& step, Prev& prev)
    {
        if (step.valid_samples) return masked_backward(dy, dx, step, prev);
        const auto d = contiguous_as<matrix>(dy);
        const auto x_hat = (make_view<matrix, Place>(input_) - mean_) * rstd_;
        const auto dgamma = gamma_gradient(), dbeta = beta_gradient();
        assign(dbeta, sum<0>(d));
        assign(dgamma, sum<0>(d * x_hat));
        if constexpr (!is_no_input_gradient<DX>) {
            const auto scale = [&] {
                if constexpr (affine) return rstd_ * gamma_.first;
                else return as_node(rstd_);
            }();
            // with batch statistics, mean and variance depend on x too
            if (batch_statistics_)
                assign(contiguous_as<matrix>(dx), scale * (d - (dbeta + x_hat * dgamma) * (1.0 / rows)));
            else
                assign(contiguous_as<matrix>(dx), scale * d);
        }
    }

    template <class F>
    void for_each_parameter([[maybe_unused]] F&& f, [[maybe_unused]] const std::string& prefix)
    {
        if constexpr (affine) {
            f(prefix + "weight", gamma_.first, gamma_.second);
            f(prefix + "bias", beta_.first, beta_.second);
        }
    }

    // Evaluation mode as a per-channel affine y = x scale + shift (from the
    // running statistics): what inference forms fold into an epilogue.
    template <class Scale, class Shift>
    void inference_affine(const Scale& scale, const Shift& shift) const
    {
        if constexpr (affine) {
            assign(scale, rsqrt(running_var_ + Options.eps) * gamma_.first);
            assign(shift, beta_.first - running_mean_ * scale);
        } else {
            assign(scale, rsqrt(running_var_ + Options.eps));
            assign(shift, -running_mean_ * scale);
        }
    }

    template <class F>
    void for_each_buffer(F&& f, const std::string& prefix)
    {
        f(prefix + "running_mean", running_mean_);
        f(prefix + "running_var", running_var_);
    }

private:
    // The [N, H W, C] view of the input, and a sample's weight (1 real, 0
    // padding) broadcast over it.
    static constexpr std::size_t batch = S::extents[0];
    using cube = Shape<batch, rows / batch, C>;
    static auto sample_weights(const step_info& step)
    {
        return broadcast_to<cube>(make_view<Shape<batch, 1, 1>, Place>(step.valid_samples));
    }

    // The batch statistics over the real samples' rows (count_ of them).
    // Padding rows are selected away, not multiplied by 0: whatever they
    // hold (inf, NaN) cannot reach the statistics.
    template <class X3>
    void masked_statistics(const X3& x, const step_info& step)
    {
        const auto real = sample_weights(step) != 0;
        count_ = sum(cast<statistic>(make_view<Shape<batch>, Place>(step.valid_samples) != 0)) * static_cast<double>(rows / batch);
        mean_ = sum<0, 1>(where(real, x, 0)) / max(count_, 1);
        rstd_ = sum<0, 1>(where(real, square(x - mean_), 0)) / max(count_, 1);  // the biased variance, for now
        if (!step.recompute) {
            constexpr float m = Options.momentum;
            const auto moves = count_ > 1;  // an unbiased variance needs two values
            assign(running_mean_, where(moves, (1 - m) * running_mean_ + m * mean_, running_mean_));
            assign(running_var_,
                   where(moves, (1 - m) * running_var_ + m * rstd_ * count_ / max(count_ - 1, 1), running_var_));
        }
        rstd_ = rsqrt(rstd_ + Options.eps);
    }

    // The backward of a padded batch: the sums run over the real rows, and
    // padding rows get dx = 0.
    template <class DY, class DX, class Prev>
    void masked_backward(const DY& dy, const DX& dx, const step_info& step, Prev&)
    {
        const auto real = sample_weights(step) != 0;
        const auto d = where(real, contiguous_as<cube>(dy), 0);
        const auto x_hat = (make_view<cube, Place>(input_) - mean_) * rstd_;
        const auto dgamma = gamma_gradient(), dbeta = beta_gradient();
        assign(dbeta, sum<0, 1>(d));
        assign(dgamma, sum<0, 1>(d * x_hat));
        if constexpr (!is_no_input_gradient<DX>) {
            const auto scale = [&] {
                if constexpr (affine) return rstd_ * gamma_.first;
                else return as_node(rstd_);
            }();
            if (batch_statistics_)
                assign(contiguous_as<cube>(dx),
                       where(real, scale * (d - (dbeta + x_hat * dgamma) / max(count_, 1)), 0));
            else
                assign(contiguous_as<cube>(dx), scale * d);
        }
    }

    using views = decltype(std::declval<parameter_slice<storage, gradient>&>().template take<channels, Place>());
    using buffer_view = decltype(std::declval<parameter_slice<storage, gradient>&>().template take_buffer<channels, Place>());
    struct no_parameters {};
    using parameters = std::conditional_t<affine, views, no_parameters>;

    template <class Slice>
    static parameters take([[maybe_unused]] Slice& slice)
    {
        if constexpr (affine) return slice.template take<channels, Place>();
        else return {};
    }

    // Whether the parameters' gradients are kept: affine, and not inside nn::Frozen.
    bool keeps_gradients() const
    {
        if constexpr (affine) return gradient_wanted(gamma_.second);
        else return false;
    }

    // dgamma and dbeta (which dx needs): the gradients, or sums discarded.
    auto gamma_gradient() { return column_sums(0); }
    auto beta_gradient() { return column_sums(1); }
    auto column_sums(std::size_t which)
    {
        if constexpr (affine)
            if (keeps_gradients()) return which == 0 ? gamma_.second : beta_.second;
        return make_view<channels, Place>(discarded_.data() + which * padded_numel<gradient>(C));
    }

    parameters gamma_, beta_;
    buffer_view running_mean_, running_var_;
    Tensor<statistic, channels, Place> mean_, rstd_;
    Tensor<statistic, Shape<>, Place> count_;  // the real rows of a padded batch
    // dgamma and dbeta where no gradient is kept for them (without affine
    // parameters, or inside nn::Frozen); empty otherwise
    buffer<gradient, Place> discarded_;
    const storage* input_ = nullptr;
    bool batch_statistics_ = true;
};

}  // namespace detail

template <std::size_t Channels, batchnorm_options Options = batchnorm_options{}>
struct BatchNorm2d {
    template <class S>
    using output_shape = typename detail::batch_norm_output<Channels, S>::type;
    template <class S>
    static constexpr bool accepts = S::rank == 4 && last_extent<S> == Channels;
    template <precision_policy P, class S, class Place>
    using layer = detail::batch_norm_layer<P, S, Place, Channels, Options>;
};

}  // namespace tenet::nn
