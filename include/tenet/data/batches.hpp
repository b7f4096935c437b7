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
// Device: two slots, each a pinned staging buffer and a device buffer. While
// the caller works on batch k, the host has already filled batch k+1 into the
// other slot's staging buffer and queued its copy on a private copy stream;
// next() only makes the compute stream wait for that copy (an event), so the
// copy overlaps the previous step's kernels. Before a slot is refilled, the
// copy stream waits for an event recorded on the compute stream, so device
// work queued before the refill still reads the old batch.
// Host places: the batch is written straight into one of two host slots.
//
// Lifetime: a batch from next() stays valid for work queued on the compute
// stream (Host: done) before the following call to next(). The split must
// outlive the loader.
#pragma once

#include "../memory/buffer.hpp"
#include "../memory/cuda_check.hpp"
#include "../memory/device.hpp"
#include "../memory/stream.hpp"
#include "../numeric/convert.hpp"
#include "../profile/nvtx.hpp"
#include "../tensor/tensor.hpp"
#include "fashion_mnist.hpp"
#include "shuffle.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <numeric>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace tenet::data {

using pixel_transform = std::function<f32(std::uint8_t)>;

// (p / 255 - mean) / std, in f32.
struct normalize_pixels {
    f32 mean = fashion_mnist_mean;
    f32 std = fashion_mnist_std;
    f32 operator()(std::uint8_t p) const { return (static_cast<f32>(p) / 255.0f - mean) / std; }
};

// One rank's share of a data-parallel run: every global batch of
// Batch * count rows, taken in the epoch's order (the same on every rank:
// same seed, same epoch), is cut into count consecutive parts of Batch rows,
// and the rank takes part `rank`. So every rank has the same number of
// batches per epoch, the ranks' parts of one step are that step's global
// batch in rank order, and each sample is in exactly one rank's batch once
// per epoch; in the last, padded global batch a rank may have fewer real
// rows than Batch, or none (valid 0 throughout).
struct shard {
    std::size_t rank = 0;
    std::size_t count = 1;
};

namespace detail {

class cuda_event {
public:
    cuda_event() { TENET_CUDA_CHECK(cudaEventCreateWithFlags(&handle_, cudaEventDisableTiming)); }
    cuda_event(const cuda_event&) = delete;
    cuda_event& operator=(const cuda_event&) = delete;
    ~cuda_event() { cudaEventDestroy(handle_); }
    cudaEvent_t get() const noexcept { return handle_; }

private:
    cudaEvent_t handle_ = nullptr;
};

// A Device loader's copy machinery: per slot, a pinned staging buffer, an
// event after its copy, and an event after the compute work queued on it.
struct copy_pipeline {
    copy_pipeline(std::size_t bytes, stream_ref s)
        : staging{buffer<std::byte, HostPinned>(bytes, s), buffer<std::byte, HostPinned>(bytes, s)}
    {
    }
    stream copies;
    std::array<buffer<std::byte, HostPinned>, 2> staging;
    std::array<cuda_event, 2> copied, consumed;
};

constexpr std::size_t align_slot(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace detail

template <class Storage, std::size_t Batch, std::size_t Features, class Place = Device>
class batch_loader {
    static_assert(element<Storage>, "tenet: batch_loader<Storage, ...>: Storage is not a tenet element type");
    static_assert(memory_place<Place>, "tenet: batch_loader<..., Place>: Place is Host, HostPinned or Device");
    static_assert(Batch > 0 && Features > 0, "tenet: batch_loader: Batch and Features must be positive");

    static constexpr bool on_device = std::is_same_v<Place, Device>;
    // One slot: x, then labels, then valid, each 256-byte aligned.
    static constexpr std::size_t labels_offset = detail::align_slot(Batch * Features * sizeof(Storage));
    static constexpr std::size_t valid_offset = labels_offset + detail::align_slot(Batch * sizeof(std::int32_t));
    static constexpr std::size_t slot_bytes = valid_offset + Batch * sizeof(std::int32_t);

public:
    using x_view = TensorView<Storage, contiguous_layout<Shape<Batch, Features>>, Place>;
    using row_view = TensorView<std::int32_t, contiguous_layout<Shape<Batch>>, Place>;

    // Views of one slot. Accessors, not view members: assigning a view
    // writes elements, so views cannot be re-pointed at the next slot.
    class batch {
    public:
        x_view x() const noexcept { return x_view(reinterpret_cast<Storage*>(base_)); }
        row_view labels() const noexcept { return row_view(reinterpret_cast<std::int32_t*>(base_ + labels_offset)); }
        row_view valid() const noexcept  // 1 for a sample, 0 for padding
        {
            return row_view(reinterpret_cast<std::int32_t*>(base_ + valid_offset));
        }
        std::size_t rows() const noexcept { return rows_; }  // samples; the rest is padding

    private:
        friend batch_loader;
        std::byte* base_ = nullptr;
        std::size_t rows_ = 0;
    };

    explicit batch_loader(const mnist_split& split, const pixel_transform& transform = normalize_pixels{},
                          stream_ref compute = current_stream(), shard part = {})
        : split_(checked(split)), part_(checked(part)), compute_(compute),
          slots_{allocate_slot(compute), allocate_slot(compute)}
    {
        for (unsigned p = 0; p != table_.size(); ++p)
            table_[p] = convert<Storage>(transform(static_cast<std::uint8_t>(p)));
        if constexpr (on_device) pipeline_.emplace(slot_bytes, compute);
    }
    // The loader keeps a reference: a temporary split would dangle.
    batch_loader(mnist_split&&, const pixel_transform& = normalize_pixels{}, stream_ref = current_stream(),
                 shard = {}) = delete;
    batch_loader(const batch_loader&) = delete;
    batch_loader& operator=(const batch_loader&) = delete;

    // Copies may still be in flight: their staging buffers must outlive them,
    // and the device buffers are freed in compute-stream order after them.
    ~batch_loader()
    {
        if (!pipeline_) return;
        for (std::size_t s = 0; s != 2; ++s) {
            cudaEventSynchronize(pipeline_->copied[s].get());
            cudaStreamWaitEvent(compute_.get(), pipeline_->copied[s].get(), 0);
        }
    }

    // The same on every rank of a shard: global batches of Batch * count rows.
    std::size_t batches_per_epoch() const noexcept
    {
        const std::size_t global = Batch * part_.count;
        return (split_.count + global - 1) / global;
    }

    const shard& part() const noexcept { return part_; }

    // The epoch's order: permutation(count, seed, epoch), or the split's own
    // order without shuffling. Device: the first batch's copy starts here.
    void start_epoch(std::uint64_t seed, std::uint64_t epoch, bool shuffle = true)
    {
        if (shuffle) {
            order_ = permutation(split_.count, seed, epoch);
        } else {
            order_.resize(split_.count);
            std::iota(order_.begin(), order_.end(), std::uint32_t{0});
        }
        handed_ = 0;
        started_ = true;
        if constexpr (on_device)
            if (batches_per_epoch() > 0) stage(0, slot_);
    }

    // The epoch's next batch; false (and `out` untouched) after the last.
    bool next(batch& out)
    {
        if (!started_) throw error("tenet: batch_loader::next called before start_epoch");
        if (handed_ == batches_per_epoch()) return false;
        const std::size_t s = slot_;
        if constexpr (on_device) {
            TENET_CUDA_CHECK(cudaStreamWaitEvent(compute_.get(), pipeline_->copied[s].get(), 0));
            if (handed_ + 1 < batches_per_epoch()) stage(handed_ + 1, 1 - s);
        } else {
            profile::scoped_range range("data");
            fill(slots_[s].data(), handed_);
        }
        out.base_ = slots_[s].data();
        out.rows_ = rows_of(handed_);
        ++handed_;
        slot_ = 1 - s;
        return true;
    }

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

    static shard checked(shard part)
    {
        if (part.count == 0 || part.rank >= part.count)
            throw error("tenet: batch_loader: shard rank " + std::to_string(part.rank) + " of " +
                        std::to_string(part.count) + " ranks (a rank must be below the count, the count at least 1)");
        return part;
    }

    // Batch b's first position in the epoch's order, and its real rows.
    std::size_t first_of(std::size_t b) const noexcept { return (b * part_.count + part_.rank) * Batch; }
    std::size_t rows_of(std::size_t b) const noexcept
    {
        const std::size_t first = first_of(b);
        return first < split_.count ? std::min(Batch, split_.count - first) : 0;
    }

    static buffer<std::byte, Place> allocate_slot(stream_ref s)
    {
        if constexpr (on_device) require_device();  // a clear error before any CUDA call fails
        return buffer<std::byte, Place>(slot_bytes, s);
    }

    // Batch b of the epoch's order into a slot's host memory.
    void fill(std::byte* base, std::size_t b) const
    {
        auto* x = reinterpret_cast<Storage*>(base);
        auto* labels = reinterpret_cast<std::int32_t*>(base + labels_offset);
        auto* valid = reinterpret_cast<std::int32_t*>(base + valid_offset);
        const std::size_t rows = rows_of(b), first = first_of(b);
        for (std::size_t r = 0; r != rows; ++r) {
            const std::size_t sample = order_[first + r];
            const std::uint8_t* pixels = split_.images.data() + sample * Features;
            for (std::size_t f = 0; f != Features; ++f) x[r * Features + f] = table_[pixels[f]];
            labels[r] = split_.labels[sample];
            valid[r] = 1;
        }
        std::fill(x + rows * Features, x + Batch * Features, convert<Storage>(0.0f));
        std::fill(labels + rows, labels + Batch, 0);
        std::fill(valid + rows, valid + Batch, 0);
    }

    // Device: batch b into slot s, once the compute work queued so far (which
    // may read the slot's previous batch) is done.
    void stage(std::size_t b, std::size_t s)
    {
        profile::scoped_range range("data transfer");
        auto& p = *pipeline_;
        TENET_CUDA_CHECK(cudaEventRecord(p.consumed[s].get(), compute_.get()));
        TENET_CUDA_CHECK(cudaEventSynchronize(p.copied[s].get()));  // the staging buffer's last copy has left
        fill(p.staging[s].data(), b);
        TENET_CUDA_CHECK(cudaStreamWaitEvent(p.copies.get(), p.consumed[s].get(), 0));
        TENET_CUDA_CHECK(cudaMemcpyAsync(slots_[s].data(), p.staging[s].data(), slot_bytes, cudaMemcpyHostToDevice,
                                         p.copies.get()));
        TENET_CUDA_CHECK(cudaEventRecord(p.copied[s].get(), p.copies.get()));
    }

    const mnist_split& split_;
    shard part_;
    stream_ref compute_;
    std::array<buffer<std::byte, Place>, 2> slots_;  // what the views show
    std::optional<detail::copy_pipeline> pipeline_;  // Device only
    std::array<Storage, 256> table_{};
    std::vector<std::uint32_t> order_;
    std::size_t handed_ = 0;  // batches handed out this epoch
    std::size_t slot_ = 0;    // the slot the next batch comes from
    bool started_ = false;
};

}  // namespace tenet::data
