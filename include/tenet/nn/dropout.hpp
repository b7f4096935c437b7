// Dropout<std::ratio<1, 10>>: in training, zeroes each element with
// probability p and scales the rest by 1/(1-p); in evaluation, the identity.
// The mask is never stored: it is a pure function of (model seed, layer,
// step, element) through Philox, so the backward regenerates it. The step is
// read from the model's step counter in its place when the kernel runs, so
// each replay of a captured training step draws a new mask -- the one an
// eager step with that number draws.
#pragma once

#include "../expr/random.hpp"
#include "layer.hpp"

#include <ratio>

namespace tenet::nn {
namespace detail {

template <precision_policy P, class S, class Place, class Ratio>
class dropout_layer {
    using storage = typename P::storage;
    static constexpr double p = static_cast<double>(Ratio::num) / static_cast<double>(Ratio::den);
    static_assert(p >= 0 && p < 1, "tenet: Dropout<p>: p must be in [0, 1)");
    static constexpr f32 keep = static_cast<f32>(1.0 - p);
    static constexpr f32 scale = static_cast<f32>(1.0 / (1.0 - p));

public:
    using input_shape = S;
    using output_shape = S;
    static constexpr std::string_view kind = "Dropout";
    static constexpr bool wants_preactivation_gradient = false;
    static constexpr std::size_t parameter_count = 0;
    static constexpr std::size_t parameter_numel = 0;
    static constexpr std::size_t activation_bytes = 0;
    static constexpr std::size_t activation_gradient_bytes = 0;

    template <class Slice>
    explicit dropout_layer(Slice& parameters) : stream_(parameters.next_stream())
    {
    }
    void initialize(std::uint64_t) {}

    template <class X, class Y>
    void forward(const X& x, const Y& y, const step_info& step)
    {
        check_input_element<storage, X>();
        apply(contiguous_as<S>(x), contiguous_as<S>(y), step);
    }

    template <class DY, class DX, class Prev>
    void backward(const DY& dy, const DX& dx, const step_info& step, Prev&)
    {
        if constexpr (!is_no_input_gradient<DX>) apply(contiguous_as<S>(dy), contiguous_as<S>(dx), step);
    }

    template <class F>
    void for_each_parameter(F&&, const std::string&)
    {
    }

private:
    // out = in where kept, scaled; the mask of the step's number.
    template <class In, class Out>
    void apply(const In& in, const Out& out, const step_info& step) const
    {
        if (!step.training)
            assign(out, in);
        else if (step.step_counter)
            assign(out, where(bernoulli<S>(keep, step.seed, make_view<Shape<>, Place>(step.step_counter),
                                           stream_ << 40),
                              in * scale, 0));
        else
            assign(out, where(bernoulli<S>(keep, step.seed, (stream_ << 40) ^ step.step), in * scale, 0));
    }

    std::uint64_t stream_;
};

}  // namespace detail

template <class Ratio>
struct Dropout {
    template <class S>
    using output_shape = S;
    template <precision_policy P, class S, class Place>
    using layer = detail::dropout_layer<P, S, Place, Ratio>;
};

}  // namespace tenet::nn
