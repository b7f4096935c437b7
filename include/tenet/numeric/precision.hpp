// Precision policies: one compile-time type that says what a model stores,
// computes in, accumulates in and keeps as master weights. A model written
// once runs in another precision by changing this one type.
#pragma once

#include "traits.hpp"

#include <concepts>
#include <type_traits>

namespace tenet {

enum class loss_scaling { none, dynamic };

// How matrix products of f32 storage multiply: standard f32, or TF32 tensor
// cores on the device (10-bit significands in the products, f32 sums) when
// a policy asks for it. Host products are always standard f32.
enum class matmul_math { standard, tf32 };

namespace detail::numeric {

// True when every finite value of Narrow is a value of Wide (for floating
// types: at least the significand bits and the exponent range).
template <class Wide, class Narrow>
inline constexpr bool holds_all_values_of =
    (is_floating_v<Wide> && is_floating_v<Narrow> && numeric_traits<Wide>::digits >= numeric_traits<Narrow>::digits &&
     numeric_traits<Wide>::max_exponent >= numeric_traits<Narrow>::max_exponent) ||
    (is_integer_v<Wide> && is_integer_v<Narrow> && numeric_traits<Wide>::bits >= numeric_traits<Narrow>::bits);

}  // namespace detail::numeric

// A precision for training: gradients flow, so storage, compute, accumulation
// and master weights are floating-point.
template <class Storage, class Compute, class Accumulate, class Master, loss_scaling Scaling = loss_scaling::none,
          matmul_math Math = matmul_math::standard>
struct training_precision {
    static_assert(element<Storage> && element<Compute> && element<Accumulate> && element<Master>,
                  "tenet: training_precision: every type must be a tenet element type "
                  "(f32, f64, f16, bf16, f8e4m3, f8e5m2, i8, i32, bool)");
    static_assert(is_floating_v<Compute>,
                  "tenet: training_precision: the compute type must be floating-point; integer compute "
                  "cannot carry gradients (train in floating point, then quantize with inference_precision)");
    static_assert(is_floating_v<Storage>,
                  "tenet: training_precision: the storage type must be floating-point; integer storage is for "
                  "inference_precision");
    // Each check below assumes the ones above passed: one error per mistake.
    static_assert(!is_floating_v<Compute> || detail::numeric::holds_all_values_of<Accumulate, Compute>,
                  "tenet: precision policy: the accumulate type is narrower than the compute type "
                  "(it must hold every compute value: as many significand bits and as much range)");
    static_assert(!is_floating_v<Storage> || detail::numeric::holds_all_values_of<Master, Storage>,
                  "tenet: training_precision: the master-weight type is narrower than the storage type");
    static_assert(Math == matmul_math::standard || std::is_same_v<Storage, f32>,
                  "tenet: precision policy: matmul_math::tf32 applies to f32 storage only");

    using storage = Storage;
    using compute = Compute;
    using accumulate = Accumulate;
    using master = Master;
    static constexpr bool trainable = true;
    static constexpr bool dynamic_loss_scaling = Scaling == loss_scaling::dynamic;
    static constexpr matmul_math math = Math;
};

// A precision for inference only. Integer storage (quantized models) computes
// elementwise in floating point and accumulates products in an integer at
// least 32 bits wide (i8 x i8 products summed exactly).
template <class Storage, class Compute, class Accumulate, matmul_math Math = matmul_math::standard>
struct inference_precision {
    static_assert(element<Storage> && element<Compute> && element<Accumulate>,
                  "tenet: inference_precision: every type must be a tenet element type "
                  "(f32, f64, f16, bf16, f8e4m3, f8e5m2, i8, i32, bool)");
    static_assert(is_integer_v<Storage> || detail::numeric::holds_all_values_of<Accumulate, Compute>,
                  "tenet: precision policy: the accumulate type is narrower than the compute type "
                  "(it must hold every compute value: as many significand bits and as much range)");
    static_assert(!is_integer_v<Storage> || (is_integer_v<Accumulate> && numeric_traits<Accumulate>::bits >= 32),
                  "tenet: inference_precision: integer storage needs an integer accumulate type of at least "
                  "32 bits (i32)");
    static_assert(Math == matmul_math::standard || std::is_same_v<Storage, f32>,
                  "tenet: precision policy: matmul_math::tf32 applies to f32 storage only");

    using storage = Storage;
    using compute = Compute;
    using accumulate = Accumulate;
    static constexpr bool trainable = false;
    static constexpr bool dynamic_loss_scaling = false;
    static constexpr matmul_math math = Math;
};

template <class P>
concept precision_policy = requires {
    typename P::storage;
    typename P::compute;
    typename P::accumulate;
    { P::trainable } -> std::convertible_to<bool>;
    { P::dynamic_loss_scaling } -> std::convertible_to<bool>;
};

template <class P>
concept training_policy = precision_policy<P> && P::trainable && requires { typename P::master; };

using fp32 = training_precision<f32, f32, f32, f32>;
using fp32_tf32 = training_precision<f32, f32, f32, f32, loss_scaling::none, matmul_math::tf32>;
using bf16_mixed = training_precision<bf16, f32, f32, f32>;
using fp16_mixed = training_precision<f16, f32, f32, f32, loss_scaling::dynamic>;
using int8_inference = inference_precision<i8, f32, i32>;

}  // namespace tenet
