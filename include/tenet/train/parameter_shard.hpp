// parameter_shard: the elements [begin, end) of a model's flat parameter
// buffer whose master weights and optimizer state one optimizer keeps. A
// whole optimizer keeps [0, numel); under ZeRO stage 1 (trainer_options::zero)
// rank r of P keeps of(numel, r, P): P equal shards of numel / P elements,
// the last also holding the numel mod P left over -- the layout a
// reduce-scatter of equal pieces and an all-gather produce in place.
#pragma once

#include "../memory/error.hpp"

#include <cstddef>
#include <string>

namespace tenet::train {

struct parameter_shard {
    std::size_t begin = 0;
    std::size_t end = 0;

    constexpr std::size_t size() const { return end - begin; }

    static constexpr parameter_shard whole(std::size_t numel) { return {0, numel}; }

    // Rank `rank` of `ranks`' shard of numel elements.
    static constexpr parameter_shard of(std::size_t numel, std::size_t rank, std::size_t ranks)
    {
        const std::size_t piece = numel / ranks;
        const std::size_t begin = rank * piece;
        return {begin, rank + 1 == ranks ? numel : begin + piece};
    }

    // The largest shard among `ranks` (the last rank's): what a rank holds at most.
    static constexpr std::size_t largest(std::size_t numel, std::size_t ranks)
    {
        return numel / ranks + numel % ranks;
    }

    bool operator==(const parameter_shard&) const = default;
};

// tenet::error unless `shard` lies within numel elements.
inline void check_shard(const parameter_shard& shard, std::size_t numel)
{
    if (shard.begin > shard.end || shard.end > numel)
        throw error("tenet: optimizer: shard [" + std::to_string(shard.begin) + ", " + std::to_string(shard.end) +
                    ") does not lie within the model's " + std::to_string(numel) + " parameters");
}

}  // namespace tenet::train
