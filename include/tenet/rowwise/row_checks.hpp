// Compile-time checks of a row-wise op's operands, each a tenet: diagnostic
// that names the op, the operand and the shapes or places involved, e.g.
//   tenet: cross_entropy_forward: labels must have shape Shape<32>, got Shape<16>
// and how operands are taken: destinations as writable views, inputs as
// expression nodes, a scale as a number or a rank-0 expression.
#pragma once

#include "../exec/assign.hpp"
#include "row_kernels.hpp"

#include <type_traits>
#include <utility>

namespace tenet {

// What a row-wise op writes: a tensor or a view of one.
template <class D>
concept row_destination = is_tensor<std::remove_cvref_t<D>>::value || is_tensor_view<std::remove_cvref_t<D>>::value;

// A loss scale or gradient factor: a number, or a rank-0 expression read on
// the device (e.g. a loss-scale tensor: CUDA-Graph capturable).
template <class S>
concept row_scale = scalar_value<std::remove_cvref_t<S>> || expression<std::remove_cvref_t<S>>;

namespace detail::rowwise {

// Names used in diagnostics: the ops and their operands.
enum class name {
    softmax, log_softmax, softmax_backward, log_softmax_backward, layernorm_forward, layernorm_backward,
    cross_entropy_forward, cross_entropy_backward, mse_forward, mse_backward, uncertainty_scores,
    x, y, dx, dy, mean, rstd, gamma, beta, dgamma, dbeta, loss, probs, logits, dlogits, labels, valid, scale,
    pred, target, dpred, scores
};

template <name N>
constexpr auto text_of()
{
    if constexpr (N == name::softmax) return fixed_string("softmax");
    else if constexpr (N == name::log_softmax) return fixed_string("log_softmax");
    else if constexpr (N == name::softmax_backward) return fixed_string("softmax_backward");
    else if constexpr (N == name::log_softmax_backward) return fixed_string("log_softmax_backward");
    else if constexpr (N == name::layernorm_forward) return fixed_string("layernorm_forward");
    else if constexpr (N == name::layernorm_backward) return fixed_string("layernorm_backward");
    else if constexpr (N == name::cross_entropy_forward) return fixed_string("cross_entropy_forward");
    else if constexpr (N == name::cross_entropy_backward) return fixed_string("cross_entropy_backward");
    else if constexpr (N == name::mse_forward) return fixed_string("mse_forward");
    else if constexpr (N == name::mse_backward) return fixed_string("mse_backward");
    else if constexpr (N == name::uncertainty_scores) return fixed_string("uncertainty_scores");
    else if constexpr (N == name::x) return fixed_string("x");
    else if constexpr (N == name::y) return fixed_string("y");
    else if constexpr (N == name::dx) return fixed_string("dx");
    else if constexpr (N == name::dy) return fixed_string("dy");
    else if constexpr (N == name::mean) return fixed_string("mean");
    else if constexpr (N == name::rstd) return fixed_string("rstd");
    else if constexpr (N == name::gamma) return fixed_string("gamma");
    else if constexpr (N == name::beta) return fixed_string("beta");
    else if constexpr (N == name::dgamma) return fixed_string("dgamma");
    else if constexpr (N == name::dbeta) return fixed_string("dbeta");
    else if constexpr (N == name::loss) return fixed_string("loss");
    else if constexpr (N == name::probs) return fixed_string("probs");
    else if constexpr (N == name::logits) return fixed_string("logits");
    else if constexpr (N == name::dlogits) return fixed_string("dlogits");
    else if constexpr (N == name::labels) return fixed_string("labels");
    else if constexpr (N == name::valid) return fixed_string("valid");
    else if constexpr (N == name::scale) return fixed_string("scale");
    else if constexpr (N == name::pred) return fixed_string("pred");
    else if constexpr (N == name::target) return fixed_string("target");
    else if constexpr (N == name::dpred) return fixed_string("dpred");
    else if constexpr (N == name::scores) return fixed_string("scores");
}

template <name Op, name Operand, class Want, class Got>
struct row_op_operand_must_have_shape_Want_not_Got {
    static constexpr auto text()
    {
        return fixed_string("tenet: ") + text_of<Op>() + fixed_string(": ") + text_of<Operand>() +
               fixed_string(" must have shape ") + shape_name<Want>::text() + fixed_string(", got ") +
               shape_name<Got>::text();
    }
};

// Operand (an expression node or a view) has exactly shape Want.
template <name Op, name Operand, class Want, class N>
constexpr bool shape_is()
{
    constexpr bool ok = std::is_same_v<typename N::shape, Want>;
    static_assert(diagnose<ok, row_op_operand_must_have_shape_Want_not_Got<Op, Operand, Want, typename N::shape>>::value);
    return ok;
}

template <name Op>
struct row_op_works_along_the_last_axis_and_needs_rank_1_or_more {
    static constexpr auto text()
    {
        return fixed_string("tenet: ") + text_of<Op>() +
               fixed_string(" works along the last axis: its input needs rank 1 or more, got Shape<>");
    }
};

template <name Op, class N>
constexpr bool has_rows()
{
    constexpr bool ok = N::shape::rank >= 1;
    static_assert(diagnose<ok, row_op_works_along_the_last_axis_and_needs_rank_1_or_more<Op>>::value);
    return ok;
}

template <name Op, class... Operands>
struct row_op_mixes_places {
    static constexpr auto text()
    {
        return fixed_string("tenet: ") + text_of<Op>() + fixed_string(" mixes places: ") + join_with_vs(Operands::text()...);
    }
};

// The place all operands agree on (void if they do not: a diagnostic).
template <name Op, class... N>
constexpr bool places_agree()
{
    constexpr bool ok = !std::is_void_v<combined_places_t<typename N::place...>>;
    static_assert(diagnose<ok, row_op_mixes_places<Op, internal::located_t<N>...>>::value);
    return ok;
}

template <name Op, name Operand>
struct row_op_operand_must_be_floating_point {
    static constexpr auto text()
    {
        return fixed_string("tenet: ") + text_of<Op>() + fixed_string(": ") + text_of<Operand>() +
               fixed_string(" must be floating-point");
    }
};

// A destination view: writable, one element per location, and on the device
// only when nvcc compiles the call.
template <name Op, name Operand, class View>
constexpr bool writable()
{
    using element = std::remove_pointer_t<decltype(std::declval<View>().data())>;
    static_assert(!std::is_const_v<element>, "tenet: cannot write a row-wise op's result to a read-only view");
    static_assert(internal::writes_each_element_once<View>,
                  "tenet: cannot write a row-wise op's result to a broadcast view: several of its elements share one "
                  "memory location");
    static_assert(host_accessible_v<typename View::place> || TENET_CUDA_COMPILER,
                  "tenet: a row-wise op on Device tensors needs a CUDA compiler: compile this file with nvcc (as a "
                  ".cu file or LANGUAGE CUDA), or use Host tensors");
    return !std::is_const_v<element> && internal::writes_each_element_once<View>;
}

// ... and it holds floating-point values (outputs of the ops are real numbers).
template <name Op, name Operand, class View>
constexpr bool floating_destination()
{
    constexpr bool ok = is_floating_v<std::remove_const_t<typename View::element_type>>;
    static_assert(diagnose<ok, row_op_operand_must_be_floating_point<Op, Operand>>::value);
    return ok && writable<Op, Operand, View>();
}

template <name Op>
struct row_op_labels_must_be_integers_i32 {
    static constexpr auto text()
    {
        return fixed_string("tenet: ") + text_of<Op>() + fixed_string(": labels must be integers (i32)");
    }
};

template <name Op, class N>
constexpr bool integer_labels()
{
    constexpr bool ok = std::is_same_v<typename N::value_type, i32>;
    static_assert(diagnose<ok, row_op_labels_must_be_integers_i32<Op>>::value);
    return ok;
}

// A scale operand as a rank-0 node (a number becomes an f32 scalar).
template <class S>
auto scale_node(S&& s)
{
    if constexpr (scalar_value<std::remove_cvref_t<S>>) return scalar_expr<f32>{internal::scalar_as<f32>(s)};
    else return as_node(std::forward<S>(s));
}

// Every row valid (the overloads without a mask).
template <class S>
scalar_expr<bool, rows_shape_t<S>> all_rows_valid()
{
    return {true};
}

// Throws aliasing_error when a destination is read through another layout by
// any source, or two destinations share memory.
template <class... Dsts, class... Srcs>
void check_row_operands(const value_pack<Dsts...>& dsts, const Srcs&... srcs)
{
    const auto against_sources = [&](const auto& dst) {
        internal::require_memory(dst);
        (internal::check_operands(dst, srcs), ...);
    };
    [&]<std::size_t... I>(std::index_sequence<I...>) {
        (against_sources(get<I>(dsts)), ...);
        internal::check_disjoint(dsts, std::index_sequence<I...>{});
    }(std::index_sequence_for<Dsts...>{});
}

}  // namespace detail::rowwise
}  // namespace tenet
