// Where the fused update finds each trainable parameter, and the ranges it
// walks with parameter groups (optimizer.hpp fills in their settings).
#pragma once

#include "fused_update.hpp"
#include "parameter_shard.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tenet::train::detail {

// Every trainable parameter's name and rank, in the model's order.
template <class Model>
std::vector<std::pair<std::string, std::size_t>> trainable_parameter_names(Model& model)
{
    std::vector<std::pair<std::string, std::size_t>> out;
    model.for_each_parameter([&](const std::string& name, auto value, auto) {
        if (!model.is_frozen(value.data())) out.emplace_back(name, decltype(value)::shape::rank);
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
