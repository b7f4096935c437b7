// safetensors files (Hugging Face's format, what PyTorch models are shared
// in): an 8-byte little-endian header length, a JSON header mapping each
// tensor's name to its dtype, shape and [begin, end) data offsets (plus an
// optional "__metadata__" of strings), then the raw little-endian data.
//
//   io::save_tensors("w.safetensors", {io::tensor_of("fc.weight", w, {out, in})});
//   io::safetensors_file f("w.safetensors");   // mapped; the header checked whole
//   f.read("fc.weight", w, {out, in});          // converted to w's type
//
// Reading maps the file and checks everything before anything is handed out:
// the header length against the file, the JSON (strict RFC 8259 and UTF-8:
// detail::json_reader; '{' first, only spaces after the object; no name or
// key twice, no key other than dtype, shape and data_offsets in an entry),
// every dtype, shape and byte count, and offsets that tile the data exactly
// (no overlap, no hole: the format's rule against polyglot files). Any fault
// is a format_error naming the file. Loading
// converts with tenet::convert: any floating dtype into any floating type
// (correctly rounded), integers into integers when every value fits, bool
// into bool; anything else is refused rather than guessed.
#pragma once

#include "../numeric/convert.hpp"
#include "../profile/json_text.hpp"
#include "atomic_file.hpp"
#include "byte_reader.hpp"
#include "json_reader.hpp"
#include "mapped_file.hpp"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace tenet::io {

static_assert(std::endian::native == std::endian::little, "tenet: safetensors data is little-endian, as this host must be");

namespace detail {

struct safetensors_dtype {
    std::string_view name;
    std::size_t bytes;
    char kind;  // 'f' floating, 'i' signed, 'u' unsigned, 'b' bool
};

inline constexpr safetensors_dtype safetensors_dtypes[] = {
    {"F64", 8, 'f'}, {"F32", 4, 'f'}, {"F16", 2, 'f'}, {"BF16", 2, 'f'}, {"F8_E4M3", 1, 'f'}, {"F8_E5M2", 1, 'f'},
    {"I64", 8, 'i'}, {"I32", 4, 'i'}, {"I16", 2, 'i'}, {"I8", 1, 'i'},   {"U64", 8, 'u'},     {"U32", 4, 'u'},
    {"U16", 2, 'u'}, {"U8", 1, 'u'},  {"BOOL", 1, 'b'}};

inline const safetensors_dtype* find_dtype(std::string_view name)
{
    for (const auto& d : safetensors_dtypes)
        if (d.name == name) return &d;
    return nullptr;
}

// The dtype a tenet element type is stored as.
template <class T>
constexpr std::string_view dtype_of()
{
    if constexpr (std::is_same_v<T, f64>) return "F64";
    else if constexpr (std::is_same_v<T, f32>) return "F32";
    else if constexpr (std::is_same_v<T, f16>) return "F16";
    else if constexpr (std::is_same_v<T, bf16>) return "BF16";
    else if constexpr (std::is_same_v<T, f8e4m3>) return "F8_E4M3";
    else if constexpr (std::is_same_v<T, f8e5m2>) return "F8_E5M2";
    else if constexpr (std::is_same_v<T, i8>) return "I8";
    else if constexpr (std::is_same_v<T, i32>) return "I32";
    else if constexpr (std::is_same_v<T, bool>) return "BOOL";
    else static_assert(sizeof(T) == 0, "tenet: safetensors: T must be a tenet element type (f64, f32, f16, bf16, fp8, i8, i32, bool)");
}

inline std::string shape_text(std::span<const std::size_t> shape)
{
    std::string out = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
    return out + "]";
}

// n elements of `From` at `bytes` (unaligned), converted into `out`.
template <class From, class T>
void convert_elements(const std::byte* bytes, std::size_t n, T* out)
{
    for (std::size_t i = 0; i < n; ++i) {
        From x;
        std::memcpy(&x, bytes + i * sizeof(From), sizeof(From));
        out[i] = convert<T>(x);
    }
}

// Integers into integer T (or bytes into bool), each checked to fit (never
// saturated; a bool byte other than 0 and 1 is refused).
template <class From, class T>
void narrow_integers(const std::string& path, const std::string& name, const std::byte* bytes, std::size_t n, T* out)
{
    for (std::size_t i = 0; i < n; ++i) {
        From x;
        std::memcpy(&x, bytes + i * sizeof(From), sizeof(From));
        bool fits;
        if constexpr (std::is_same_v<T, bool>) fits = x == 0 || x == 1;
        else fits = std::in_range<T>(x);
        if (!fits)
            throw format_error(path, "tensor " + name + ": element " + std::to_string(i) + " (" + std::to_string(x) +
                                         ") does not fit " + element_name<T>);
        out[i] = static_cast<T>(x);
    }
}

}  // namespace detail

// One tensor of a mapped file: its dtype, its shape, and its bytes where
// they lie in the mapping.
struct safetensor {
    std::string dtype;
    std::vector<std::size_t> shape;
    std::span<const std::byte> bytes;

    std::size_t numel() const
    {
        std::size_t n = 1;
        for (const std::size_t e : shape) n *= e;
        return n;
    }
};

class safetensors_file {
public:
    // Maps the file and checks its header and offsets whole (format_error).
    explicit safetensors_file(const std::string& path) : file_(path) { parse(); }

    const std::string& path() const noexcept { return file_.path(); }
    const std::map<std::string, safetensor>& tensors() const noexcept { return tensors_; }
    const std::map<std::string, std::string>& metadata() const noexcept { return metadata_; }
    bool contains(const std::string& name) const { return tensors_.count(name) != 0; }

    // The tensor called `name`; tenet::error when there is none.
    const safetensor& at(const std::string& name) const
    {
        const auto it = tensors_.find(name);
        if (it == tensors_.end()) throw error("tenet: " + path() + ": no tensor named " + name);
        return it->second;
    }

    // Tensor `name`, which must have `shape`, converted into out[0, numel)
    // (format_error otherwise; out is untouched on any error).
    template <class T>
    void read(const std::string& name, T* out, std::span<const std::size_t> shape) const
    {
        const safetensor& t = at(name);
        if (!std::ranges::equal(t.shape, shape))
            throw format_error(path(), "tensor " + name + " has shape " + detail::shape_text(t.shape) + ", not " +
                                           detail::shape_text(shape));
        const std::size_t n = t.numel();
        const auto values = std::make_unique<T[]>(n);  // (not std::vector: bool)
        convert_into(name, t, values.get());
        std::copy_n(values.get(), n, out);
    }
    template <class T>
    void read(const std::string& name, T* out, std::initializer_list<std::size_t> shape) const
    {
        read(name, out, std::span<const std::size_t>(shape.begin(), shape.size()));
    }

private:
    static constexpr std::uint64_t max_header = 100'000'000;  // as the reference implementation

    template <class T>
    void convert_into(const std::string& name, const safetensor& t, T* out) const
    {
        const std::byte* b = t.bytes.data();
        const std::size_t n = t.numel();
        const char kind = detail::find_dtype(t.dtype)->kind;
        const auto refuse = [&] {
            throw format_error(path(), "tensor " + name + ": dtype " + t.dtype + " does not load into " + element_name<T>);
        };
        if constexpr (std::is_same_v<T, bool>) {
            if (kind != 'b') refuse();
            detail::narrow_integers<std::uint8_t>(path(), name, b, n, out);  // a byte other than 0 and 1 is refused
        } else if constexpr (is_integer_v<T>) {
            if (t.dtype == "I64") detail::narrow_integers<std::int64_t>(path(), name, b, n, out);
            else if (t.dtype == "I32") detail::narrow_integers<std::int32_t>(path(), name, b, n, out);
            else if (t.dtype == "I16") detail::narrow_integers<std::int16_t>(path(), name, b, n, out);
            else if (t.dtype == "I8") detail::narrow_integers<std::int8_t>(path(), name, b, n, out);
            else if (t.dtype == "U64") detail::narrow_integers<std::uint64_t>(path(), name, b, n, out);
            else if (t.dtype == "U32") detail::narrow_integers<std::uint32_t>(path(), name, b, n, out);
            else if (t.dtype == "U16") detail::narrow_integers<std::uint16_t>(path(), name, b, n, out);
            else if (t.dtype == "U8") detail::narrow_integers<std::uint8_t>(path(), name, b, n, out);
            else refuse();
        } else {
            if (t.dtype == "F64") detail::convert_elements<f64>(b, n, out);
            else if (t.dtype == "F32") detail::convert_elements<f32>(b, n, out);
            else if (t.dtype == "F16") detail::convert_elements<f16>(b, n, out);
            else if (t.dtype == "BF16") detail::convert_elements<bf16>(b, n, out);
            else if (t.dtype == "F8_E4M3") detail::convert_elements<f8e4m3>(b, n, out);
            else if (t.dtype == "F8_E5M2") detail::convert_elements<f8e5m2>(b, n, out);
            else refuse();
        }
    }

    void parse()
    {
        const std::span<const std::byte> all = file_.bytes();
        byte_reader in(path(), all, "safetensors header length: ");
        const std::uint64_t length = in.take<std::uint64_t>();
        if (length > max_header) fail("header length " + std::to_string(length) + " exceeds " + std::to_string(max_header));
        byte_reader header_bytes(path(), all.subspan(8), "safetensors header: ");
        const std::string header = header_bytes.take_text(length);
        const std::span<const std::byte> data = all.subspan(8 + static_cast<std::size_t>(length));
        struct placed {
            std::uint64_t begin, end;
            const std::string* name;
        };
        std::vector<placed> spans;
        detail::json_reader json(path(), header, "safetensors header: ");
        json.start();  // as the format says: '{' first, spaces as the only padding
        json.object([&](const std::string& name) {
            if (name == "__metadata__") return read_metadata(json);
            if (tensors_.count(name)) json.fail("tensor " + name + " appears twice");
            std::uint64_t begin = 0, end = 0;
            safetensor t = read_entry(json, name, begin, end);
            if (end > data.size())
                json.fail("tensor " + name + ": data offsets end at " + std::to_string(end) + ", past the " +
                          std::to_string(data.size()) + " data bytes");
            t.bytes = data.subspan(static_cast<std::size_t>(begin), static_cast<std::size_t>(end - begin));
            const auto it = tensors_.emplace(name, std::move(t)).first;
            spans.push_back({begin, end, &it->first});
        });
        json.end(' ');
        check_tiling(spans, data.size());
    }

    void read_metadata(detail::json_reader& json)
    {
        if (has_metadata_) json.fail("__metadata__ appears twice");
        has_metadata_ = true;
        json.object([&](const std::string& key) {
            if (!metadata_.emplace(key, json.string()).second) json.fail("__metadata__ key " + key + " appears twice");
        });
    }

    // One tensor's entry: {"dtype": .., "shape": [..], "data_offsets": [begin, end]}, checked.
    static safetensor read_entry(detail::json_reader& json, const std::string& name, std::uint64_t& begin, std::uint64_t& end)
    {
        safetensor t;
        bool has_dtype = false, has_shape = false, has_offsets = false;
        json.object([&](const std::string& key) {
            if (key == "dtype" && !has_dtype) {
                t.dtype = json.string();
                has_dtype = true;
            } else if (key == "shape" && !has_shape) {
                json.array([&] { t.shape.push_back(static_cast<std::size_t>(json.unsigned_integer())); });
                has_shape = true;
            } else if (key == "data_offsets" && !has_offsets) {
                std::vector<std::uint64_t> offsets;
                json.array([&] { offsets.push_back(json.unsigned_integer()); });
                if (offsets.size() != 2) json.fail("tensor " + name + ": data_offsets must be [begin, end]");
                begin = offsets[0], end = offsets[1];
                has_offsets = true;
            } else {
                json.fail("tensor " + name + ": unexpected or repeated key " + key);
            }
        });
        if (!has_dtype || !has_shape || !has_offsets) json.fail("tensor " + name + ": needs dtype, shape and data_offsets");
        const detail::safetensors_dtype* dtype = detail::find_dtype(t.dtype);
        if (!dtype) json.fail("tensor " + name + ": unknown dtype " + t.dtype);
        if (begin > end) json.fail("tensor " + name + ": data offsets run backwards");
        std::uint64_t bytes = dtype->bytes;
        for (const std::size_t e : t.shape)
            if (e != 0 && bytes > UINT64_MAX / e) json.fail("tensor " + name + ": its shape overflows 64 bits");
            else bytes *= e;
        if (bytes != end - begin)
            json.fail("tensor " + name + ": " + t.dtype + " " + detail::shape_text(t.shape) + " needs " +
                      std::to_string(bytes) + " bytes, its offsets hold " + std::to_string(end - begin));
        return t;
    }

    // The tensors' bytes must tile the data exactly, in some order.
    template <class Placed>
    void check_tiling(std::vector<Placed>& spans, std::size_t data_bytes) const
    {
        std::sort(spans.begin(), spans.end(), [](const Placed& a, const Placed& b) {
            return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
        });
        std::uint64_t at = 0;
        for (const Placed& s : spans) {
            if (s.begin != at)
                fail("tensor " + *s.name + " starts at data offset " + std::to_string(s.begin) + ", not " +
                     std::to_string(at) + (s.begin < at ? " (it overlaps another)" : " (a hole before it)"));
            at = s.end;
        }
        if (at != data_bytes)
            fail("the tensors cover " + std::to_string(at) + " of the " + std::to_string(data_bytes) + " data bytes");
    }

    [[noreturn]] void fail(const std::string& what) const { throw format_error(path(), "safetensors: " + what); }

    mapped_file file_;
    std::map<std::string, safetensor> tensors_;
    std::map<std::string, std::string> metadata_;
    bool has_metadata_ = false;
};

// A tensor to write: its name, dtype, shape and bytes (numel x the dtype's size).
struct tensor_to_save {
    std::string name;
    std::string dtype;
    std::vector<std::size_t> shape;
    std::span<const std::byte> bytes;
};

// data[0, product(shape)) of a tenet element type, to be saved as `name`.
template <class T>
tensor_to_save tensor_of(std::string name, const T* data, std::vector<std::size_t> shape)
{
    std::size_t n = 1;
    for (const std::size_t e : shape) n *= e;
    return {std::move(name), std::string(detail::dtype_of<T>()), std::move(shape),
            std::as_bytes(std::span<const T>(data, n))};
}

// Writes the tensors (and the metadata) as one safetensors file, atomically.
// Data is laid out by item size, then name, so each tensor is aligned to its
// item size, as the reference implementation does; the header is padded
// with spaces to a multiple of 8 bytes. tenet::error for a duplicate name, an
// unknown dtype or bytes that do not match the dtype and shape.
inline void save_tensors(const std::string& path, std::span<const tensor_to_save> tensors,
                         const std::map<std::string, std::string>& metadata = {})
{
    std::vector<const tensor_to_save*> order;
    for (const tensor_to_save& t : tensors) {
        const detail::safetensors_dtype* dtype = detail::find_dtype(t.dtype);
        if (!dtype) throw error("tenet: save_tensors: " + t.name + ": unknown dtype " + t.dtype);
        std::size_t n = dtype->bytes;
        for (const std::size_t e : t.shape) n *= e;
        if (n != t.bytes.size())
            throw error("tenet: save_tensors: " + t.name + ": " + t.dtype + " " + detail::shape_text(t.shape) + " needs " +
                        std::to_string(n) + " bytes, given " + std::to_string(t.bytes.size()));
        if (t.name == "__metadata__") throw error("tenet: save_tensors: __metadata__ is not a tensor name");
        order.push_back(&t);
    }
    std::sort(order.begin(), order.end(), [](const tensor_to_save* a, const tensor_to_save* b) {
        const std::size_t sa = detail::find_dtype(a->dtype)->bytes, sb = detail::find_dtype(b->dtype)->bytes;
        return sa != sb ? sa > sb : a->name < b->name;
    });
    for (std::size_t i = 1; i < order.size(); ++i)
        if (order[i]->name == order[i - 1]->name) throw error("tenet: save_tensors: two tensors named " + order[i]->name);
    std::string header = "{";
    if (!metadata.empty()) {
        header += "\"__metadata__\":{";
        for (auto it = metadata.begin(); it != metadata.end(); ++it) {
            if (it != metadata.begin()) header += ',';
            header += profile::json_string(it->first);
            header += ':';
            header += profile::json_string(it->second);
        }
        header += "}";
    }
    // (appends only: GCC 12's -Wrestrict misfires on "," + string chains in users' -O3 builds)
    std::uint64_t offset = 0;
    for (const tensor_to_save* t : order) {
        if (header.size() > 1) header += ',';
        header += profile::json_string(t->name);
        header += ":{\"dtype\":\"";
        header += t->dtype;
        header += "\",\"shape\":[";
        for (std::size_t i = 0; i < t->shape.size(); ++i) {
            if (i) header += ',';
            header += std::to_string(t->shape[i]);
        }
        header += "],\"data_offsets\":[";
        header += std::to_string(offset);
        header += ',';
        header += std::to_string(offset + t->bytes.size());
        header += "]}";
        offset += t->bytes.size();
    }
    header += "}";
    header.append((8 - header.size() % 8) % 8, ' ');
    std::byte length[8];
    for (std::size_t i = 0; i < 8; ++i) length[i] = static_cast<std::byte>(std::uint64_t{header.size()} >> (8 * i));
    atomic_file out(path);
    out.write(length, sizeof length);
    out.write(reinterpret_cast<const std::byte*>(header.data()), header.size());
    for (const tensor_to_save* t : order) out.write(t->bytes.data(), t->bytes.size());
    out.commit();
}

inline void save_tensors(const std::string& path, std::initializer_list<tensor_to_save> tensors,
                         const std::map<std::string, std::string>& metadata = {})
{
    save_tensors(path, std::span<const tensor_to_save>(tensors.begin(), tensors.size()), metadata);
}

// One tensor of a safetensors file, with `shape`, converted into out.
template <class T>
void load_tensor(const std::string& path, const std::string& name, T* out, std::span<const std::size_t> shape)
{
    safetensors_file(path).read(name, out, shape);
}

}  // namespace tenet::io
