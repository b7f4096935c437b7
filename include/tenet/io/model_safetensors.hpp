// A model's parameters and buffers as a safetensors file with PyTorch's
// state_dict names and layouts, so weights move between tenet and PyTorch:
//
//   io::save_safetensors(net, "mlp.safetensors");      // torch: load_state_dict(load_file(...))
//   io::load_safetensors(net, "from_torch.safetensors");
//
// - Names are tenet's, which are PyTorch's ("0.weight", "2.running_mean").
//   Linear weights are [out, in] in both. Convolution weights -- tenet's only
//   rank-4 parameters -- are [out, kh, kw, in/groups] in tenet and
//   [out, in/groups, kh, kw] in PyTorch: transposed on the way. A Linear
//   after a conv net's flatten reads PyTorch's (c, h, w) feature order only
//   behind nn::FlattenCHW (nn::Flatten keeps tenet's (h, w, c): the same
//   names and shapes load, and the logits are wrong). BatchNorm's
//   running statistics are buffers in both; PyTorch's num_batches_tracked
//   (i64) is written as the model's training-forward count and ignored on
//   loading (tenet's momentum never reads it).
// - Saving writes the storage type (F32, BF16, F16, ...); loading converts
//   any floating dtype into it with tenet::convert (correctly rounded).
// - Strict by default: every missing, unexpected and mismatched (shape or
//   dtype) name is listed in one tenet::error and the model is unchanged. Not
//   strict: what matches is loaded and the rest is returned.
// - Strict or not, a value no model holds (inf or NaN, once converted; a
//   negative running_var: io/model_values.hpp) is a format_error naming the
//   file and the tensor, and nothing is loaded.
// Works for models in any place (device models are staged through the host).
#pragma once

#include "../memory/copy_bytes.hpp"
#include "../memory/stream.hpp"
#include "model_values.hpp"
#include "safetensors.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace tenet::io {

// What a load left out (empty after a strict load, which throws instead).
struct safetensors_report {
    std::vector<std::string> missing;     // the model's names the file lacks
    std::vector<std::string> unexpected;  // the file's names the model lacks
    std::vector<std::string> mismatched;  // in both, but of another shape or an unconvertible dtype
    bool complete() const { return missing.empty() && unexpected.empty() && mismatched.empty(); }
};

namespace detail {

// PyTorch's shape of a tenet parameter of shape `dims`.
inline std::vector<std::size_t> torch_shape(std::vector<std::size_t> dims)
{
    if (dims.size() == 4) return {dims[0], dims[3], dims[1], dims[2]};
    return dims;
}

// [O, H, W, I] <-> [O, I, H, W] (to_torch) for rank-4 parameters; the
// identity otherwise.
template <class T>
std::vector<T> torch_layout(const std::vector<T>& values, const std::vector<std::size_t>& dims, bool to_torch)
{
    if (dims.size() != 4) return values;
    const std::size_t O = dims[0], H = dims[1], W = dims[2], I = dims[3];
    std::vector<T> out(values.size());
    for (std::size_t o = 0; o < O; ++o)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t w = 0; w < W; ++w)
                for (std::size_t i = 0; i < I; ++i) {
                    const std::size_t ohwi = ((o * H + h) * W + w) * I + i, oihw = ((o * I + i) * H + h) * W + w;
                    if (to_torch) out[oihw] = values[ohwi];
                    else out[ohwi] = values[oihw];
                }
    return out;
}

template <class View>
std::vector<std::size_t> dims_of(const View&)
{
    constexpr auto extents = View::shape::extents;
    return std::vector<std::size_t>(extents.begin(), extents.end());
}

// Every parameter, then every buffer: f(name, view).
template <class Model, class F>
void for_each_tensor(Model& model, F&& f)
{
    model.for_each_parameter([&](const std::string& name, auto value, auto) { f(name, value); });
    model.for_each_buffer([&](const std::string& name, auto value) { f(name, value); });
}

inline bool ends_with(const std::string& s, const std::string& tail)
{
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

inline std::string joined(const std::vector<std::string>& names)
{
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
}

}  // namespace detail

template <class Model>
void save_safetensors(Model& model, const std::string& path, std::map<std::string, std::string> metadata = {{"format", "pt"}})
{
    using place = typename Model::place;
    std::vector<std::vector<std::byte>> staged;  // host copies, alive until written
    std::vector<tensor_to_save> tensors;
    detail::for_each_tensor(model, [&](const std::string& name, auto value) {
        using T = std::remove_const_t<typename decltype(value)::element_type>;
        const std::vector<std::size_t> dims = detail::dims_of(value);
        std::vector<T> host(decltype(value)::shape::numel);
        copy_bytes<Host, place>(host.data(), value.data(), host.size() * sizeof(T), current_stream());
        current_stream().synchronize();
        const std::vector<T> torch = detail::torch_layout(host, dims, true);
        const auto bytes = std::as_bytes(std::span<const T>(torch));
        staged.emplace_back(bytes.begin(), bytes.end());
        tensors.push_back({name, std::string(detail::dtype_of<T>()), detail::torch_shape(dims), staged.back()});
        if (detail::ends_with(name, "running_mean")) {  // PyTorch's BatchNorm also keeps a count
            const auto count = static_cast<std::int64_t>(model.step());
            const auto* b = reinterpret_cast<const std::byte*>(&count);
            staged.emplace_back(b, b + sizeof count);
            tensors.push_back({name.substr(0, name.size() - 12) + "num_batches_tracked", "I64", {}, staged.back()});
        }
    });
    save_tensors(path, tensors, metadata);
}

template <class Model>
safetensors_report load_safetensors(Model& model, const std::string& path, bool strict = true)
{
    using place = typename Model::place;
    const safetensors_file file(path);
    safetensors_report report;
    std::map<std::string, bool> used;
    struct pending {
        void* to;
        std::vector<std::byte> bytes;
    };
    std::vector<pending> loads;
    detail::for_each_tensor(model, [&](const std::string& name, auto value) {
        using T = std::remove_const_t<typename decltype(value)::element_type>;
        if (detail::ends_with(name, "running_mean")) used[name.substr(0, name.size() - 12) + "num_batches_tracked"] = true;
        if (!file.contains(name)) return report.missing.push_back(name);
        used[name] = true;
        const std::vector<std::size_t> dims = detail::dims_of(value);
        std::vector<T> torch(decltype(value)::shape::numel);
        try {
            file.read(name, torch.data(), detail::torch_shape(dims));
        } catch (const format_error& e) {
            std::string why = e.what();
            const std::string prefix = "tenet: " + path + ": tensor " + name + " ";
            if (why.rfind(prefix, 0) == 0) why.erase(0, prefix.size());  // (the path and name are said once)
            return report.mismatched.push_back(name + " (" + why + ")");
        }
        if constexpr (is_floating_v<T>)
            for (std::size_t i = 0; i < torch.size(); ++i)
                if (const char* why = implausible_value(name, convert<f64>(torch[i])); *why)
                    throw format_error(path, "tensor " + name + ": element " + std::to_string(i) + " is " +
                                                 std::to_string(convert<f64>(torch[i])) + ": " + why +
                                                 " (nothing loaded)");
        const std::vector<T> values = detail::torch_layout(torch, dims, false);
        const auto bytes = std::as_bytes(std::span<const T>(values));
        loads.push_back({value.data(), {bytes.begin(), bytes.end()}});
    });
    for (const auto& [name, tensor] : file.tensors())
        if (!used.count(name)) report.unexpected.push_back(name);
    if (strict && !report.complete())
        throw format_error(path, "does not match the model (nothing loaded): missing [" + detail::joined(report.missing) +
                                     "], unexpected [" + detail::joined(report.unexpected) + "], mismatched [" +
                                     detail::joined(report.mismatched) + "]");
    for (const pending& p : loads) copy_bytes<place, Host>(p.to, p.bytes.data(), p.bytes.size(), current_stream());
    current_stream().synchronize();
    return report;
}

}  // namespace tenet::io
