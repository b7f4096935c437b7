// Epilogue patterns, recognised at compile time when assigned:
//
//   y = matmul(x, w) + b;   y = b + matmul(x, w);
//   y = relu(matmul(x, w) + b);   y = gelu_tanh(...);   y = gelu(...);
//   y = relu(matmul(x, w));   (and gelu_tanh, gelu without a bias)
//
// Each becomes assign_product (product.hpp): one cuBLASLt call with the
// epilogue on the device, the GEMM plus one fused pass on the host (and for
// gelu, whose erf form cuBLASLt does not have). b is any expression of y's
// shape; a vector [n] broadcast over rows is what the device fuses.
// Every other expression holding a matmul evaluates the matmul into a
// scratch tensor first (matmul_expr::prepare).
#pragma once

#include "../exec/assign.hpp"
#include "matmul_expr.hpp"
#include "product.hpp"

#include <tuple>
#include <type_traits>

namespace tenet::linalg::detail {

template <class E>
inline constexpr bool is_matmul = false;
template <class P, class A, class B>
inline constexpr bool is_matmul<matmul_expr<P, A, B>> = true;

// What a right-hand side is, as an epilogue pattern: its activation, its
// product and its bias (no_bias when there is none).
template <class Src>
struct epilogue_pattern {
    static constexpr bool matches = false;
};

template <class P, class A, class B>
struct epilogue_pattern<matmul_expr<P, A, B>> {
    static constexpr bool matches = true;
    static constexpr linalg::activation act = linalg::activation::none;
    static const matmul_expr<P, A, B>& product(const matmul_expr<P, A, B>& e) { return e; }
    static no_bias bias(const matmul_expr<P, A, B>&) { return {}; }
};

template <class P, class A, class B, class E>
struct epilogue_pattern<tenet::internal::map_expr<ops::plus, matmul_expr<P, A, B>, E>> {
    using src = tenet::internal::map_expr<ops::plus, matmul_expr<P, A, B>, E>;
    static constexpr bool matches = true;
    static constexpr linalg::activation act = linalg::activation::none;
    static const matmul_expr<P, A, B>& product(const src& e) { return std::get<0>(e.operands); }
    static const E& bias(const src& e) { return std::get<1>(e.operands); }
};

template <class E, class P, class A, class B>
    requires(!is_matmul<E>)
struct epilogue_pattern<tenet::internal::map_expr<ops::plus, E, matmul_expr<P, A, B>>> {
    using src = tenet::internal::map_expr<ops::plus, E, matmul_expr<P, A, B>>;
    static constexpr bool matches = true;
    static constexpr linalg::activation act = linalg::activation::none;
    static const matmul_expr<P, A, B>& product(const src& e) { return std::get<1>(e.operands); }
    static const E& bias(const src& e) { return std::get<0>(e.operands); }
};

using linalg::activation_of;

// act(inner) where inner is a product with or without a bias.
template <class Op, class Inner>
    requires(activation_of<Op> != linalg::activation::none && epilogue_pattern<Inner>::matches &&
             epilogue_pattern<Inner>::act == linalg::activation::none)
struct epilogue_pattern<tenet::internal::map_expr<Op, Inner>> {
    using src = tenet::internal::map_expr<Op, Inner>;
    using inner = epilogue_pattern<Inner>;
    static constexpr bool matches = true;
    static constexpr linalg::activation act = activation_of<Op>;
    static const auto& product(const src& e) { return inner::product(std::get<0>(e.operands)); }
    static decltype(auto) bias(const src& e) { return inner::bias(std::get<0>(e.operands)); }
};

}  // namespace tenet::linalg::detail

namespace tenet {

// The hook in assign(): a matching right-hand side of the destination's
// shape is written by assign_product.
template <class Op, class... Operands>
    requires linalg::detail::epilogue_pattern<internal::map_expr<Op, Operands...>>::matches
struct assignment_pattern<internal::map_expr<Op, Operands...>> {
    using src = internal::map_expr<Op, Operands...>;
    using pattern = linalg::detail::epilogue_pattern<src>;

    template <class Dst, class Context>
    static auto assign(const src& e, const Dst& dst, Context& context)
    {
        if constexpr (std::is_same_v<typename src::shape, typename Dst::shape>) {
            linalg::detail::assign_product<pattern::act>(pattern::product(e), pattern::bias(e), dst, context);
            return std::true_type{};
        } else {
            return std::false_type{};
        }
    }
};

}  // namespace tenet
