// A scalar operand (x * 0.5f): one value, broadcast to any shape, in no place.
#pragma once

#include "../memory/place.hpp"
#include "../numeric/vec.hpp"
#include "node.hpp"

namespace tenet::detail::expr {

// What evaluators that read no memory share: nothing to align, no leaves.
struct memoryless_eval {
    template <std::size_t K>
    bool aligned() const
    {
        return true;
    }
    template <class F>
    void visit_leaves(F&&, bool) const
    {
    }
    static constexpr std::size_t smallest_element = no_memory_access;
};

template <class V>
struct scalar_eval : memoryless_eval {
    using value_type = V;
    V value;

    template <class Index>
    TENET_HD V at(Index) const
    {
        return value;
    }
    template <std::size_t K, class Index>
    TENET_HD vec<V, K> chunk(Index) const
    {
        return splat<K>(value);
    }
    template <std::size_t K>
    static constexpr internal::host_walk host_walk_for = internal::host_walk::either;
};

template <class V, class S = Shape<>>
struct scalar_expr {
    using shape = S;
    using value_type = V;
    using place = AnyPlace;
    V value;

    template <class Context>
    scalar_eval<V> prepare(Context&) const
    {
        return {{}, value};
    }
};

// Scalars are weakly typed, as in PyTorch: they take the other operand's
// compute type (x_bf16 * 0.5 stays f32 math, x_i32 * 2 stays i32), except
// that a floating scalar makes an integer operand f32.
template <class Other, class S>
using weak_scalar_t = std::conditional_t<std::is_floating_point_v<S> && !is_floating_v<Other>, f32,
                                         std::conditional_t<is_floating_v<Other>, Other, i32>>;

template <class V, class S>
constexpr V scalar_as(S s)
{
    if constexpr (std::is_same_v<V, i32> && std::is_integral_v<S>) {
        if constexpr (std::is_signed_v<S>) {
            const long long v = s;
            return static_cast<i32>(v < -2147483648LL ? -2147483648LL : (v > 2147483647LL ? 2147483647LL : v));
        } else {
            const unsigned long long v = s;
            return static_cast<i32>(v > 2147483647ULL ? 2147483647ULL : v);
        }
    } else {
        return convert<V>(static_cast<f64>(s));  // exact for float and for integers below 2^53
    }
}

}  // namespace tenet::detail::expr

namespace tenet {

// full<S>(v): v at every index of shape S, as torch.full -- no memory, any
// place (a LayerNorm without affine parameters scales by full<Shape<N>>(1)).
template <shape_type S, scalar_value V>
auto full(V value)
{
    using T = std::conditional_t<std::is_floating_point_v<V>, f32, i32>;
    return detail::expr::scalar_expr<T, S>{detail::expr::scalar_as<T>(value)};
}

}  // namespace tenet

// For the folders above this one (see docs/ARCHITECTURE.md, "Namespaces").
namespace tenet::internal {
using detail::expr::scalar_as;
}  // namespace tenet::internal

namespace tenet {
using detail::expr::scalar_expr;
}  // namespace tenet
