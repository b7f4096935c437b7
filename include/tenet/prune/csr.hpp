// csr_matrix<T>: a pruned weight in compressed sparse row form, on the host:
// per row, the columns and values of its KEPT elements, columns ascending.
// The structure is the mask's: a kept weight whose value is 0 is stored too,
// so the mask can be rebuilt from it and nonzeros() is the kept count.
//
//   m.for_each([&](const std::string& name, auto weight, auto keep) {
//       prune::csr_matrix<f32> w = prune::to_csr(weight, keep);   // any place
//   });
// A weight of rank > 2 is the matrix [everything but the last axis, last axis].
#pragma once

#include "../diagnostic.hpp"
#include "../memory/error.hpp"
#include "../tensor/copy.hpp"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace tenet::prune {

template <class T>
struct csr_matrix {
    using value_type = T;
    std::size_t rows = 0, cols = 0;
    std::vector<std::uint32_t> row_offsets;  // rows + 1: row r's entries are [row_offsets[r], row_offsets[r + 1])
    std::vector<std::uint32_t> columns;      // per entry, strictly increasing within a row
    std::vector<T> values;                   // per entry

    // Stored (kept) elements, zeros among them included.
    std::size_t nonzeros() const { return values.size(); }
    std::size_t bytes() const
    {
        return (row_offsets.size() + columns.size()) * sizeof(std::uint32_t) + values.size() * sizeof(T);
    }

    // Throws format_error (where: the context named) unless the structure is
    // consistent: rows + 1 offsets from 0 to the entry count, never
    // decreasing; columns below cols and strictly increasing within a row.
    void check(const std::string& where = "prune::csr_matrix") const
    {
        const auto fail = [&](const std::string& what) { throw format_error(where, what); };
        if (row_offsets.size() != rows + 1)
            fail("row_offsets has " + std::to_string(row_offsets.size()) + " entries for " + std::to_string(rows) +
                 " rows (needs rows + 1)");
        if (columns.size() != values.size())
            fail(std::to_string(columns.size()) + " columns for " + std::to_string(values.size()) + " values");
        if (row_offsets.front() != 0) fail("row_offsets starts at " + std::to_string(row_offsets.front()) + ", not 0");
        for (std::size_t r = 0; r < rows; ++r)
            if (row_offsets[r + 1] < row_offsets[r])
                fail("row_offsets decrease at row " + std::to_string(r) + " (" + std::to_string(row_offsets[r]) +
                     " then " + std::to_string(row_offsets[r + 1]) + ")");
        if (row_offsets.back() != values.size())
            fail("row_offsets ends at " + std::to_string(row_offsets.back()) + " but there are " +
                 std::to_string(values.size()) + " entries");
        for (std::size_t r = 0; r < rows; ++r)
            for (std::uint32_t j = row_offsets[r]; j < row_offsets[r + 1]; ++j) {
                if (columns[j] >= cols)
                    fail("row " + std::to_string(r) + ": column " + std::to_string(columns[j]) + " is outside the " +
                         std::to_string(cols) + " columns");
                if (j > row_offsets[r] && columns[j] <= columns[j - 1])
                    fail("row " + std::to_string(r) + ": columns " + std::to_string(columns[j - 1]) + " then " +
                         std::to_string(columns[j]) + " are not strictly increasing");
            }
    }

    // Row-major [rows, cols]: the stored values, +0 elsewhere (checks first).
    std::vector<T> to_dense() const
    {
        check();
        std::vector<T> dense(rows * cols, convert<T>(0.0f));
        for (std::size_t r = 0; r < rows; ++r)
            for (std::uint32_t j = row_offsets[r]; j < row_offsets[r + 1]; ++j) dense[r * cols + columns[j]] = values[j];
        return dense;
    }
};

namespace detail {

template <class X>
using view_of = decltype(tenet::as_view(std::declval<const X&>()));

// A tensor or view (any place, any layout) copied into a host tensor; the
// caller synchronizes the current stream before reading it.
template <class X>
auto on_host(const X& x)
{
    using V = view_of<X>;
    Tensor<typename V::element_type, typename V::shape, Host> out;
    copy(out, x);
    return out;
}

template <class W, class M>
struct export_shapes {
    using shape = typename view_of<W>::shape;
    static constexpr std::size_t cols = shape::rank >= 1 ? shape::extents[shape::rank - 1] : 1;
    static constexpr bool same = std::is_same_v<shape, typename view_of<M>::shape>;
    static constexpr bool boolean = std::is_same_v<typename view_of<M>::element_type, bool>;
    static constexpr bool ok = same && boolean && shape::rank >= 2;
};

// Who exports (the first words of its diagnostics).
struct to_csr_export {
    static constexpr auto name() { return tenet::fixed_string("tenet: prune::to_csr"); }
};

template <class Export, class WeightShape, class MaskShape, class MaskElement>
struct weight_and_mask_do_not_fit {
    static constexpr auto text()
    {
        using tenet::fixed_string, tenet::shape_name;
        return Export::name() + fixed_string(": weight ") + shape_name<WeightShape>::text() + fixed_string(" and mask ") +
               shape_name<MaskShape>::text() +
               fixed_string(" must have the same shape, of rank >= 2, and the mask bool elements");
    }
};

template <class Export, class W, class M>
using export_failure = weight_and_mask_do_not_fit<Export, typename view_of<W>::shape, typename view_of<M>::shape,
                                                  typename view_of<M>::element_type>;

}  // namespace detail

// The CSR form of a weight under its mask (same static shape; any place: both
// are copied to the host). T is the weight's element type.
template <class Weight, class Mask>
auto to_csr(const Weight& weight, const Mask& mask)
{
    using shapes = detail::export_shapes<Weight, Mask>;
    using shape = typename shapes::shape;
    using T = typename detail::view_of<Weight>::element_type;
    static_assert(tenet::diagnose<shapes::ok, detail::export_failure<detail::to_csr_export, Weight, Mask>>::value);
    static_assert(shape::numel <= std::numeric_limits<std::uint32_t>::max(),
                  "tenet: prune::to_csr: CSR offsets are 32-bit: at most 2^32 - 1 elements");
    const auto w = detail::on_host(weight);
    const auto keep = detail::on_host(mask);
    current_stream().synchronize();

    csr_matrix<T> out;
    out.cols = shapes::cols;
    out.rows = shape::numel / shapes::cols;
    out.row_offsets.reserve(out.rows + 1);
    out.row_offsets.push_back(0);
    for (std::size_t r = 0; r < out.rows; ++r) {
        for (std::size_t c = 0; c < out.cols; ++c)
            if (keep.data()[r * out.cols + c]) {
                out.columns.push_back(static_cast<std::uint32_t>(c));
                out.values.push_back(w.data()[r * out.cols + c]);
            }
        out.row_offsets.push_back(static_cast<std::uint32_t>(out.values.size()));
    }
    return out;
}

}  // namespace tenet::prune
