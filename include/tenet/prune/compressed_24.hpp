// compressed_24<T>: a weight whose mask is 2:4 along the last axis (at most
// two kept in every group of four consecutive inputs), in the layout sparse
// tensor cores read: half the values, plus a 2-bit position for each.
//
//   values   rows * cols / 2: each group's two values, in index order
//   indices  per group one nibble idx0 | idx1 << 2 (idx0 < idx1, both 0..3);
//            two groups a byte, the even group in the low nibble; each row
//            starts on a byte: (cols / 4 + 1) / 2 bytes a row, an odd row's
//            last high nibble 0
//
// A group keeping fewer than two stores zeros at its lowest unused
// positions, so decompression still equals the dense weight under its mask
// (and such a group reads back as keeping two, the extra ones zero).
#pragma once

#include "csr.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tenet::prune {

template <class T>
struct compressed_24 {
    using value_type = T;
    std::size_t rows = 0, cols = 0;
    std::vector<T> values;
    std::vector<std::uint8_t> indices;

    std::size_t groups_per_row() const { return cols / 4; }
    std::size_t row_bytes() const { return (cols / 4 + 1) / 2; }
    std::size_t bytes() const { return values.size() * sizeof(T) + indices.size(); }

    // The nibble of group g of row r.
    unsigned nibble(std::size_t r, std::size_t g) const
    {
        return (indices[r * row_bytes() + g / 2] >> (g % 2 * 4)) & 0xFu;
    }

    // Throws format_error (where: the context named) unless cols is a
    // multiple of 4, the sizes agree, every nibble has idx0 < idx1, and the
    // unused high nibble of a row with an odd group count is 0.
    void check(const std::string& where = "prune::compressed_24") const
    {
        const auto fail = [&](const std::string& what) { throw format_error(where, what); };
        if (cols % 4 != 0) fail(std::to_string(cols) + " columns: not a multiple of 4");
        if (values.size() != rows * cols / 2)
            fail(std::to_string(values.size()) + " values for " + std::to_string(rows) + " x " + std::to_string(cols) +
                 " (needs rows * cols / 2)");
        if (indices.size() != rows * row_bytes())
            fail(std::to_string(indices.size()) + " index bytes for " + std::to_string(rows) + " rows of " +
                 std::to_string(row_bytes()));
        for (std::size_t r = 0; r < rows; ++r) {
            for (std::size_t g = 0; g < groups_per_row(); ++g) {
                const unsigned n = nibble(r, g);
                if ((n & 3u) >= (n >> 2))
                    fail("row " + std::to_string(r) + ", group " + std::to_string(g) + ": positions " +
                         std::to_string(n & 3u) + " and " + std::to_string(n >> 2) + " are not increasing");
            }
            if (groups_per_row() % 2 == 1 && (indices[(r + 1) * row_bytes() - 1] >> 4) != 0)
                fail("row " + std::to_string(r) + ": the unused high nibble of its last index byte is not 0");
        }
    }

    // Row-major [rows, cols]: the stored values at their positions, +0
    // elsewhere (checks first).
    std::vector<T> to_dense() const
    {
        check();
        std::vector<T> dense(rows * cols, convert<T>(0.0f));
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t g = 0; g < groups_per_row(); ++g) {
                const unsigned n = nibble(r, g);
                const std::size_t v = (r * groups_per_row() + g) * 2;
                dense[r * cols + 4 * g + (n & 3u)] = values[v];
                dense[r * cols + 4 * g + (n >> 2)] = values[v + 1];
            }
        return dense;
    }
};

namespace detail {

struct compress_24_export {
    static constexpr auto name() { return tenet::fixed_string("tenet: prune::compress_24"); }
};

template <class S>
struct prune_compress_24_needs_a_last_extent_multiple_of_4_not {
    static constexpr auto text()
    {
        return tenet::fixed_string("tenet: prune::compress_24: a weight of shape ") +
               tenet::shape_name<S>::text() +
               tenet::fixed_string(" has a last extent that is not a multiple of 4");
    }
};

}  // namespace detail

// The 2:4 form of a weight under its mask (same static shape, any place).
// Throws tenet::error naming the row and group when a group keeps more than 2.
template <class Weight, class Mask>
auto compress_24(const Weight& weight, const Mask& mask)
{
    using shapes = detail::export_shapes<Weight, Mask>;
    using shape = typename shapes::shape;
    using T = typename detail::view_of<Weight>::element_type;
    static_assert(tenet::diagnose<shapes::ok, detail::export_failure<detail::compress_24_export, Weight, Mask>>::value);
    static_assert(tenet::diagnose<!shapes::ok || shapes::cols % 4 == 0, detail::prune_compress_24_needs_a_last_extent_multiple_of_4_not<shape>>::value);
    const auto w = detail::on_host(weight);
    const auto keep = detail::on_host(mask);
    current_stream().synchronize();

    compressed_24<T> out;
    out.cols = shapes::cols;
    out.rows = shape::numel / shapes::cols;
    out.values.reserve(shape::numel / 2);
    out.indices.assign(out.rows * out.row_bytes(), 0);
    for (std::size_t r = 0; r < out.rows; ++r)
        for (std::size_t g = 0; g < out.groups_per_row(); ++g) {
            const std::size_t first = r * out.cols + 4 * g;
            unsigned kept = 0, positions = 0;  // positions: a bit per kept index
            for (unsigned i = 0; i < 4; ++i)
                if (keep.data()[first + i]) {
                    ++kept;
                    positions |= 1u << i;
                }
            if (kept > 2)
                throw error("tenet: prune::compress_24: row " + std::to_string(r) + ", group " + std::to_string(g) +
                            " (columns " + std::to_string(4 * g) + " to " + std::to_string(4 * g + 3) + ") keeps " +
                            std::to_string(kept) + " weights; 2:4 keeps at most 2");
            for (unsigned i = 0; i < 4 && kept < 2; ++i)  // fill up with the lowest unused positions
                if (!(positions >> i & 1u)) {
                    positions |= 1u << i;
                    ++kept;
                }
            unsigned nibble = 0, slot = 0;
            for (unsigned i = 0; i < 4; ++i)
                if (positions >> i & 1u) {
                    nibble |= i << (2 * slot++);
                    out.values.push_back(keep.data()[first + i] ? w.data()[first + i] : convert<T>(0.0f));
                }
            out.indices[r * out.row_bytes() + g / 2] |= static_cast<std::uint8_t>(nibble << (g % 2 * 4));
        }
    return out;
}

}  // namespace tenet::prune
