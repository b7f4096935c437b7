// Run-time aliasing check. Elementwise in-place assignment (x = x * 2) is
// fine: every element is read before it is written, by the same thread. A
// destination read through a different layout (x = transpose(x), overlapping
// slices, a broadcast of x) is not, and throws aliasing_error.
#pragma once

#include "../memory/error.hpp"
#include "../numeric/traits.hpp"
#include "../shape/layout.hpp"

#include <functional>
#include <string>
#include <type_traits>

namespace tenet::detail::exec {

template <class MA, class MB>
constexpr bool same_dims(const MA& a, const MB& b)
{
    if (a.count != b.count) return false;
    for (std::size_t j = 0; j != a.count; ++j)
        if (a.extents[j] != b.extents[j] || a.strides[j] != b.strides[j]) return false;
    return true;
}

// Do layouts A and B map every index to the same offset?
template <class A, class B>
inline constexpr bool same_layout_v = A::offset == B::offset && same_dims(index_map<A>::merged, index_map<B>::merged);

template <class A, class B>
bool same_mapping(const A& a, const B& b)
{
    return same_layout_v<typename A::layout, typename B::layout> &&
           static_cast<const void*>(a.data) == static_cast<const void*>(b.data);
}

// The bytes [first, last) an evaluator can touch.
struct byte_range {
    const void* first;
    const void* last;
};

template <class Leaf>
byte_range bytes_of(const Leaf& leaf)
{
    return {leaf.first_byte(), leaf.last_byte()};
}

inline bool overlap(byte_range a, byte_range b)
{
    const std::less<const void*> before;
    return before(a.first, b.last) && before(b.first, a.last);
}

template <class A, class B>
bool overlaps(const A& a, const B& b)
{
    return overlap(bytes_of(a), bytes_of(b));
}

// A moved-from tensor's view has no memory to read or write.
template <class Leaf>
void require_memory(const Leaf& leaf)
{
    if (leaf.data == nullptr) throw error("tenet: an operand or destination has no memory (a moved-from tensor?)");
}

// "operand 2 of the expression (a f32 Shape<4,3> view)": which leaf, counted
// from the left as the expression is written.
template <class Leaf>
std::string operand_name(std::size_t position)
{
    std::string name = "operand " + std::to_string(position) + " of the expression";
    if constexpr (requires { typename Leaf::element_type; typename Leaf::layout::shape; })
        name += std::string(" (a ") + element_name<typename Leaf::element_type> + " " +
                shape_name<typename Leaf::layout::shape>::text().chars + " view)";
    return name;
}

template <class Dst, class Src>
void check_operands(const Dst& destination, const Src& source)
{
    std::size_t position = 0;
    source.visit_leaves(
        [&](const auto& leaf, bool direct) {
            ++position;
            require_memory(leaf);
            if (overlaps(destination, leaf) && !(direct && same_mapping(destination, leaf)))
                throw aliasing_error(
                    "tenet: " + operand_name<std::decay_t<decltype(leaf)>>(position) +
                    " reads the destination's memory through a different layout (e.g. x = transpose(x), an "
                    "overlapping slice or a broadcast of x); elements would be overwritten before they are read -- "
                    "assign to a separate tensor first");
        },
        true);
}

}  // namespace tenet::detail::exec

// For the folders above this one (see docs/ARCHITECTURE.md, "Namespaces").
namespace tenet::internal {
using detail::exec::same_layout_v;
using detail::exec::same_mapping;
using detail::exec::byte_range;
using detail::exec::overlaps;
using detail::exec::require_memory;
using detail::exec::operand_name;
using detail::exec::check_operands;
}  // namespace tenet::internal
