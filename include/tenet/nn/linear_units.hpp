// linear_units_t<Spec, Unsupported>: a model spec seen as a chain of Linear
// units at compile time, a type_list of linear_unit<In, Out, Act>: each
// Linear (with the activation right after it) is one unit; Sequentials and
// Checkpointed and Offloaded segments open; Dropout (the identity at inference) vanishes.
// Inference forms that replace a model's Linears (prune::sparse_model)
// build one unit per entry. leaf_specs_t<Spec> is the finer list beneath:
// every leaf spec in order (Sequential's fused units as one leaf), one per
// layer that model::for_each_layer visits (quant::int8_model walks it).
//
// Anything else is a compile error in the caller's words: the caller passes
// Unsupported, a template over the offending layer spec whose reject()
// static_asserts with its own message (static_assert messages must be
// literals, and nvcc prints only that literal).
#pragma once

#include "dropout.hpp"
#include "sequential.hpp"

#include <type_traits>

namespace tenet::nn {
namespace detail {

// No unit started yet.
struct no_unit {};

// An activation right after P joins it: P is a Linear without one.
template <class P>
inline constexpr bool takes_activation = false;
template <std::size_t K, std::size_t N>
inline constexpr bool takes_activation<linear_unit<K, N, linalg::activation::none>> = true;

template <class S>
inline constexpr bool is_dropout = false;
template <class R>
inline constexpr bool is_dropout<Dropout<R>> = true;

template <class... A, class... B>
auto operator+(type_list<A...>, type_list<B...>) -> type_list<A..., B...>;

// The leaf specs of a model spec, in order (Sequentials, Checkpointed and
// Offloaded segments opened; Sequential has already fused Linear-activation-Linear).
template <class S>
struct leaves {
    using type = type_list<S>;
};
template <class... U>
struct leaves_of_units;
template <class... U>
struct leaves_of_units<type_list<U...>> {
    template <class... L>
    static auto join(L...) -> decltype((type_list<>{} + ... + L{}));
    using type = decltype(join(typename leaves<typename U::spec>::type{}...));
};
template <class... L>
struct leaves<Sequential<L...>> : leaves_of_units<typename Sequential<L...>::units> {};
template <class... L>
struct leaves<Checkpointed<L...>> : leaves_of_units<typename Sequential<L...>::units> {};
template <class... L>
struct leaves<Offloaded<L...>> : leaves_of_units<typename Sequential<L...>::units> {};

// Folds leaves into units: Linear starts one, an activation right after a
// Linear joins it, Dropout vanishes, anything else is Unsupported<S>::reject().
template <class Done, class Pending, class Rest, template <class> class Unsupported>
struct fold;
template <class... D, class P, template <class> class Unsupported>
struct fold<type_list<D...>, P, type_list<>, Unsupported> {
    using type = std::conditional_t<std::is_same_v<P, no_unit>, type_list<D...>, type_list<D..., P>>;
};
template <class... D, class P, class S, class... Rest, template <class> class Unsupported>
struct fold<type_list<D...>, P, type_list<S, Rest...>, Unsupported> {
    static constexpr bool linear = requires { S::in_features; S::out_features; S::activation; };
    static constexpr bool joins = takes_activation<P> && [] {
        if constexpr (requires { S::fusable; }) return S::fusable != linalg::activation::none;
        else return false;
    }();
    using committed = typename fold<type_list<D...>, P, type_list<>, Unsupported>::type;
    static auto next()
    {
        if constexpr (linear)
            return fold<committed, linear_unit<S::in_features, S::out_features, S::activation>, type_list<Rest...>,
                        Unsupported>{};
        else if constexpr (joins)
            return fold<type_list<D...>, linear_unit<P::in_features, P::out_features, S::fusable>, type_list<Rest...>, Unsupported>{};
        else if constexpr (is_dropout<S>)
            return fold<type_list<D...>, P, type_list<Rest...>, Unsupported>{};
        else {
            Unsupported<S>::reject();
            return fold<type_list<D...>, P, type_list<>, Unsupported>{};
        }
    }
    using type = typename decltype(next())::type;
};

}  // namespace detail

template <class Spec>
using leaf_specs_t = typename detail::leaves<Spec>::type;

template <class Spec, template <class> class Unsupported>
using linear_units_t =
    typename detail::fold<type_list<>, detail::no_unit, typename detail::leaves<Spec>::type, Unsupported>::type;

}  // namespace tenet::nn
