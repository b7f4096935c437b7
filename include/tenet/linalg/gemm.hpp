// One GEMM on the backend of an assignment's context, and what prepares it:
// the precision it runs in, the operands as memory it can read in place
// (or contiguous copies), and the destination it can write in place (or a
// scratch tensor that one elementwise pass then copies, converts and fuses
// into the real destination).
//
//   host    oneDNN or Eigen (host_gemm.hpp), writing the accumulate type:
//           bf16 operands are read as they are with oneDNN; other 16-bit
//           operands are converted to f32 once, into scratch; the result is
//           rounded once, in the pass.
//   device  cuBLASLt on the storage type, writing the storage type or f32.
#pragma once

#include "../exec/aliasing.hpp"
#include "../exec/assign.hpp"
#include "../numeric/precision.hpp"
#include "cublaslt.hpp"
#include "gemm_layout.hpp"
#include "host_gemm.hpp"

#include <type_traits>

namespace tenet::linalg::detail {

// What a GEMM stores its inputs in, accumulates in, and its math mode.
template <class Storage, class Accumulate, matmul_math Math = matmul_math::standard>
struct gemm_precision {
    using storage = Storage;
    using accumulate = Accumulate;
    static constexpr matmul_math math = Math;
};

template <class Policy>
constexpr matmul_math policy_math()
{
    if constexpr (requires { Policy::math; }) return Policy::math;
    else return matmul_math::standard;
}

template <class Policy>
using gemm_precision_of = gemm_precision<typename Policy::storage, typename Policy::accumulate, policy_math<Policy>()>;

template <class T>
inline constexpr bool gemm_element = std::is_same_v<T, f32> || std::is_same_v<T, f64> || std::is_same_v<T, f16> ||
                                     std::is_same_v<T, bf16>;

// cuBLASLt's combinations: 16-bit inputs accumulate in f32 (tensor cores),
// f32 in f32, f64 in f64.
template <class Prec>
inline constexpr bool device_precision_ok = std::is_same_v<typename Prec::accumulate,
                                                           compute_t<typename Prec::storage>>;

template <class Place>
inline constexpr bool on_host = host_accessible_v<Place>;

// The element type a GEMM reads on this backend: the host reads bf16 where
// oneDNN multiplies it (host_gemm_reads), else the accumulate type.
template <class Prec, class Place>
using gemm_input_t = std::conditional_t<
    !on_host<Place> || host_gemm_reads<typename Prec::storage, typename Prec::accumulate>, typename Prec::storage,
    typename Prec::accumulate>;

// Can a GEMM on this backend write elements of TD directly?
template <class Prec, class Place, class TD>
inline constexpr bool gemm_output_ok =
    on_host<Place> ? std::is_same_v<TD, typename Prec::accumulate>
                   : std::is_same_v<TD, typename Prec::storage> || std::is_same_v<TD, typename Prec::accumulate>;

// Tensors and views are memory; everything else is computed.
template <class N>
inline constexpr bool is_leaf_node = is_tensor<N>::value || is_tensor_view<N>::value;

template <class N>
auto leaf_view(const N& node)
{
    if constexpr (is_tensor<N>::value) return node.view();
    else return node;
}

template <class View>
using view_form = matrix_form<typename View::layout>;

template <class View>
using view_element = typename View::element_type;

template <class T, class N>
constexpr bool readable_in_place()
{
    if constexpr (is_leaf_node<N>) {
        using V = decltype(leaf_view(std::declval<const N&>()));
        return std::is_same_v<view_element<V>, T> && view_form<V>::order != matrix_order::other;
    } else {
        return false;
    }
}

// A GEMM operand as memory of the element type it reads: the operand itself
// when it is stored that way, else a contiguous copy -- rounded to the
// storage type first (matmul<bf16_mixed> of f32 tensors multiplies bf16
// values), so host and device multiply the same numbers.
template <class Prec, class N, class Context>
auto gemm_input(const N& node, Context& context)
{
    using T = gemm_input_t<Prec, typename Context::place>;
    using S = typename Prec::storage;
    if constexpr (std::is_same_v<T, S> && readable_in_place<T, N>()) {
        return leaf_view(node);
    } else {
        auto& copy = context.template scratch<T, typename N::shape>();
        if constexpr (!is_leaf_node<N>) assign(copy.view(), cast<S>(node));
        else if constexpr (std::is_same_v<typename decltype(leaf_view(node))::element_type, S>)
            assign(copy.view(), leaf_view(node));  // already S: widening only (a round trip through S cost 2x)
        else assign(copy.view(), cast<S>(leaf_view(node)));
        return std::as_const(copy).view();
    }
}

template <class View>
auto first_element(const View& v)
{
    return v.data() + View::layout::offset;
}

// A moved-from tensor's view has no memory to read or write.
template <class... Views>
void require_data(const Views&... views)
{
    if (((views.data() == nullptr) || ...))
        throw error("tenet: an operand or destination has no memory (a moved-from tensor?)");
}

// Does the GEMM's destination overlap any of the operands it reads?
template <class Dst, class... Views>
bool overlaps_any(const Dst& destination, const Views&... operands)
{
    const tenet::internal::byte_range d{destination.data() + Dst::layout::offset, destination.data() + Dst::layout::max_offset + 1};
    return (overlap(d, {operands.data() + Views::layout::offset, operands.data() + Views::layout::max_offset + 1}) || ...);
}

// Can the GEMM write this destination in place (row-major matrices of an
// element type it produces)?
template <class Prec, class Place, class Dst>
inline constexpr bool writable_in_place =
    gemm_output_ok<Prec, Place, view_element<Dst>> && view_form<Dst>::row_major;

template <class Prec, class AV, class BV, class DV>
using gemm_problem_of = gemm_problem<view_element<AV>, view_element<DV>, typename Prec::accumulate, Prec::math,
                                     view_form<AV>, view_form<BV>, view_form<DV>>;

#if TENET_CUDA_COMPILER
template <class AV, class BV, class DV>
lt_pointers lt_operands(const AV& a, const BV& b, const DV& d, const void* vector = nullptr, const void* aux = nullptr)
{
    return {first_element(a), first_element(b), first_element(d), vector, aux};
}
#endif

// d = a b, all three read or written in place (writable_in_place<d>).
template <class Prec, class AV, class BV, class DV, class Context>
void run_gemm(const AV& a, const BV& b, const DV& d, [[maybe_unused]] Context& context)
{
    using problem = gemm_problem_of<Prec, AV, BV, DV>;
    if constexpr (on_host<typename Context::place>) {
        host_gemm<problem>(first_element(a), first_element(b), first_element(d));
    } else {
#if TENET_CUDA_COMPILER
        static_assert(device_precision_ok<Prec>,
                      "tenet: matmul on the device: cuBLASLt accumulates 16-bit and f32 inputs in f32 and f64 in "
                      "f64; this precision policy asks for another accumulate type");
        if (!lt_gemm<problem, lt_epilogue_spec<lt_epilogue::none>>(lt_operands(a, b, d), context.stream()))
            throw cublas_error(static_cast<int>(CUBLAS_STATUS_NOT_SUPPORTED), "cublasLtMatmulAlgoGetHeuristic",
                               "no cuBLASLt algorithm for this GEMM (CUBLAS_STATUS_NOT_SUPPORTED)");
#endif
    }
}

}  // namespace tenet::linalg::detail
