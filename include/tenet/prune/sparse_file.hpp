// A pruned model exported to a file, its weights compressed: the checkpoint
// container (io/checkpoint_file.hpp: atomic write, size bound, CRC checked
// before parsing, whole-file checks)
// with, per parameter in the model's order,
//
//   prunable, csr        "<name>/row_offsets" (u32, rows + 1), "<name>/columns" (u32), "<name>/values"
//   prunable, two_four   "<name>/values", "<name>/indices" (compressed_24.hpp)
//   any other            "<name>": its values, dense
//
// values in the model's storage type, numbers in this machine's byte order
// (as the trainer's sections). The signature names the format, the storage
// type and every parameter's name and shape: another model's file is refused.
//
//   prune::save_sparse("net.sparse", m, prune::sparse_format::csr);
//   prune::load_sparse("net.sparse", m);  // parameters (zeros where pruned) and masks
//
// A 2:4 file stores two positions per group of four: a group that kept fewer
// comes back keeping two, the extra ones with value zero.
#pragma once

#include "../io/checkpoint_file.hpp"
#include "compressed_24.hpp"
#include "csr.hpp"
#include "masks.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace tenet::prune {

enum class sparse_format { csr, two_four };

namespace detail {

inline std::string sparse_signature_prefix(sparse_format f)
{
    return std::string("tenet-sparse/") + (f == sparse_format::csr ? "csr" : "2:4") + "/";
}

template <class Model>
std::string sparse_signature(Model& model, sparse_format f)
{
    std::string s = sparse_signature_prefix(f) + tenet::element_name<typename Model::storage_type> + ":";
    model.for_each_parameter([&](const std::string& name, auto value, auto) {
        using shape = typename decltype(value)::shape;
        s += " " + name + "[";
        for (std::size_t i = 0; i < shape::rank; ++i) s += (i ? "," : "") + std::to_string(shape::extents[i]);
        s += "]";
    });
    return s;
}

// The most bytes save_sparse can write for this model, a u32 column index
// and a u32 row offset for every element at worst: a larger file is refused
// before it is read.
template <class Model>
std::uint64_t sparse_size_bound(Model& model, const std::string& signature)
{
    std::uint64_t payload = 0;
    std::size_t sections = 0;
    model.for_each_parameter([&](const std::string&, auto value, auto) {
        payload += (decltype(value)::shape::numel + 1) * (sizeof(typename Model::storage_type) + 8);
        sections += 3;
    });
    return io::checkpoint_size_bound(signature, sections, payload);
}

template <class T>
io::checkpoint_section section_of(std::string name, const std::vector<T>& values)
{
    std::vector<std::byte> bytes(values.size() * sizeof(T));
    if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
    return {std::move(name), std::move(bytes)};
}

// The section called name, of count T's, as a vector.
template <class T>
std::vector<T> read_section(const std::string& path, const io::checkpoint_contents& contents, const std::string& name,
                            std::size_t count)
{
    const io::checkpoint_section& s = io::find_section(path, contents, name, count * sizeof(T));
    std::vector<T> out(count);
    if (count != 0) std::memcpy(out.data(), s.bytes.data(), s.bytes.size());
    return out;
}

template <class Shape>
inline constexpr std::size_t cols_of = Shape::extents[Shape::rank - 1];

}  // namespace detail

// Writes every parameter of the masks' model, the prunable ones in format f
// (two_four: every group of four keeps at most two, else tenet::error and no
// file; every prunable weight's last extent must be a multiple of 4).
template <class Model>
void save_sparse(const std::string& path, masks<Model>& m, sparse_format f)
{
    Model& model = m.model();
    io::checkpoint_contents contents{detail::sparse_signature(model, f), 0, {}};
    model.for_each_parameter([&](const std::string& name, auto value, auto) {
        using shape = typename decltype(value)::shape;
        if constexpr (is_prunable_shape<shape>) {
            const auto keep = make_view<shape, typename Model::place>(
                static_cast<const bool*>(m.data()) + (value.data() - model.parameters()));
            if (f == sparse_format::csr) {
                const auto w = to_csr(value, keep);
                contents.sections.push_back(detail::section_of(name + "/row_offsets", w.row_offsets));
                contents.sections.push_back(detail::section_of(name + "/columns", w.columns));
                contents.sections.push_back(detail::section_of(name + "/values", w.values));
            } else if constexpr (detail::cols_of<shape> % 4 == 0) {
                const auto w = compress_24(value, keep);
                contents.sections.push_back(detail::section_of(name + "/values", w.values));
                contents.sections.push_back(detail::section_of(name + "/indices", w.indices));
            } else {
                throw error("tenet: prune::save_sparse: 2:4 needs groups of 4 along the last axis; " + name +
                            " has " + std::to_string(detail::cols_of<shape>) + " columns");
            }
        } else {
            const auto host = detail::on_host(value);
            current_stream().synchronize();
            contents.sections.push_back(
                detail::section_of(name, std::vector(host.data(), host.data() + shape::numel)));
        }
    });
    io::write_checkpoint_file(path, contents);
}

// Restores what save_sparse wrote for this model: its parameters (dense,
// zeros where pruned) and the masks (true where stored). The whole file is
// checked first (container, signature, every section's size and the
// structure of every compressed weight): on any inconsistency format_error
// (io_error when unreadable) is thrown and neither the model nor the masks
// have changed.
template <class Model>
void load_sparse(const std::string& path, masks<Model>& m)
{
    using storage = typename Model::storage_type;
    constexpr std::size_t numel = Model::flat_numel;
    Model& model = m.model();
    // Checked (size, checksum, layout) before its signature says the format.
    const std::uint64_t bound = detail::sparse_size_bound(model, detail::sparse_signature(model, sparse_format::csr));
    const io::checkpoint_contents contents = io::read_checkpoint_contents(path, bound);
    const sparse_format f = contents.signature.starts_with(detail::sparse_signature_prefix(sparse_format::two_four))
                                ? sparse_format::two_four
                                : sparse_format::csr;
    io::check_checkpoint_signature(path, contents.signature, detail::sparse_signature(model, f));

    std::vector<storage> values(numel, convert<storage>(0.0f));  // the padding stays 0
    std::vector<char> keep(numel, 1);
    std::size_t sections = 0;
    model.for_each_parameter([&](const std::string& name, auto value, auto) {
        using shape = typename decltype(value)::shape;
        const std::size_t offset = static_cast<std::size_t>(value.data() - model.parameters());
        std::vector<storage> dense;
        if constexpr (is_prunable_shape<shape>) {
            constexpr std::size_t cols = detail::cols_of<shape>, rows = shape::numel / cols;
            const std::string where = path + ": " + name;
            if (f == sparse_format::csr) {
                csr_matrix<storage> w{rows, cols, {}, {}, {}};
                w.row_offsets = detail::read_section<std::uint32_t>(path, contents, name + "/row_offsets", rows + 1);
                const std::size_t entries = w.row_offsets.back();
                w.columns = detail::read_section<std::uint32_t>(path, contents, name + "/columns", entries);
                w.values = detail::read_section<storage>(path, contents, name + "/values", entries);
                w.check(where);
                dense = w.to_dense();
                for (std::size_t i = 0; i < shape::numel; ++i) keep[offset + i] = 0;
                for (std::size_t r = 0; r < rows; ++r)
                    for (std::uint32_t j = w.row_offsets[r]; j < w.row_offsets[r + 1]; ++j)
                        keep[offset + r * cols + w.columns[j]] = 1;
                sections += 3;
            } else {
                compressed_24<storage> w{rows, cols, {}, {}};
                w.values = detail::read_section<storage>(path, contents, name + "/values", shape::numel / 2);
                w.indices = detail::read_section<std::uint8_t>(path, contents, name + "/indices", rows * w.row_bytes());
                w.check(where);
                dense = w.to_dense();
                for (std::size_t i = 0; i < shape::numel; ++i) keep[offset + i] = 0;
                for (std::size_t r = 0; r < rows; ++r)
                    for (std::size_t g = 0; g < w.groups_per_row(); ++g) {
                        const unsigned n = w.nibble(r, g);
                        keep[offset + r * cols + 4 * g + (n & 3u)] = 1;
                        keep[offset + r * cols + 4 * g + (n >> 2)] = 1;
                    }
                sections += 2;
            }
        } else {
            dense = detail::read_section<storage>(path, contents, name, shape::numel);
            sections += 1;
        }
        std::copy(dense.begin(), dense.end(), values.begin() + static_cast<std::ptrdiff_t>(offset));
    });
    if (contents.sections.size() != sections)
        throw format_error(path, "has " + std::to_string(contents.sections.size()) + " sections, this model's " +
                                     std::string(f == sparse_format::csr ? "csr" : "2:4") + " form has " +
                                     std::to_string(sections));

    tenet::copy_bytes<typename Model::place, Host>(model.parameters(), values.data(), numel * sizeof(storage),
                                                           current_stream());
    current_stream().synchronize();  // values is ours
    m.from_host(keep, path);
}

}  // namespace tenet::prune
