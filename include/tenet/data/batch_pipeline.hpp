// batch_pipeline<Place>: what every loader shares. It owns two slots of
// fixed-size batches, the epoch's order (seeded shuffle or in order), the
// sharding of each global batch across data-parallel ranks, the padding
// and validity mask of the last batch, and on Device the prefetch of the
// next batch through pinned staging memory. A loader only says how to
// write samples into a slot: its fill.
//
//   batch_pipeline<Device> pipe(count, batch, payload_bytes, compute, part, "my_loader");
//   auto fill = [&](std::byte* slot, std::span<const std::uint32_t> samples) {
//       for (std::size_t r = 0; r != samples.size(); ++r) write_row(slot, r, samples[r]);
//   };
//   batch_pipeline<Device>::slot s;
//   pipe.start_epoch(seed, epoch, true, fill);
//   while (pipe.next(s, fill)) step(s.base, s.rows);
//
// A slot is the loader's payload_bytes (its x, targets, ... at offsets it
// chooses), then valid, i32 [batch], at valid_offset(payload_bytes). A fill
// writes the payload's rows [0, samples.size()) in host memory; before a
// batch with fewer rows the pipeline zeroes the slot, so padding rows hold
// zero bytes, and it writes valid itself (1 for a sample, 0 for padding).
//
// Device: while the caller works on batch k, the host has already filled
// batch k+1 into the other slot's staging buffer and queued its copy on a
// private copy stream; next() only makes the compute stream wait for that
// copy (an event), so the copy overlaps the previous step's kernels. Before
// a slot is refilled, the copy stream waits for an event recorded on the
// compute stream, so device work queued before the refill still reads the
// old batch. Host places: the batch is written straight into a host slot.
//
// Lifetime: a slot from next() stays valid for work queued on the compute
// stream (Host: done) before the following call to next(). The fill must
// stay usable until the next call to next() or start_epoch() returns.
#pragma once

#include "../config.hpp"
#include "../exec/host_threads.hpp"
#include "../memory/buffer.hpp"
#include "../memory/cuda_check.hpp"
#include "../memory/device.hpp"
#include "../memory/error.hpp"
#include "../memory/stream.hpp"
#include "../profile/step_observer.hpp"
#include "../profile/nvtx.hpp"
#include "shuffle.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace tenet::data {

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

// Host memory for one slot, zeroed: the gaps between a slot's arrays are
// copied too, and should not be whatever the allocator left.
template <class Place>
buffer<std::byte, Place> zeroed_slot(std::size_t bytes, stream_ref s)
{
    buffer<std::byte, Place> b(bytes, s);
    std::memset(b.data(), 0, bytes);
    return b;
}

// A Device loader's copy machinery: per slot, a pinned staging buffer, an
// event after its copy, and an event after the compute work queued on it.
struct copy_pipeline {
    copy_pipeline(std::size_t bytes, stream_ref s)
        : staging{zeroed_slot<HostPinned>(bytes, s), zeroed_slot<HostPinned>(bytes, s)}
    {
    }
    stream copies;
    std::array<buffer<std::byte, HostPinned>, 2> staging;
    std::array<cuda_event, 2> copied, consumed;
};

constexpr std::size_t align_slot(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

// A fill's loop: write_row(r, sample) for every row r, split across cores
// once the batch holds 32,768 values or more (on the host a batch is
// written between steps, while the step's cores would wait), on as many
// threads as the steps run fastest with: on a machine whose cores are
// shared, one stalled thread would hold up every batch.
template <class WriteRow>
void fill_rows(std::span<const std::uint32_t> samples, std::size_t values_per_row, WriteRow write_row)
{
    const auto rows = static_cast<std::int64_t>(samples.size());
    const host_threads_scope threads(host_threads_between_steps());
    TENET_OMP_PARALLEL_FOR_IF(samples.size() * values_per_row >= 32768 && host_threads() > 1)
    for (std::int64_t r = 0; r < rows; ++r) {
        const auto row = static_cast<std::size_t>(r);
        write_row(row, std::size_t{samples[row]});
    }
}

}  // namespace detail

template <class Place>
class batch_pipeline {
    static_assert(memory_place<Place>, "tenet: batch_pipeline<Place>: Place is Host, HostPinned or Device");
    static constexpr bool on_device = std::is_same_v<Place, Device>;

public:
    // A filled slot: its first byte in Place's memory, and its real rows.
    struct slot {
        std::byte* base = nullptr;
        std::size_t rows = 0;
    };

    // Where valid, i32 [batch], starts in a slot: 256-byte aligned.
    static constexpr std::size_t valid_offset(std::size_t payload_bytes) { return detail::align_slot(payload_bytes); }

    // count samples; `who` names the loader in error messages.
    batch_pipeline(std::size_t count, std::size_t batch, std::size_t payload_bytes, stream_ref compute, shard part,
                   std::string who)
        : who_(std::move(who)), count_(count), batch_(checked_batch(batch)), part_(checked(part)),
          valid_offset_(valid_offset(payload_bytes)), slot_bytes_(valid_offset_ + batch * sizeof(std::int32_t)),
          compute_(compute), slots_{allocate_slot(), allocate_slot()}
    {
        if constexpr (on_device) pipeline_.emplace(slot_bytes_, compute);
    }
    batch_pipeline(const batch_pipeline&) = delete;
    batch_pipeline& operator=(const batch_pipeline&) = delete;

    // Copies may still be in flight: their staging buffers must outlive them,
    // and the device buffers are freed in compute-stream order after them.
    ~batch_pipeline()
    {
        if (!pipeline_) return;
        for (std::size_t s = 0; s != 2; ++s) {
            cudaEventSynchronize(pipeline_->copied[s].get());
            cudaStreamWaitEvent(compute_.get(), pipeline_->copied[s].get(), 0);
        }
    }

    // The same on every rank of a shard: global batches of batch * count rows.
    std::size_t batches_per_epoch() const noexcept
    {
        const std::size_t global = batch_ * part_.count;
        return (count_ + global - 1) / global;
    }

    const shard& part() const noexcept { return part_; }

    // A profiler told of each batch's fill ("batch fill", on the host) and,
    // for a Device loader, its host-to-device copy (timed on the copy
    // stream, traced on a "copy stream" track); null (the default) stops.
    void observe(profile::step_observer* observer) noexcept { observer_ = observer; }

    // The epoch's order: permutation(count, seed, epoch), or the samples' own
    // order without shuffling. Device: the first batch's copy starts here.
    template <class Fill>
    void start_epoch(std::uint64_t seed, std::uint64_t epoch, bool shuffle, const Fill& fill)
    {
        if (shuffle) {
            order_ = permutation(count_, seed, epoch);
        } else {
            order_.resize(count_);
            std::iota(order_.begin(), order_.end(), std::uint32_t{0});
        }
        handed_ = 0;
        started_ = true;
        if constexpr (on_device)
            if (batches_per_epoch() > 0) stage(0, next_slot_, fill);
    }

    // The epoch's next batch; false (and `out` untouched) after the last.
    template <class Fill>
    bool next(slot& out, const Fill& fill)
    {
        if (!started_) throw error("tenet: " + who_ + "::next called before start_epoch");
        if (handed_ == batches_per_epoch()) return false;
        const std::size_t s = next_slot_;
        if constexpr (on_device) {
            TENET_CUDA_CHECK(cudaStreamWaitEvent(compute_.get(), pipeline_->copied[s].get(), 0));
            if (handed_ + 1 < batches_per_epoch()) stage(handed_ + 1, 1 - s, fill);
        } else {
            profile::scoped_range range("data");
            observed_fill(slots_[s].data(), handed_, fill);
        }
        out = {slots_[s].data(), rows_of(handed_)};
        ++handed_;
        next_slot_ = 1 - s;
        return true;
    }

private:
    std::size_t checked_batch(std::size_t batch) const
    {
        if (batch == 0) throw error("tenet: " + who_ + ": a batch of 0 rows");
        return batch;
    }

    shard checked(shard part) const
    {
        if (part.count == 0 || part.rank >= part.count)
            throw error("tenet: " + who_ + ": shard rank " + std::to_string(part.rank) + " of " +
                        std::to_string(part.count) + " ranks (a rank must be below the count, the count at least 1)");
        return part;
    }

    buffer<std::byte, Place> allocate_slot() const
    {
        if constexpr (on_device) {
            require_device();  // a clear error before any CUDA call fails
            return buffer<std::byte, Place>(slot_bytes_, compute_);
        } else {
            return detail::zeroed_slot<Place>(slot_bytes_, compute_);
        }
    }

    // Batch b's first position in the epoch's order, and its real rows.
    std::size_t first_of(std::size_t b) const noexcept { return (b * part_.count + part_.rank) * batch_; }
    std::size_t rows_of(std::size_t b) const noexcept
    {
        const std::size_t first = first_of(b);
        return first < count_ ? std::min(batch_, count_ - first) : 0;
    }

    // Batch b of the epoch's order into a slot's host memory.
    template <class Fill>
    void fill_slot(std::byte* base, std::size_t b, const Fill& fill) const
    {
        const std::size_t rows = rows_of(b);
        if (rows < batch_) std::memset(base, 0, slot_bytes_);
        fill(base, rows == 0 ? std::span<const std::uint32_t>() : std::span(order_).subspan(first_of(b), rows));
        auto* valid = reinterpret_cast<std::int32_t*>(base + valid_offset_);
        std::fill(valid, valid + rows, 1);
    }

    template <class Fill>
    void observed_fill(std::byte* base, std::size_t b, const Fill& fill) const
    {
        const profile::observed_section filling(observer_, [&] {
            return profile::section{.kind = profile::section_kind::data, .name = "batch fill", .bytes = slot_bytes_};
        });
        fill_slot(base, b, fill);
    }

    // Device: batch b into slot s, once the compute work queued so far (which
    // may read the slot's previous batch) is done.
    template <class Fill>
    void stage(std::size_t b, std::size_t s, const Fill& fill)
    {
        profile::scoped_range range("data transfer");
        auto& p = *pipeline_;
        TENET_CUDA_CHECK(cudaEventRecord(p.consumed[s].get(), compute_.get()));
        TENET_CUDA_CHECK(cudaEventSynchronize(p.copied[s].get()));  // the staging buffer's last copy has left
        observed_fill(p.staging[s].data(), b, fill);
        TENET_CUDA_CHECK(cudaStreamWaitEvent(p.copies.get(), p.consumed[s].get(), 0));
        const stream_scope on_copies(p.copies);  // (the copy's section is timed on its stream)
        const profile::observed_section copy(observer_, [&] {
            return profile::section{.kind = profile::section_kind::data, .name = "host-to-device copy",
                                    .bytes = slot_bytes_, .device = true, .track = "copy stream"};
        });
        TENET_CUDA_CHECK(cudaMemcpyAsync(slots_[s].data(), p.staging[s].data(), slot_bytes_, cudaMemcpyHostToDevice,
                                         p.copies.get()));
        TENET_CUDA_CHECK(cudaEventRecord(p.copied[s].get(), p.copies.get()));
    }

    std::string who_;
    std::size_t count_, batch_;
    shard part_;
    std::size_t valid_offset_, slot_bytes_;
    stream_ref compute_;
    std::array<buffer<std::byte, Place>, 2> slots_;  // what the loaders' views show
    std::optional<detail::copy_pipeline> pipeline_;  // Device only
    std::vector<std::uint32_t> order_;
    std::size_t handed_ = 0;     // batches handed out this epoch
    std::size_t next_slot_ = 0;  // the slot the next batch comes from
    bool started_ = false;
    profile::step_observer* observer_ = nullptr;
};

}  // namespace tenet::data
