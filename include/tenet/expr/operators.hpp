// Building expressions: the arithmetic, comparison and logical operators and
// the named elementwise functions. Operands are tensors, views, expressions or
// plain numbers; shapes broadcast (NumPy rules) and places must agree, both
// checked at compile time with a tenet: diagnostic naming the shapes or places.
#pragma once

#include "functors.hpp"
#include "map.hpp"
#include "scalar.hpp"
#include "views.hpp"

#include <type_traits>
#include <utility>

namespace tenet {
namespace detail::expr {

template <class... E>
struct broadcast_all;
template <class E>
struct broadcast_all<E> {
    static constexpr bool valid = true;
    using shape = typename E::shape;
};
template <class A, class B, class... Rest>
struct broadcast_all<A, B, Rest...> {
    using rest = broadcast_all<B, Rest...>;
    static constexpr bool valid = rest::valid && broadcastable_v<typename A::shape, typename rest::shape>;
    using shape = broadcast_shape_t<typename A::shape, typename rest::shape>;
};

template <class First, class... Rest>
constexpr auto join_with_vs(First first, Rest... rest)
{
    if constexpr (sizeof...(Rest) == 0) return first;
    else return first + fixed_string(" vs ") + join_with_vs(rest...);
}

// An operation as diagnostics name it: its name(), or tenet::map's for a
// user's functor without one.
template <class Op>
constexpr auto op_name()
{
    if constexpr (requires { Op::name(); }) return Op::name();
    else return fixed_string("tenet::map(f, ...)");
}

template <class Op, class... Shapes>
struct incompatible_broadcast {
    static constexpr auto text()
    {
        return fixed_string("tenet: incompatible broadcast in ") + op_name<Op>() + fixed_string(": ") +
               join_with_vs(shape_name<Shapes>::text()...);
    }
};

// An operand as a diagnostic names it: its shape and its place.
template <class Shape, class Place>
struct located {
    static constexpr auto text() { return shape_name<Shape>::text() + fixed_string(" in ") + Place::name(); }
};

template <class N>
using located_t = located<typename N::shape, typename N::place>;

template <class Op, class... Operands>
struct mixed_places {
    static constexpr auto text()
    {
        return fixed_string("tenet: ") + op_name<Op>() + fixed_string(" mixes places: ") +
               join_with_vs(Operands::text()...);
    }
};

// Stands in for an expression that failed a compile-time check, so that one
// error is reported instead of a cascade: a rank-0 scalar, which broadcasts
// to whatever shape it meets next, so nothing downstream fails again.
struct failed_expression : scalar_expr<f32, Shape<>> {};

template <class Op, class... E>
auto make_map(Op op, E&&... operands)
{
    using checks = broadcast_all<node_t<E>...>;
    using place = combined_places_t<typename node_t<E>::place...>;
    static_assert(diagnose<checks::valid, incompatible_broadcast<Op, typename node_t<E>::shape...>>::value);
    static_assert(diagnose<!std::is_void_v<place>, mixed_places<Op, located_t<node_t<E>>...>>::value);
    if constexpr (checks::valid && !std::is_void_v<place>) {
        using S = typename checks::shape;
        return map_expr<Op, decltype(broadcast_node<S>(std::forward<E>(operands)))...>{
            op, {broadcast_node<S>(std::forward<E>(operands))...}};
    } else {
        return failed_expression{};
    }
}

// A plain number as an operand next to an expression of compute type V.
template <class V, class S>
scalar_expr<weak_scalar_t<V, S>> scalar_operand(S s)
{
    return {scalar_as<weak_scalar_t<V, S>>(s)};
}

template <class E, class Other>
decltype(auto) operand(E&& e)
{
    if constexpr (scalar_value<std::decay_t<E>>) return scalar_operand<typename std::decay_t<Other>::value_type>(e);
    else return std::forward<E>(e);
}

template <class A, class B>
concept binary_operands =
    (expression<std::decay_t<A>> && (expression<std::decay_t<B>> || scalar_value<std::decay_t<B>>)) ||
    (scalar_value<std::decay_t<A>> && expression<std::decay_t<B>>);

template <class Op, class A, class B>
auto make_binary(A&& a, B&& b)
{
    return make_map(Op{}, operand<A, B>(std::forward<A>(a)), operand<B, A>(std::forward<B>(b)));
}

}  // namespace detail::expr

// The operators and named functions of two operands (expressions or a plain
// number beside an expression), each one fused node: name, then its functor.
#define TENET_BINARY_FUNCTION(name, op)                                              \
    template <class A, class B>                                                      \
        requires detail::expr::binary_operands<A, B>                                       \
    auto name(A&& a, B&& b)                                                          \
    {                                                                                \
        return detail::expr::make_binary<ops::op>(std::forward<A>(a), std::forward<B>(b)); \
    }
TENET_BINARY_FUNCTION(operator+, plus)
TENET_BINARY_FUNCTION(operator-, minus)
TENET_BINARY_FUNCTION(operator*, multiplies)
TENET_BINARY_FUNCTION(operator/, divides)
TENET_BINARY_FUNCTION(operator%, fmod)
TENET_BINARY_FUNCTION(operator<, less)
TENET_BINARY_FUNCTION(operator<=, less_equal)
TENET_BINARY_FUNCTION(operator>, greater)
TENET_BINARY_FUNCTION(operator>=, greater_equal)
TENET_BINARY_FUNCTION(operator==, equal_to)
TENET_BINARY_FUNCTION(operator!=, not_equal_to)

TENET_BINARY_FUNCTION(min, minimum)
TENET_BINARY_FUNCTION(max, maximum)
TENET_BINARY_FUNCTION(fmod, fmod)
TENET_BINARY_FUNCTION(pow, power)
TENET_BINARY_FUNCTION(logical_and, logical_and)
TENET_BINARY_FUNCTION(logical_or, logical_or)
TENET_BINARY_FUNCTION(logical_xor, logical_xor)
#undef TENET_BINARY_FUNCTION

// The operators and named functions of one expression, each one fused node:
// name, then its functor.
#define TENET_UNARY_FUNCTION(name, op)                          \
    template <class E>                                          \
        requires expression<std::decay_t<E>>                    \
    auto name(E&& e)                                            \
    {                                                           \
        return detail::expr::make_map(ops::op{}, std::forward<E>(e)); \
    }
TENET_UNARY_FUNCTION(operator-, negate)
TENET_UNARY_FUNCTION(operator!, logical_not)
TENET_UNARY_FUNCTION(logical_not, logical_not)
TENET_UNARY_FUNCTION(abs, absolute)
TENET_UNARY_FUNCTION(sign, sign)
TENET_UNARY_FUNCTION(square, square)
TENET_UNARY_FUNCTION(reciprocal, reciprocal)
TENET_UNARY_FUNCTION(exp, exp)
TENET_UNARY_FUNCTION(exp2, exp2)
TENET_UNARY_FUNCTION(expm1, expm1)
TENET_UNARY_FUNCTION(log, log)
TENET_UNARY_FUNCTION(log2, log2)
TENET_UNARY_FUNCTION(log1p, log1p)
TENET_UNARY_FUNCTION(sqrt, sqrt)
TENET_UNARY_FUNCTION(rsqrt, rsqrt)
TENET_UNARY_FUNCTION(sin, sin)
TENET_UNARY_FUNCTION(cos, cos)
TENET_UNARY_FUNCTION(tanh, tanh)
TENET_UNARY_FUNCTION(sigmoid, sigmoid)
TENET_UNARY_FUNCTION(relu, relu)
TENET_UNARY_FUNCTION(silu, silu)
TENET_UNARY_FUNCTION(gelu, gelu)
TENET_UNARY_FUNCTION(gelu_tanh, gelu_tanh)
TENET_UNARY_FUNCTION(softplus, softplus)
#undef TENET_UNARY_FUNCTION

template <class E> requires expression<std::decay_t<E>>
auto leaky_relu(E&& e, f32 slope = 0.01f) { return detail::expr::make_map(ops::leaky_relu{slope}, std::forward<E>(e)); }
template <class E> requires expression<std::decay_t<E>>
auto elu(E&& e, f32 alpha = 1.0f) { return detail::expr::make_map(ops::elu{alpha}, std::forward<E>(e)); }

template <class E, scalar_value Lo, scalar_value Hi> requires expression<std::decay_t<E>>
auto clamp(E&& e, Lo lo, Hi hi)
{
    using V = detail::expr::weak_scalar_t<typename std::decay_t<E>::value_type, std::common_type_t<Lo, Hi>>;
    return detail::expr::make_map(ops::clamp<V>{detail::expr::scalar_as<V>(lo), detail::expr::scalar_as<V>(hi)}, std::forward<E>(e));
}

// where(condition, a, b): a where condition is true (nonzero), else b.
template <class C, class A, class B>
    requires(expression<std::decay_t<C>> || expression<std::decay_t<A>> || expression<std::decay_t<B>>)
auto where(C&& condition, A&& a, B&& b)
{
    auto value_operand = [](auto&& x, auto&& other) -> decltype(auto) {
        using X = std::decay_t<decltype(x)>;
        using O = std::decay_t<decltype(other)>;
        if constexpr (scalar_value<X> && expression<O>) return detail::expr::scalar_operand<typename O::value_type>(x);
        else if constexpr (scalar_value<X>) return detail::expr::scalar_expr<compute_t<std::conditional_t<std::is_floating_point_v<X>, f32, i32>>>{detail::expr::scalar_as<compute_t<std::conditional_t<std::is_floating_point_v<X>, f32, i32>>>(x)};
        else return std::forward<decltype(x)>(x);
    };
    auto condition_operand = [](auto&& c) -> decltype(auto) {
        if constexpr (scalar_value<std::decay_t<decltype(c)>>) return detail::expr::scalar_expr<bool>{static_cast<bool>(c)};
        else return std::forward<decltype(c)>(c);
    };
    return detail::expr::make_map(ops::select{}, condition_operand(std::forward<C>(condition)),
                            value_operand(std::forward<A>(a), b), value_operand(std::forward<B>(b), a));
}

namespace detail::expr {

// The value type plain-number operands of tenet::map take: the first
// expression operand's (as for a binary operator).
template <class... E>
struct first_expression_value;
template <class E, class... Rest>
struct first_expression_value<E, Rest...> {
    using type = typename std::conditional_t<expression<std::decay_t<E>>, std::decay<E>,
                                             first_expression_value<Rest...>>::type::value_type;
};

template <class F, class... V>
concept elementwise_functor = std::is_trivially_copyable_v<F> && std::is_invocable_v<const F&, V...> &&
                              element<std::remove_cvref_t<std::invoke_result_t<const F&, V...>>>;

}  // namespace detail::expr

// map(f, xs...): a user's elementwise operation, fused exactly like the
// built-ins (the same single kernel or loop nest, the same vector loads).
// Operands broadcast together; plain numbers take the first expression's
// value type.
//   struct softsign {
//       TENET_HD float operator()(float x) const { return x / (1 + fabsf(x)); }
//       // optional: d f / d x_J, for gradients(...) and nn::Activation<softsign>
//       template <std::size_t J>
//       TENET_HD float derivative(float x) const { float d = 1 + fabsf(x); return 1 / (d * d); }
//       // optional: the name diagnostics use
//       static constexpr auto name() { return tenet::fixed_string("softsign"); }
//   };
//   y = map(softsign{}, x * 2) + 1;
// f must be trivially copyable (it travels to the kernel by value) and take
// the operands' compute values (f32 for f16/bf16/fp8 storage); its result,
// a tenet element type, is the expression's value type. Under nvcc its
// operator() must be __host__ __device__ (TENET_HD) for Device tensors.
template <class F, class... E>
    requires((sizeof...(E) > 0) && ((expression<std::decay_t<E>> || scalar_value<std::decay_t<E>>) && ...) &&
             (expression<std::decay_t<E>> || ...))
auto map(F f, E&&... operands)
{
    using V = typename detail::expr::first_expression_value<E...>::type;
    auto as_operand = [](auto&& x) -> decltype(auto) {
        if constexpr (scalar_value<std::decay_t<decltype(x)>>) return detail::expr::scalar_operand<V>(x);
        else return std::forward<decltype(x)>(x);
    };
    using nodes = std::tuple<detail::expr::node_t<decltype(as_operand(std::declval<E>()))>...>;
    constexpr bool callable = []<class... N>(std::tuple<N...>*) {
        return detail::expr::elementwise_functor<F, typename N::value_type...>;
    }(static_cast<nodes*>(nullptr));
    static_assert(callable,
                  "tenet: map(f, xs...): f must be trivially copyable and callable with the operands' compute values "
                  "(f32 for f16/bf16/fp8 storage), returning a tenet element type (f32, f64, i32, bool, ...)");
    if constexpr (callable) return detail::expr::make_map(f, as_operand(std::forward<E>(operands))...);
    else return detail::expr::failed_expression{};
}

// cast<T>(e): round each element to T (tenet::convert), continue in T's compute type.
template <class T, class E> requires(element<T> && expression<std::decay_t<E>>)
auto cast(E&& e) { return detail::expr::make_map(ops::cast_to<T>{}, std::forward<E>(e)); }

}  // namespace tenet


// For the folders above this one (see docs/ARCHITECTURE.md, "Namespaces").
namespace tenet::internal {
using detail::expr::op_name;
using detail::expr::located_t;
using detail::expr::failed_expression;
using detail::expr::make_map;
}  // namespace tenet::internal
