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
//           an operand overlapping the destination) it writes a scratch
//           tensor of the accumulate type, so the result is rounded once.
#pragma once

#include "activation.hpp"
#include "gemm.hpp"

#include <type_traits>
#include <utility>

namespace tenet::detail {

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
        if constexpr (has_bias<Bias>) {
            if (overlaps_any(dst, bias)) return false;
            vector = first_element(bias);
        }
        using spec = lt_epilogue_spec<forward_epilogue<Act, has_bias<Bias>>(), typename vector_element<Bias>::type>;
        return lt_gemm<gemm_problem_of<Prec, AV, BV, Dst>, spec>(lt_operands(a, b, dst, vector), context.stream());
    }
}
#endif

// dst = act(product + bias); Product is a matmul_expr (members a, b and
// its precision), dst a writable view of the product's shape.
template <linalg::activation Act, class Product, class Bias, class Dst, class Context>
void assign_product(const Product& product, const Bias& bias, const Dst& dst, Context& context)
{
    using Prec = typename Product::precision;
    using place = typename Context::place;
    const auto a = gemm_input<Prec>(product.a, context);
    const auto b = gemm_input<Prec>(product.b, context);
    require_data(a, b);
    const bool aliased = overlaps_any(dst, a, b);
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
            if constexpr (pass) assign(dst, epilogue_expression<Act>(dst, bias));
            return;
        }
    }
    auto& result = context.template scratch<typename Prec::accumulate, typename Dst::shape>();
    run_gemm<Prec>(a, b, result.view(), context);
    assign(dst, epilogue_expression<Act>(std::as_const(result).view(), bias));
}

}  // namespace tenet::detail
