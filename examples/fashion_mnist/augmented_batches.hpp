// Training batches preprocessed where the model runs: the loader hands raw
// 8-bit pixels (a quarter of the bytes of f32 rows to copy to the device),
// and data::augment crops, flips and normalises them into the model's input
// as one fused kernel on the trainer's stream (one loop on the host). With
// augmentation off, the values are normalize_pixels's, bit for bit.
//
// It has batch_loader's interface (batches_per_epoch, start_epoch, next; a
// batch's x(), labels(), valid()), so the training loops take either.
#pragma once

#include <tenet/tenet.hpp>

#include <cstddef>
#include <cstdint>

namespace example {

using namespace tenet;

using raw_images = data::array_dataset<std::uint8_t, i32, Shape<784>>;

inline raw_images raw_images_of(const data::mnist_split& split)
{
    return raw_images(split.images, split.labels);
}

template <class Storage, std::size_t Batch, class Place>
class augmented_batches {
    using raw_loader = data::array_loader<std::uint8_t, Batch, raw_images, Place>;
    using x_tensor = Tensor<Storage, Shape<Batch, 784>, Place>;

public:
    class batch {
    public:
        auto x() const { return x_->view(); }
        auto labels() const { return raw_.targets(); }
        auto valid() const { return raw_.valid(); }
        std::size_t rows() const { return raw_.rows(); }

    private:
        friend augmented_batches;
        typename raw_loader::batch raw_;
        const x_tensor* x_ = nullptr;
    };

    // pad and flip: torchvision's RandomCrop(28, padding=pad) and
    // RandomHorizontalFlip; the draws are keyed by (seed, step, image).
    augmented_batches(const raw_images& images, stream_ref compute, data::shard part, unsigned pad, bool flip,
                      std::uint64_t seed)
        : raw_(images, compute, part), compute_(compute), options_{.pad = pad, .flip = flip}, seed_(seed), x_(compute)
    {
    }

    std::size_t batches_per_epoch() const noexcept { return raw_.batches_per_epoch(); }

    // A profiler told of each batch's fill and host-to-device copy (null: none).
    void observe(profile::step_observer* observer) noexcept { raw_.observe(observer); }

    void start_epoch(std::uint64_t seed, std::uint64_t epoch, bool shuffle = true)
    {
        raw_.start_epoch(seed, epoch, shuffle);
        step_ = epoch * batches_per_epoch();
    }

    bool next(batch& out)
    {
        if (!raw_.next(out.raw_)) return false;
        const stream_scope on(compute_);
        x_ = data::augment<28, 28, 1>(out.raw_.pixels(), options_, seed_, step_++, raw_.part().rank * Batch);
        out.x_ = &x_;
        return true;
    }

private:
    raw_loader raw_;
    stream_ref compute_;
    data::augment_options<1> options_;
    std::uint64_t seed_;
    std::uint64_t step_ = 0;
    x_tensor x_;  // one tensor: a captured step graph reads it at a fixed address
};

}  // namespace example
