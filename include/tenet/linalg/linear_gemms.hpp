// The Linear layer's GEMMs. W is stored [Out, In] as in PyTorch; with
// x [M, In], b [Out], y and dz [M, Out]:
//
//   linear_forward<Act>(y, x, w, b)          y = act(x W^T + b)
//   linear_forward<Act>(y, aux, x, w, b)     the same, and aux: what the
//                                            backward needs from the forward
//   linear_backward_weights(dw, db, dz, x)   dw = dz^T x, db = sum of dz's rows
//   linear_backward_weights(dw, dz, x)       dw only
//   linear_backward_input(dx, dz, w)         dx = dz W
//   linear_backward_input_act<Act>(dz_prev, db_prev, dz, w, aux_prev)
//       dz_prev = (dz W) * act'(pre_prev), db_prev = sum of dz_prev's rows:
//       the gradient of the previous Linear's pre-activation (whose forward
//       wrote aux_prev) and its bias gradient, in one GEMM.
//   linear_backward_input_act<Act>(dz_prev, dz, w, aux_prev)
//       dz_prev alone (the previous Linear is inside nn::Frozen): a GEMM
//       and one fused pass, on the device too
//
// On the device each is one cuBLASLt call: BIAS / RELU_BIAS / GELU_BIAS
// (gelu_tanh) forward, RELU_AUX_BIAS / GELU_AUX_BIAS with aux, BGRADB for
// the weight gradient (cuBLASLt's B is dz^T, see cublaslt.hpp, so its bias
// gradient is db), DRELU_BGRAD / DGELU_BGRAD for the activation backward.
// Gradients may be f32 while dz, x and w are 16-bit (f32 D, and the bias
// vector's type set explicitly). Where cuBLASLt has no algorithm for a
// combination, and for the erf GELU (cuBLASLt's GELU is the tanh form), the
// GEMM runs alone into an f32 scratch tensor and tenet's fused passes and
// reductions do the rest -- exactly what the host does:
//
//   forward   s = x W^T; y = act(s + b); aux = mask of (s + b) > 0, or s + b
//   weights   dw = dz^T x; db = sum<0>(dz)
//   input     s = dz W; dz_prev = s * act'(aux); db_prev = sum<0>(s * act'(aux))
//
// aux_tensor_t<Act, Storage, Shape<M, N>, Place> is cuBLASLt's AUX format on
// host and device alike: for relu a bit mask (relu_mask.hpp), for gelu and
// gelu_tanh the pre-activation in Storage, rows of round_up(N, 8) elements
// (the AUX leading dimension must be a multiple of 8); for none, nothing.
// The functions take that Tensor or any owner of memory with its element
// type, shape and place (data() and view(): nn's kept tensors).
#pragma once

#include "../reduce/reduce.hpp"
#include "activation_kind.hpp"
#include "epilogue.hpp"
#include "gemm.hpp"
#include "matmul_expr.hpp"
#include "relu_mask.hpp"

#include <cstddef>
#include <type_traits>
#include <utility>

namespace tenet::linalg {
namespace detail {

constexpr std::size_t gelu_aux_ld(std::size_t n) { return (n + 7) / 8 * 8; }

// What a Linear without activation keeps for its backward: nothing.
struct no_aux_tensor {
    using element_type = i8;
    static constexpr std::size_t numel = 0;
};

template <activation Act, class Storage, class S, class Place>
struct aux_tensor {
    static_assert(S::rank == 2, "tenet: aux_tensor_t<Act, Storage, Shape<M, N>, Place>: the shape is a matrix [M, N]");
    static constexpr std::size_t m = S::extents[0], n = S::extents[S::rank - 1];
    using type = std::conditional_t<
        Act == activation::none, no_aux_tensor,
        std::conditional_t<Act == activation::relu, Tensor<i8, Shape<m, relu_mask_row_bytes(n)>, Place>,
                           Tensor<Storage, Shape<m, gelu_aux_ld(n)>, Place>>>;
};

template <class S, std::size_t I>
constexpr std::size_t extent()
{
    if constexpr (I < S::rank) return S::extents[I];
    else return 0;
}

template <class S, std::size_t Rank>
inline constexpr bool has_rank = S::rank == Rank;

// "x Shape<..>, w Shape<..>, ..." for the messages below.
template <class S>
constexpr auto named(auto name)
{
    return fixed_string(", ") + name + fixed_string(" ") + tenet::shape_name<S>::text();
}

template <class X, class W, class B, class Y>
struct forward_shapes {
    static constexpr std::size_t m = extent<X, 0>(), in = extent<X, 1>(), out = extent<W, 0>();
    static constexpr bool ok = has_rank<X, 2> && has_rank<W, 2> && has_rank<B, 1> && has_rank<Y, 2> &&
                               extent<W, 1>() == in && extent<B, 0>() == out && extent<Y, 0>() == m &&
                               extent<Y, 1>() == out;
    static constexpr auto text()
    {
        return fixed_string("tenet: linear_forward: y = act(x w^T + b) needs x [M, In], w [Out, In], b [Out], "
                            "y [M, Out]; got x ") +
               tenet::shape_name<X>::text() + named<W>(fixed_string("w")) + named<B>(fixed_string("b")) +
               named<Y>(fixed_string("y"));
    }
};

template <class DW, class DZ, class X>
struct weight_shapes {
    static constexpr std::size_t m = extent<X, 0>(), in = extent<X, 1>(), out = extent<DZ, 1>();
    static constexpr bool ok = has_rank<DW, 2> && has_rank<DZ, 2> && has_rank<X, 2> && extent<DZ, 0>() == m &&
                               extent<DW, 0>() == out && extent<DW, 1>() == in;
    static constexpr auto text()
    {
        return fixed_string("tenet: linear_backward_weights: dw = dz^T x needs dz [M, Out], x [M, In], "
                            "dw [Out, In]; got dz ") +
               tenet::shape_name<DZ>::text() + named<X>(fixed_string("x")) + named<DW>(fixed_string("dw"));
    }
};

template <class DX, class DZ, class W>
struct input_shapes {
    static constexpr std::size_t m = extent<DZ, 0>(), out = extent<DZ, 1>(), in = extent<W, 1>();
    static constexpr bool ok = has_rank<DX, 2> && has_rank<DZ, 2> && has_rank<W, 2> && extent<W, 0>() == out &&
                               extent<DX, 0>() == m && extent<DX, 1>() == in;
    static constexpr auto text()
    {
        return fixed_string("tenet: linear backward: dx = dz w needs dz [M, Out], w [Out, In], dx [M, In]; got dz ") +
               tenet::shape_name<DZ>::text() + named<W>(fixed_string("w")) + named<DX>(fixed_string("dx"));
    }
};

template <class V, std::size_t N>
inline constexpr bool is_vector_of = V::rank == 1 && V::extents[0] == N;

// Views for what the functions read and write; a Tensor becomes its view.
template <class E>
auto input_node(const E& e)
{
    return ::tenet::as_node(e);
}

// The aux Tensor itself, or any owner of memory laid out as it is (element
// type, shape and place, with data() and view(): nn's kept tensors).
template <class Aux, activation Act, class Storage, class S, class Place>
inline constexpr bool is_aux_for = [] {
    using want = typename aux_tensor<Act, Storage, S, Place>::type;
    using A = std::remove_const_t<Aux>;
    if constexpr (std::is_same_v<A, want>) {
        return true;
    } else if constexpr (Act == activation::none ||
                         !requires(A& a) { typename A::element_type; typename A::shape; typename A::place; a.data(); a.view(); }) {
        return false;
    } else {
        return std::is_same_v<typename A::element_type, typename want::element_type> &&
               std::is_same_v<typename A::shape, typename want::shape> && std::is_same_v<typename A::place, typename want::place>;
    }
}();

// act'(pre) of the forward that wrote aux, as an expression of shape [M, N].
template <activation Act, std::size_t M, std::size_t N, class Aux>
auto saved_derivative(const Aux& aux)
{
    if constexpr (Act == activation::relu) {
        return relu_mask_read_expr<M, N, typename Aux::place>{aux.data()};
    } else {
        const auto pre = slice<1, 0, N>(aux.view());
        return detail::derivative<Act>(pre);
    }
}

#if TENET_CUDA_COMPILER
template <lt_epilogue Kind, class Vector, class AuxElement, std::size_t AuxLd, class Prec, class AV, class BV, class DV,
          class Context>
bool lt_linear(const AV& a, const BV& b, const DV& d, const void* vector, const void* aux, Context& context)
{
    static_assert(device_precision_ok<Prec>,
                  "tenet: linalg on the device: cuBLASLt accumulates 16-bit and f32 inputs in f32 and f64 in f64");
    using spec = lt_epilogue_spec<Kind, Vector, AuxElement, AuxLd>;
    return lt_gemm<gemm_problem_of<Prec, AV, BV, DV>, spec>(lt_operands(a, b, d, vector, aux), context.stream());
}
#endif

// linear_backward_input_act without cuBLASLt's epilogue: s = dz W into an
// f32 scratch, then dz_prev = s * act'(aux) and (db_prev: not nullptr) the
// column sums of the same unrounded product.
template <activation Act, class Prec, std::size_t M, std::size_t N, class DZP, class DBP, class DZ, class W, class Aux,
          class Context>
void input_act_unfused(const DZP& dz_prev, const DBP& db_prev, const DZ& dz, const W& w, const Aux& aux, Context& context)
{
    auto& product = context.template scratch<typename Prec::accumulate, Shape<M, N>>();
    run_gemm<Prec>(dz, w, product.view(), context);
    const auto s = std::as_const(product).view();
    const auto grad = [&] {
        if constexpr (Act == activation::none) {
            return s;
        } else {
            require_data(aux);
            return s * saved_derivative<Act, M, N>(aux);
        }
    }();
    assign(dz_prev, grad);
    if constexpr (!std::is_null_pointer_v<DBP>) assign(db_prev, sum<0>(grad));
}

}  // namespace detail

template <activation Act, class Storage, class S, class Place = Device>
using aux_tensor_t = typename detail::aux_tensor<Act, Storage, S, Place>::type;

// y = act(x W^T + b): one assignment, recognised as an epilogue pattern.
template <activation Act = activation::none, class Y, class X, class W, class B>
void linear_forward(Y&& y, const X& x, const W& w, const B& b)
{
    using check = detail::forward_shapes<typename X::shape, typename W::shape, typename B::shape,
                                         typename std::decay_t<Y>::shape>;
    if constexpr (!check::ok)
        static_assert(tenet::diagnose<check::ok, check>::value);
    else
        assign(tenet::destination_view(y), detail::activate<Act>(matmul(x, transpose(w)) + b));
}

// y = act(x W^T + b), and aux for linear_backward_input_act.
template <activation Act, class Y, class Aux, class X, class W, class B>
void linear_forward(Y&& y_out, [[maybe_unused]] Aux& aux, const X& x_in, const W& w_in, const B& b_in)
{
    const auto y = tenet::destination_view(y_out);
    using YV = std::remove_const_t<decltype(y)>;
    using check = detail::forward_shapes<typename X::shape, typename W::shape, typename B::shape, typename YV::shape>;
    if constexpr (!check::ok) {
        static_assert(tenet::diagnose<check::ok, check>::value);
    } else if constexpr (Act == activation::none) {
        linear_forward<Act>(y, x_in, w_in, b_in);
    } else {
        constexpr std::size_t m = check::m, n = check::out;
        using place = compute_place_t<typename YV::place>;
        using Prec = detail::default_gemm_precision<tenet::node_t<const X&>, tenet::node_t<const W&>>;
        static_assert(detail::is_aux_for<Aux, Act, typename Prec::storage, Shape<m, n>, typename YV::place>,
                      "tenet: linear_forward: aux must be linalg::aux_tensor_t<Act, Storage, Shape<M, Out>, Place> "
                      "for this activation, storage type, shape and place");
        exec_context<place> context(current_stream());
        const auto x = detail::gemm_input<Prec>(detail::input_node(x_in), context);
        const auto wt = detail::gemm_input<Prec>(transpose(detail::input_node(w_in)), context);
        const auto b = detail::input_node(b_in);
        detail::require_data(y, aux, x, wt);
#if TENET_CUDA_COMPILER
        if constexpr (!detail::on_host<place> && Act != activation::gelu && detail::writable_in_place<Prec, place, YV> &&
                      detail::bias_vector<std::remove_const_t<decltype(b)>>()) {
            constexpr bool relu = Act == activation::relu;
            constexpr detail::lt_epilogue kind = relu ? detail::lt_epilogue::relu_aux_bias : detail::lt_epilogue::gelu_tanh_aux_bias;
            constexpr std::size_t aux_ld = relu ? detail::relu_mask_row_bits(n) : detail::gelu_aux_ld(n);
            using aux_element = typename Aux::element_type;
            const auto aux_view = aux.view();
            if (!detail::overlaps_any(y, x, wt, b) && !detail::overlaps_any(aux_view, x, wt, b, y) &&
                detail::lt_linear<kind, typename B::element_type, aux_element, aux_ld, Prec>(
                    x, wt, y, detail::first_element(b), aux.data(), context))
                return;
        }
#endif
        auto& product = context.template scratch<typename Prec::accumulate, Shape<m, n>>();
        detail::run_gemm<Prec>(x, wt, product.view(), context);
        const auto pre = std::as_const(product).view() + b;
        if constexpr (Act == activation::relu) {
            assign(y, relu(pre));
            assign(aux.view(), detail::relu_mask_pack(pre));
        } else {
            auto saved = slice<1, 0, n>(aux.view());
            tie(y, saved) = pack(detail::activate<Act>(pre), pre);
        }
    }
}

// dw = dz^T x (and db = the sum of dz's rows).
template <class DW, class DZ, class X>
void linear_backward_weights(DW&& dw, const DZ& dz, const X& x)
{
    using check = detail::weight_shapes<typename std::decay_t<DW>::shape, typename DZ::shape, typename X::shape>;
    if constexpr (!check::ok)
        static_assert(tenet::diagnose<check::ok, check>::value);
    else
        assign(tenet::destination_view(dw), matmul(transpose(dz), x));
}

template <class DW, class DB, class DZ, class X>
void linear_backward_weights(DW&& dw_out, DB&& db_out, const DZ& dz_in, const X& x_in)
{
    const auto dw = tenet::destination_view(dw_out);
    const auto db = tenet::destination_view(db_out);
    using DWV = std::remove_const_t<decltype(dw)>;
    using DBV = std::remove_const_t<decltype(db)>;
    using check = detail::weight_shapes<typename DWV::shape, typename DZ::shape, typename X::shape>;
    if constexpr (!check::ok) {
        static_assert(tenet::diagnose<check::ok, check>::value);
    } else {
        static_assert(detail::is_vector_of<typename DBV::shape, check::out>,
                      "tenet: linear_backward_weights: db must be a vector [Out] (dz's last extent)");
        const auto dz = detail::input_node(dz_in);
        const auto x = detail::input_node(x_in);
#if TENET_CUDA_COMPILER
        using place = compute_place_t<typename DWV::place>;
        if constexpr (!detail::on_host<place>) {
            using Prec = detail::default_gemm_precision<node_t<const DZ&>, node_t<const X&>>;
            if constexpr (detail::writable_in_place<Prec, place, DWV> && detail::bias_vector<DBV>()) {
                exec_context<place> context(current_stream());
                const auto dzt = detail::gemm_input<Prec>(transpose(dz), context);
                const auto xs = detail::gemm_input<Prec>(x, context);
                detail::require_data(dw, db, dzt, xs);
                if (!detail::overlaps_any(dw, dzt, xs, db) && !detail::overlaps_any(db, dzt, xs) &&
                    detail::lt_linear<detail::lt_epilogue::bgradb, typename DBV::element_type, void, 0, Prec>(
                        dzt, xs, dw, detail::first_element(db), nullptr, context))
                    return;
            }
        }
#endif
        assign(dw, matmul(transpose(dz), x));
        assign(db, sum<0>(dz));
    }
}

// dx = dz W.
template <class DX, class DZ, class W>
void linear_backward_input(DX&& dx, const DZ& dz, const W& w)
{
    using check = detail::input_shapes<typename std::decay_t<DX>::shape, typename DZ::shape, typename W::shape>;
    if constexpr (!check::ok)
        static_assert(tenet::diagnose<check::ok, check>::value);
    else
        assign(tenet::destination_view(dx), matmul(dz, w));
}

namespace detail {

// linear_backward_input_act on destination views; db_prev is nullptr when
// no bias gradient is wanted (then cuBLASLt's BGRAD epilogue is not used).
template <activation Act, class DZPV, class DBPV, class DZ, class W, class Aux>
void input_act(const DZPV& dz_prev, const DBPV& db_prev, const DZ& dz_in, const W& w_in, const Aux& aux)
{
    constexpr bool bias_gradient = !std::is_null_pointer_v<DBPV>;
    using check = input_shapes<typename DZPV::shape, typename DZ::shape, typename W::shape>;
    if constexpr (!check::ok) {
        static_assert(tenet::diagnose<check::ok, check>::value);
    } else {
        constexpr std::size_t m = check::m, n = check::in;
        if constexpr (bias_gradient)
            static_assert(is_vector_of<typename DBPV::shape, n>,
                          "tenet: linear_backward_input_act: db_prev must be a vector [In] (w's last extent)");
        using place = compute_place_t<typename DZPV::place>;
        using Prec = default_gemm_precision<tenet::node_t<const DZ&>, tenet::node_t<const W&>>;
        static_assert(is_aux_for<Aux, Act, typename Prec::storage, Shape<m, n>, typename DZPV::place>,
                      "tenet: linear_backward_input_act: aux_prev must be the linalg::aux_tensor_t<Act, Storage, "
                      "Shape<M, In>, Place> its forward wrote");
        exec_context<place> context(current_stream());
        const auto dz = gemm_input<Prec>(input_node(dz_in), context);
        const auto w = gemm_input<Prec>(input_node(w_in), context);
        require_data(dz_prev, dz, w);
        if constexpr (bias_gradient) require_data(db_prev);
#if TENET_CUDA_COMPILER
        if constexpr (bias_gradient && !on_host<place> && (Act == activation::relu || Act == activation::gelu_tanh) &&
                      writable_in_place<Prec, place, DZPV> && bias_vector<DBPV>()) {
            constexpr bool relu = Act == activation::relu;
            constexpr lt_epilogue kind = relu ? lt_epilogue::drelu_bgrad : lt_epilogue::dgelu_tanh_bgrad;
            constexpr std::size_t aux_ld = relu ? relu_mask_row_bits(n) : gelu_aux_ld(n);
            require_data(aux);
            if (!overlaps_any(dz_prev, dz, w, db_prev, aux.view()) && !overlaps_any(db_prev, dz, w, aux.view()) &&
                lt_linear<kind, typename DBPV::element_type, typename Aux::element_type, aux_ld, Prec>(
                    dz, w, dz_prev, first_element(db_prev), aux.data(), context))
                return;
        }
#endif
        input_act_unfused<Act, Prec, m, n>(dz_prev, db_prev, dz, w, aux, context);
    }
}

}  // namespace detail

// dz_prev = (dz W) * act'(pre_prev), db_prev = sum of dz_prev's rows.
template <activation Act, class DZP, class DBP, class DZ, class W, class Aux>
void linear_backward_input_act(DZP&& dz_prev, DBP&& db_prev, const DZ& dz, const W& w, const Aux& aux)
{
    detail::input_act<Act>(tenet::destination_view(dz_prev), tenet::destination_view(db_prev), dz, w, aux);
}

// dz_prev alone, without the bias gradient (the previous Linear is inside
// nn::Frozen): a GEMM into an f32 scratch and one fused pass.
template <activation Act, class DZP, class DZ, class W, class Aux>
void linear_backward_input_act(DZP&& dz_prev, const DZ& dz, const W& w, const Aux& aux)
{
    detail::input_act<Act>(tenet::destination_view(dz_prev), nullptr, dz, w, aux);
}

}  // namespace tenet::linalg
