// batch_loader<Storage, Batch, Features, Place>: fixed-shape batches over a
// split, in a (seeded, per-epoch) shuffled order, ready for a static-shape
// model: x [Batch, Features] of transformed pixels, labels and a validity
// mask [Batch]. The last batch of an epoch is padded to Batch rows: padding
// rows have x 0, label 0 and valid 0 (cross_entropy ignores them).
//
//   data::batch_loader<bf16, 256, 784, Device> loader(mnist.train);
//   decltype(loader)::batch b;
//   loader.start_epoch(seed, epoch);
//   while (loader.next(b)) step(b.x(), b.labels(), b.valid());
//
// Pixels become values through a transform computed in f32 once per pixel
// value (a 256-entry table), then rounded to Storage by convert.
//
// Data parallelism: with shard{rank, count} each of count ranks takes its
// part of every global batch of Batch * count rows (see shard).
//
// The order, sharding, padding and the Device prefetch (two slots, pinned
// staging, a private copy stream) are batch_pipeline's; this loader only
// writes pixels and labels into a slot.
//
// Lifetime: a batch from next() stays valid for work queued on the compute
// stream (Host: done) before the following call to next(). The split must
// outlive the loader.
#pragma once

#include "../memory/stream.hpp"
#include "../numeric/convert.hpp"
#include "../tensor/tensor.hpp"
#include "batch_pipeline.hpp"
#include "fashion_mnist.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

namespace tenet::data {

using pixel_transform = std::function<f32(std::uint8_t)>;

// (p / 255 - mean) / std, in f32.
struct normalize_pixels {
    f32 mean = fashion_mnist_mean;
    f32 std = fashion_mnist_std;
    f32 operator()(std::uint8_t p) const { return (static_cast<f32>(p) / 255.0f - mean) / std; }
};

template <class Storage, std::size_t Batch, std::size_t Features, class Place = Device>
class batch_loader {
    static_assert(element<Storage>, "tenet: batch_loader<Storage, ...>: Storage is not a tenet element type");
    static_assert(memory_place<Place>, "tenet: batch_loader<..., Place>: Place is Host, HostPinned or Device");
    static_assert(Batch > 0 && Features > 0, "tenet: batch_loader: Batch and Features must be positive");

    using pipeline = batch_pipeline<Place>;
    // One slot: x, then labels, then (the pipeline's) valid, each 256-byte aligned.
    static constexpr std::size_t labels_offset = detail::align_slot(Batch * Features * sizeof(Storage));
    static constexpr std::size_t payload_bytes = labels_offset + Batch * sizeof(std::int32_t);
    static constexpr std::size_t valid_offset = pipeline::valid_offset(payload_bytes);

public:
    using x_view = TensorView<Storage, contiguous_layout<Shape<Batch, Features>>, Place>;
    using row_view = TensorView<std::int32_t, contiguous_layout<Shape<Batch>>, Place>;

    // Views of one slot. Accessors, not view members: assigning a view
    // writes elements, so views cannot be re-pointed at the next slot.
    class batch {
    public:
        x_view x() const noexcept { return x_view(reinterpret_cast<Storage*>(slot_.base)); }
        row_view labels() const noexcept
        {
            return row_view(reinterpret_cast<std::int32_t*>(slot_.base + labels_offset));
        }
        row_view valid() const noexcept  // 1 for a sample, 0 for padding
        {
            return row_view(reinterpret_cast<std::int32_t*>(slot_.base + valid_offset));
        }
        std::size_t rows() const noexcept { return slot_.rows; }  // samples; the rest is padding

    private:
        friend batch_loader;
        typename pipeline::slot slot_;
    };

    explicit batch_loader(const mnist_split& split, const pixel_transform& transform = normalize_pixels{},
                          stream_ref compute = current_stream(), shard part = {})
        : split_(checked(split)), pipeline_(split.count, Batch, payload_bytes, compute, part, "batch_loader")
    {
        for (unsigned p = 0; p != table_.size(); ++p)
            table_[p] = convert<Storage>(transform(static_cast<std::uint8_t>(p)));
    }
    // The loader keeps a reference: a temporary split would dangle.
    batch_loader(mnist_split&&, const pixel_transform& = normalize_pixels{}, stream_ref = current_stream(),
                 shard = {}) = delete;
    batch_loader(const batch_loader&) = delete;
    batch_loader& operator=(const batch_loader&) = delete;

    // The same on every rank of a shard: global batches of Batch * count rows.
    std::size_t batches_per_epoch() const noexcept { return pipeline_.batches_per_epoch(); }

    const shard& part() const noexcept { return pipeline_.part(); }

    // A profiler told of each batch's fill and host-to-device copy (batch_pipeline::observe).
    void observe(profile::step_observer* observer) noexcept { pipeline_.observe(observer); }

    // The epoch's order: permutation(count, seed, epoch), or the split's own
    // order without shuffling. Device: the first batch's copy starts here.
    void start_epoch(std::uint64_t seed, std::uint64_t epoch, bool shuffle = true)
    {
        pipeline_.start_epoch(seed, epoch, shuffle, filler());
    }

    // The epoch's next batch; false (and `out` untouched) after the last.
    bool next(batch& out) { return pipeline_.next(out.slot_, filler()); }

private:
    static const mnist_split& checked(const mnist_split& split)
    {
        if (split.labels.size() != split.count || split.images.size() != split.count * Features)
            throw error("tenet: batch_loader: a split of " + std::to_string(split.count) + " samples needs " +
                        std::to_string(split.count * Features) + " pixels and " + std::to_string(split.count) +
                        " labels, found " + std::to_string(split.images.size()) + " and " +
                        std::to_string(split.labels.size()));
        return split;
    }

    // The samples' pixels and labels into a slot's rows (the pipeline pads).
    auto filler() const
    {
        return [this](std::byte* base, std::span<const std::uint32_t> samples) {
            auto* x = reinterpret_cast<Storage*>(base);
            auto* labels = reinterpret_cast<std::int32_t*>(base + labels_offset);
            detail::fill_rows(samples, Features, [&](std::size_t r, std::size_t sample) {
                const std::uint8_t* pixels = split_.images.data() + sample * Features;
                for (std::size_t f = 0; f != Features; ++f) x[r * Features + f] = table_[pixels[f]];
                labels[r] = split_.labels[sample];
            });
        };
    }

    const mnist_split& split_;
    pipeline pipeline_;
    std::array<Storage, 256> table_{};
};

}  // namespace tenet::data
