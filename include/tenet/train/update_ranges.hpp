// Where the fused update finds each trainable parameter, and the ranges it
// walks with parameter groups (optimizer.hpp fills in their settings).
#pragma once

#include "fused_update.hpp"
#include "parameter_groups.hpp"
#include "parameter_shard.hpp"
#include "../nn/layer.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace tenet::train::detail {

// Every trainable parameter's name, rank and layer kind, in the model's
// order. The kinds come from the leaf layers (model::for_each_layer), each
// parameter known by where its values start.
template <class Model>
std::vector<parameter_identity> trainable_parameters(Model& model)
{
    std::map<const void*, std::string_view> kinds;
    if constexpr (requires { model.for_each_layer([](auto&) {}); })
        model.for_each_layer([&](auto& layer) {
            constexpr std::string_view kind = nn::layer_kind_v<std::remove_cvref_t<decltype(layer)>>;
            layer.for_each_parameter([&](const std::string&, auto value, auto) { kinds[value.data()] = kind; }, "");
        });
    std::vector<parameter_identity> out;
    model.for_each_parameter([&](const std::string& name, auto value, auto) {
        if (model.is_frozen(value.data())) return;
        const auto kind = kinds.find(value.data());
        out.push_back({name, decltype(value)::shape::rank, std::string(kind == kinds.end() ? "" : kind->second)});
    });
    return out;
}

// Every trainable parameter's elements in the flat buffers (settings default).
template <class Model>
std::vector<segment> trainable_segments(Model& model)
{
    std::vector<segment> list;
    model.for_each_parameter([&](const std::string&, auto value, auto) {
        if (model.is_frozen(value.data())) return;
        const auto begin = static_cast<std::uint64_t>(value.data() - model.parameters());
        list.push_back({begin, begin + decltype(value)::shape::numel});
    });
    return list;
}

// The update's ranges over [0, numel): each parameter's run extended to the
// next one's start (padding trains with it), cut to the shard and counted
// from its start. One per parameter the shard touches, whatever the
// settings, so rewriting them never moves the table.
inline std::vector<segment> shard_ranges(const std::vector<segment>& list, std::uint64_t numel,
                                         const parameter_shard& shard)
{
    std::vector<segment> out;
    for (std::size_t p = 0; p < list.size(); ++p) {
        const std::uint64_t begin = p == 0 ? 0 : list[p].begin;
        const std::uint64_t end = p + 1 == list.size() ? numel : list[p + 1].begin;
        const std::uint64_t b = std::max<std::uint64_t>(begin, shard.begin);
        const std::uint64_t e = std::min<std::uint64_t>(end, shard.end);
        if (b < e) out.push_back({b - shard.begin, e - shard.begin, list[p].lr_scale, list[p].weight_decay});
    }
    return out;
}

}  // namespace tenet::train::detail
