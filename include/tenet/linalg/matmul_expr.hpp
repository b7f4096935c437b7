// matmul(a, b): the matrix product as a lazy expression node.
//
//   y = matmul(x, w);                 one GEMM straight into y
//   y = matmul(x, transpose(w));      the transposed view is read in place
//   y = tanh(matmul(a, b)) * 2 + c;   the GEMM writes a scratch tensor (of the
//                                     accumulate type: f32 for 16-bit
//                                     storage, so the result is rounded once),
//                                     then one fused elementwise pass
//   y = matmul<bf16_mixed>(x, w);     inputs stored and accumulated as the
//                                     precision policy says (TF32 only when
//                                     it says matmul_math::tf32)
//
// Shapes: [m, k] x [k, n] -> [m, n]; [b, m, k] x [b, k, n] -> [b, m, n];
// [b, m, k] x [k, n] -> [b, m, n] (shared weights); [m, k] x [b, k, n] ->
// [b, m, n]. Anything else is a compile error naming both shapes.
//
// Without a policy, a tensor operand's element type is the storage type (an
// expression operand is rounded to it, as if assigned to such a tensor);
// two tensors of different types, or two expressions, multiply in their
// common compute type (f32 or f64). Accumulation is in the compute type.
#pragma once

#include "../expr/operators.hpp"
#include "activation_kind.hpp"
#include "gemm.hpp"
#include "product.hpp"

#include <type_traits>
#include <utility>

namespace tenet {
namespace linalg::detail {

template <class SA, class SB>
struct matmul_shapes {
    static constexpr bool ranks_ok = (SA::rank == 2 || SA::rank == 3) && (SB::rank == 2 || SB::rank == 3);

    template <class S, std::size_t FromEnd>
    static constexpr std::size_t extent()
    {
        if constexpr (S::rank >= FromEnd) return S::extents[S::rank - FromEnd];
        else return 0;
    }
    static constexpr std::size_t m = extent<SA, 2>(), k = extent<SA, 1>(), k_b = extent<SB, 2>(), n = extent<SB, 1>();
    static constexpr std::size_t batch_a = SA::rank == 3 ? extent<SA, 3>() : 0;
    static constexpr std::size_t batch_b = SB::rank == 3 ? extent<SB, 3>() : 0;

    static constexpr bool inner_ok = ranks_ok && k == k_b;
    static constexpr bool batch_ok = batch_a == 0 || batch_b == 0 || batch_a == batch_b;
    static constexpr bool ok = ranks_ok && inner_ok && batch_ok;
    static constexpr std::size_t batch = batch_a > batch_b ? batch_a : batch_b;
    using shape = std::conditional_t<batch == 0, Shape<m, n>, Shape<batch, m, n>>;
};

template <class SA, class SB>
constexpr auto matmul_operands() { return tenet::shape_name<SA>::text() + fixed_string(" x ") + tenet::shape_name<SB>::text(); }

template <class SA, class SB>
struct matmul_needs_rank_2_or_3 {
    static constexpr auto text() { return fixed_string("tenet: matmul needs rank-2 or rank-3 operands: ") + matmul_operands<SA, SB>(); }
};

template <class SA, class SB>
struct matmul_inner_dimensions_differ {
    static constexpr auto text() { return fixed_string("tenet: matmul inner dimensions differ: ") + matmul_operands<SA, SB>(); }
};

template <class SA, class SB>
struct matmul_batch_sizes_differ {
    static constexpr auto text() { return fixed_string("tenet: matmul batch sizes differ: ") + matmul_operands<SA, SB>(); }
};

template <class SA, class PA, class SB, class PB>
struct matmul_mixes_places {
    static constexpr auto text()
    {
        return fixed_string("tenet: matmul mixes places: ") + tenet::shape_name<SA>::text() + fixed_string(" in ") +
               PA::name() + fixed_string(" x ") + tenet::shape_name<SB>::text() + fixed_string(" in ") + PB::name();
    }
};

// The element type an operand is stored in; void for a computed expression.
template <class N>
struct stored_element {
    using type = void;
};
template <class T, class L, class P>
struct stored_element<TensorView<T, L, P>> {
    using type = std::remove_const_t<T>;
};
template <class T, class S, class P>
struct stored_element<Tensor<T, S, P>> {
    using type = T;
};

template <class NA, class NB>
constexpr auto default_storage()
{
    using A = typename stored_element<NA>::type;
    using B = typename stored_element<NB>::type;
    if constexpr (std::is_void_v<A> && std::is_void_v<B>)
        return std::type_identity<arithmetic_t<typename NA::value_type, typename NB::value_type>>{};
    else if constexpr (std::is_void_v<A>) return std::type_identity<B>{};
    else if constexpr (std::is_void_v<B> || std::is_same_v<A, B>) return std::type_identity<A>{};
    else return std::type_identity<arithmetic_t<compute_t<A>, compute_t<B>>>{};
}

template <class NA, class NB>
using default_storage_t = typename decltype(default_storage<NA, NB>())::type;

template <class NA, class NB>
using default_gemm_precision = gemm_precision<default_storage_t<NA, NB>, compute_t<default_storage_t<NA, NB>>>;

template <class Prec, class A, class B>
struct matmul_expr : ::tenet::materialises<matmul_expr<Prec, A, B>> {
    using precision = Prec;
    using shape = typename matmul_shapes<typename A::shape, typename B::shape>::shape;
    using value_type = typename Prec::accumulate;
    using place = combined_place_t<typename A::place, typename B::place>;

    A a;
    B b;

    // Assigned to a tensor of its shape: the GEMM writes it directly.
    template <class Dst, class Context>
    void assign_into(const Dst& destination, Context& context) const
    {
        assign_product<linalg::activation::none>(*this, no_bias{}, destination, context);
    }
};

template <class Prec, class A, class B>
auto make_matmul(A&& a, B&& b)
{
    using NA = tenet::node_t<A>;
    using NB = tenet::node_t<B>;
    using SA = typename NA::shape;
    using SB = typename NB::shape;
    using shapes = matmul_shapes<SA, SB>;
    constexpr bool places_ok = !std::is_void_v<combined_place_t<typename NA::place, typename NB::place>>;
    static_assert(diagnose<shapes::ranks_ok, matmul_needs_rank_2_or_3<SA, SB>>::value);
    static_assert(diagnose<!shapes::ranks_ok || shapes::inner_ok, matmul_inner_dimensions_differ<SA, SB>>::value);
    static_assert(diagnose<!shapes::ranks_ok || !shapes::inner_ok || shapes::batch_ok, matmul_batch_sizes_differ<SA, SB>>::value);
    static_assert(diagnose<places_ok, matmul_mixes_places<SA, typename NA::place, SB, typename NB::place>>::value);
    constexpr bool types_ok = gemm_element<typename Prec::storage>;
    static_assert(types_ok, "tenet: matmul multiplies f32, f64, f16 or bf16 elements (int8 and fp8 GEMMs are not "
                            "supported yet)");
    if constexpr (shapes::ok && places_ok && types_ok)
        return matmul_expr<Prec, NA, NB>{{}, tenet::as_node(std::forward<A>(a)), tenet::as_node(std::forward<B>(b))};
    else
        return tenet::internal::failed_expression{};
}

}  // namespace linalg::detail

// matmul(a, b): the precision follows the operands (see above).
template <class A, class B>
    requires(expression<std::decay_t<A>> && expression<std::decay_t<B>>)
auto matmul(A&& a, B&& b)
{
    using precision = linalg::detail::default_gemm_precision<node_t<A>, node_t<B>>;
    return linalg::detail::make_matmul<precision>(std::forward<A>(a), std::forward<B>(b));
}

// matmul<Policy>(a, b): operands stored as Policy::storage (converted once
// when they are not), accumulated in Policy::accumulate.
template <class Policy, class A, class B>
    requires(precision_policy<Policy> && expression<std::decay_t<A>> && expression<std::decay_t<B>>)
auto matmul(A&& a, B&& b)
{
    return linalg::detail::make_matmul<linalg::detail::gemm_precision_of<Policy>>(std::forward<A>(a), std::forward<B>(b));
}

}  // namespace tenet
