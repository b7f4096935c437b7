// Writing a matrix product into a destination, with an optional epilogue:
//   dst = act(a b + bias)      act: none, relu, gelu, gelu_tanh; bias: any
//                              expression of dst's shape, or none
//
//   device  one cublasLtMatmul with the matching epilogue (BIAS, RELU_BIAS,
//           GELU_BIAS, RELU, GELU) when the destination is row-major in a
//           type cuBLASLt writes and the bias is a contiguous vector along
//           the last axis (b of shape [n], broadcast over rows). The erf
//           GELU has no epilogue (cuBLASLt's GELU is the tanh form): it runs
//           as below.
//   else    the GEMM, then one fused elementwise pass act(product + bias)
//           into the destination. The GEMM writes the destination itself
//           when it can and the pass is then in place; otherwise (16-bit
//           destination with a pass to follow, another layout or type, or
//           an operand or the bias overlapping the destination) it writes a
//           scratch tensor of the accumulate type, so the result is rounded
//           once.
//
// Aliasing: the result is what a fresh destination would get, or an
// aliasing_error. A bias that IS the destination (y = y + matmul(a, b),
// y += matmul(a, b)) accumulates: on the device one cuBLASLt call with C = D
// and beta = 1 (its activation epilogue too); on the host the product goes
// to scratch and one pass adds it, bit-identical to a fresh destination. A
// bias reading the destination through another layout throws before the
// destination is written.
#pragma once

#include "activation_kind.hpp"
#include "gemm.hpp"

#include <type_traits>
#include <utility>

namespace tenet::linalg::detail {

struct no_bias {};

template <class Bias>
inline constexpr bool has_bias = !std::is_same_v<Bias, no_bias>;

// act(product + bias): the pass after the GEMM.
template <linalg::activation Act, class P, class Bias>
auto epilogue_expression(const P& product, const Bias& bias)
{
    if constexpr (has_bias<Bias>) return linalg::detail::activate<Act>(product + bias);
    else return linalg::detail::activate<Act>(product);
}

// Is the bias a vector along the last axis, broadcast over the others and
// stored contiguously in a type cuBLASLt reads?
template <class Bias>
constexpr bool bias_vector()
{
    if constexpr (is_tensor_view<Bias>::value) {
        using L = typename Bias::layout;
        if (!gemm_element<typename Bias::element_type>) return false;
        for (std::size_t d = 0; d + 1 < L::rank; ++d)
            if (L::extents[d] > 1 && L::strides[d] != 0) return false;
        return L::extents[L::rank - 1] == 1 || L::strides[L::rank - 1] == 1;
    } else {
        return false;
    }
}

// How a bias reads the destination: not at all, exactly as the destination
// (same memory, same layout: y = y + matmul(a, b)), or otherwise.
enum class bias_alias { none, destination, other };

// A node whose evaluator is prepared already: a bias checked for aliasing
// is not materialised a second time by the pass.
template <class Node, class Eval>
struct prepared_node {
    using shape = typename Node::shape;
    using value_type = typename Node::value_type;
    using place = typename Node::place;
    Eval eval;

    template <class Context>
    Eval prepare(Context&) const
    {
        return eval;
    }
};

template <class DstEval, class Eval>
bias_alias bias_alias_of(const DstEval& dst, const Eval& bias)
{
    bias_alias found = bias_alias::none;
    bias.visit_leaves(
        [&](const auto& leaf, bool direct) {
            if (!tenet::internal::overlaps(dst, leaf)) return;
            if (!(direct && tenet::internal::same_mapping(dst, leaf))) found = bias_alias::other;
            else if (found == bias_alias::none) found = bias_alias::destination;
        },
        true);
    return found;
}

#if TENET_CUDA_COMPILER
template <linalg::activation Act, bool Bias>
constexpr lt_epilogue forward_epilogue()
{
    using enum lt_epilogue;
    if constexpr (Act == linalg::activation::relu) return Bias ? relu_bias : relu;
    else if constexpr (Act == linalg::activation::gelu_tanh) return Bias ? gelu_tanh_bias : gelu_tanh;
    else return Bias ? bias : none;
}

// The element type of a bias vector; void for none.
template <class Bias>
struct vector_element {
    using type = void;
};
template <class T, class L, class P>
struct vector_element<TensorView<T, L, P>> {
    using type = std::remove_const_t<T>;
};

// The product and its epilogue as one cuBLASLt call; false when the
// combination has no fused form (then nothing was done).
template <linalg::activation Act, class Prec, class AV, class BV, class Bias, class Dst, class Context>
bool fused_product(const AV& a, const BV& b, const Bias& bias, const Dst& dst, Context& context)
{
    constexpr bool fusable = Act != linalg::activation::gelu && writable_in_place<Prec, Device, Dst> &&
                             (!has_bias<Bias> || bias_vector<Bias>());
    if constexpr (!fusable) {
        return false;
    } else {
        static_assert(device_precision_ok<Prec>,
                      "tenet: matmul on the device: cuBLASLt accumulates 16-bit and f32 inputs in f32 and f64 in "
                      "f64; this precision policy asks for another accumulate type");
        const void* vector = nullptr;
        if constexpr (has_bias<Bias>) vector = first_element(bias);
        using spec = lt_epilogue_spec<forward_epilogue<Act, has_bias<Bias>>(), typename vector_element<Bias>::type>;
        return lt_gemm<gemm_problem_of<Prec, AV, BV, Dst>, spec>(lt_operands(a, b, dst, vector), context.stream());
    }
}
#endif

// dst = act(a b + dst) as one accumulating GEMM: on the device C = D with
// beta = 1 and the activation as its epilogue. False (nothing done) on the
// host, for the erf GELU, or a destination cuBLASLt does not write.
template <linalg::activation Act, class Prec, class AV, class BV, class Dst, class Context>
bool accumulate_product([[maybe_unused]] const AV& a, [[maybe_unused]] const BV& b, [[maybe_unused]] const Dst& dst,
                        [[maybe_unused]] Context& context)
{
#if TENET_CUDA_COMPILER
    if constexpr (!on_host<typename Context::place> && Act != linalg::activation::gelu &&
                  writable_in_place<Prec, Device, Dst>) {
        static_assert(device_precision_ok<Prec>,
                      "tenet: matmul on the device: cuBLASLt accumulates 16-bit and f32 inputs in f32 and f64 in "
                      "f64; this precision policy asks for another accumulate type");
        using spec = lt_epilogue_spec<forward_epilogue<Act, false>()>;
        return lt_gemm<gemm_problem_of<Prec, AV, BV, Dst>, spec>(lt_operands(a, b, dst), context.stream(),
                                                                 lt_scaling{1, 1});
    }
#endif
    return false;
}

// dst = act(a b + bias) by the fused call, or the GEMM and one pass reading
// pass_bias (the bias, prepared). aliased: the destination overlaps an
// operand or the bias, so the GEMM writes scratch first.
template <linalg::activation Act, class Prec, class AV, class BV, class Bias, class PassBias, class Dst, class Context>
void product_then_pass(const AV& a, const BV& b, [[maybe_unused]] const Bias& bias, const PassBias& pass_bias,
                       const Dst& dst, bool aliased, Context& context)
{
    using place = typename Context::place;
#if TENET_CUDA_COMPILER
    if constexpr (!on_host<place>)
        if (!aliased && fused_product<Act, Prec>(a, b, bias, dst, context)) return;
#endif
    constexpr bool pass = Act != linalg::activation::none || has_bias<Bias>;
    constexpr bool gemm_in_place = writable_in_place<Prec, place, Dst> &&
                                   (!pass || std::is_same_v<view_element<Dst>, typename Prec::accumulate>);
    if constexpr (gemm_in_place) {
        if (!aliased) {
            run_gemm<Prec>(a, b, dst, context);
            if constexpr (pass) assign(dst, epilogue_expression<Act>(dst, pass_bias));
            return;
        }
    }
    auto& result = context.template scratch<typename Prec::accumulate, typename Dst::shape>();
    run_gemm<Prec>(a, b, result.view(), context);
    // A bias reading the destination through another layout throws here,
    // before the destination is written.
    assign(dst, epilogue_expression<Act>(std::as_const(result).view(), pass_bias));
}

// dst = act(product + bias); Product is a matmul_expr (members a, b and
// its precision), dst a writable view of the product's shape.
template <linalg::activation Act, class Product, class Bias, class Dst, class Context>
void assign_product(const Product& product, const Bias& bias, const Dst& dst, Context& context)
{
    using Prec = typename Product::precision;
    const auto a = gemm_input<Prec>(product.a, context);
    const auto b = gemm_input<Prec>(product.b, context);
    require_data(a, b);
    const bool aliased = overlaps_any(dst, a, b);
    if constexpr (has_bias<Bias>) {
        const auto node = broadcast_to<typename Dst::shape>(bias);
        using node_type = decltype(node);
        const prepared_node<node_type, decltype(node.prepare(context))> prepared{node.prepare(context)};
        const bias_alias alias = bias_alias_of(dst.prepare(context), prepared.eval);
        // y = y + matmul(a, b): the bias is the destination itself
        if (is_leaf_node<Bias> && alias == bias_alias::destination && !aliased &&
            accumulate_product<Act, Prec>(a, b, dst, context))
            return;
        product_then_pass<Act, Prec>(a, b, bias, prepared, dst, aliased || alias != bias_alias::none, context);
    } else {
        product_then_pass<Act, Prec>(a, b, bias, bias, dst, aliased, context);
    }
}

}  // namespace tenet::linalg::detail
