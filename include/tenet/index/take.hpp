// take<Axis>(table, indices): a gather, numpy.take's semantics as a fusable
// expression. The result's shape is the table's with the extent at Axis
// replaced by the indices' shape:
//   table [A..., N, B...], indices [I...] (integers)  ->  [A..., I..., B...]
//   take<0>(W, tokens): W [Vocab, Dim], tokens [Batch, Seq] -> [Batch, Seq, Dim]
// Every index is checked to lie in [0, N) when the expression is assigned,
// before anything is written (check_index_range: once per assignment, not per
// element); out of range is a tenet::index_error and the destination is
// unchanged. Inside a CUDA Graph capture nothing can be read back: there an
// index out of range reads NaN (a floating table; an integer one is refused),
// so a captured training step with a bad token is a non-finite step. Rows of the table (the extents after Axis) are read as vector
// chunks when their length allows.
#pragma once

#include "index_range.hpp"

#include <array>
#include <cstddef>
#include <string>

namespace tenet {
namespace detail::index {

// The extents of take<Axis>'s result, and the three counts its index uses.
template <std::size_t Axis, class Table, class Indices>
struct taken {
    static constexpr std::size_t rank = Table::rank - 1 + Indices::rank;
    static constexpr std::array<std::size_t, rank> extents = [] {
        std::array<std::size_t, rank> e{};
        std::size_t d = 0;
        for (std::size_t a = 0; a + 1 <= Axis; ++a) e[d++] = Table::extents[a];  // (a < 0 warns for Axis 0)
        for (std::size_t a = 0; a < Indices::rank; ++a) e[d++] = Indices::extents[a];
        for (std::size_t a = Axis + 1; a < Table::rank; ++a) e[d++] = Table::extents[a];
        return e;
    }();
    static constexpr std::size_t taken_extent = Table::extents[Axis];  // the N indices select from
    static constexpr std::size_t inner = [] {  // elements of one selected slice
        std::size_t n = 1;
        for (std::size_t a = Axis + 1; a < Table::rank; ++a) n *= Table::extents[a];
        return n;
    }();
};

template <class TableEval, class IndexEval, std::size_t Extent, std::size_t Count, std::size_t Inner>
struct take_eval {
    using value_type = typename TableEval::value_type;
    TableEval table;
    IndexEval indices;

    // Element i is (outer, j, inner): table element (outer, indices[j], inner).
    template <class Index>
    TENET_HD std::int64_t picked(Index i) const
    {
        return indices.at((i / Inner) % Count);
    }

    template <class Index>
    TENET_HD static Index source(Index i, std::int64_t k)
    {
        const Index in_slice = i % Inner, outer = i / Inner / Count;
        return (outer * Extent + static_cast<Index>(k)) * Inner + in_slice;
    }

    // An index outside [0, Extent) reaches here only where it could not be
    // checked first (a CUDA Graph capture): it reads NaN, never outside the table.
    TENET_HD static bool outside(std::int64_t k) { return k < 0 || k >= static_cast<std::int64_t>(Extent); }

    TENET_HD static value_type missing()
    {
        if constexpr (is_floating_v<value_type>) return numeric_traits<value_type>::quiet_nan();
        else return value_type{};  // (never read: prepare() refuses unchecked integer tables)
    }

    template <class Index>
    TENET_HD value_type at(Index i) const
    {
        const std::int64_t k = picked(i);
        return outside(k) ? missing() : table.at(source(i, k));
    }

    // A chunk starting at a multiple of K stays inside one slice when the
    // slice length is a multiple of K: it is the table's chunk there.
    template <std::size_t K, class Index>
    TENET_HD vec<value_type, K> chunk(Index i) const
    {
        if constexpr (Inner % K == 0) {
            const std::int64_t k = picked(i);
            return outside(k) ? splat<K>(missing()) : table.template chunk<K>(source(i, k));
        } else {
            return chunk_by_elements<K>(*this, i);
        }
    }

    template <std::size_t K>
    bool aligned() const
    {
        if constexpr (Inner % K == 0) return table.template aligned<K>();
        else return true;
    }

    // Neither operand is read at the destination's own index.
    template <class F>
    void visit_leaves(F&& f, bool) const
    {
        table.visit_leaves(f, false);
        indices.visit_leaves(f, false);
    }

    static constexpr std::size_t smallest_element = internal::smallest_element_of<TableEval, IndexEval>;

    template <std::size_t K>
    static constexpr internal::host_walk host_walk_for =
        Inner % K == 0 && internal::host_walk_of<TableEval, K>() != internal::host_walk::elements
            ? internal::host_walk::chunks
            : internal::host_walk::elements;
};

template <std::size_t Axis, class Table, class Indices>
struct take_expr {
    using geometry = taken<Axis, typename Table::shape, typename Indices::shape>;
    using shape = shape_from_t<geometry>;
    using value_type = typename Table::value_type;
    using place = combined_places_t<typename Table::place, typename Indices::place>;
    Table table;
    Indices indices;

    template <class Context>
    auto prepare(Context& context) const
    {
        if constexpr (integer_expression<Indices>) {  // (else take() has said so)
            const std::string what = "take<" + std::to_string(Axis) + ">";
            if (can_check_indices<check_place<Indices>>())
                check_index_range<geometry::taken_extent>(indices, what);
            else if constexpr (!is_floating_v<value_type>)
                throw error("tenet: " + what + ": a CUDA Graph capture cannot check indices, and an integer "
                            "table has no NaN to mark a bad one with: take from it outside the capture");
        }
        using table_eval = decltype(table.prepare(context));
        using index_eval = decltype(indices.prepare(context));
        return take_eval<table_eval, index_eval, geometry::taken_extent, Indices::shape::numel, geometry::inner>{
            table.prepare(context), indices.prepare(context)};
    }
};

template <std::size_t Axis, class Table>
struct take_table_has_no_such_axis {
    static constexpr auto text()
    {
        return fixed_string("tenet: take<") + decimal<Axis>() + fixed_string(">: the table ") +
               shape_name<Table>::text() + fixed_string(" has no axis ") + decimal<Axis>();
    }
};

}  // namespace detail::index

template <std::size_t Axis, class Table, class Indices>
    requires(expression<std::decay_t<Table>> && expression<std::decay_t<Indices>>)
auto take(Table&& table, Indices&& indices)
{
    using table_shape = typename std::decay_t<Table>::shape;
    static_assert(diagnose<(Axis < table_shape::rank), detail::index::take_table_has_no_such_axis<Axis, table_shape>>::value);
    static_assert(integer_expression<Indices>,
                  "tenet: take: the indices must be integers (an i32 tensor), not floating-point values");
    if constexpr (Axis < table_shape::rank) {
        using T = node_t<Table>;
        using I = node_t<Indices>;
        static_assert(!std::is_void_v<combined_places_t<typename T::place, typename I::place>>,
                      "tenet: take: the table and the indices must be in one place (copy one of them first)");
        return detail::index::take_expr<Axis, T, I>{as_node(std::forward<Table>(table)),
                                                    as_node(std::forward<Indices>(indices))};
    } else {
        return 0.0f;  // (after the error above: a value that causes no second one)
    }
}

}  // namespace tenet

// For the folders above this one (see docs/ARCHITECTURE.md, "Namespaces").
namespace tenet::internal {
using detail::index::take_eval;
using detail::index::take_expr;
}  // namespace tenet::internal
