// array_loader<Storage, Batch, Dataset, Place>: fixed-shape batches of an
// array_dataset for a static-shape model: x [Batch, FeatureShape...] of
// Storage, targets [Batch, TargetShape...] and a validity mask valid [Batch].
//
//   using images = data::array_dataset<f32, i32, Shape<3, 32, 32>>;
//   const images train = images::from_npy("x_train.npy", "y_train.npy");
//   data::array_loader<bf16, 128, images, Device> loader(train, compute, data::shard{rank, ranks});
//   decltype(loader)::batch b;
//   loader.start_epoch(seed, epoch);
//   while (loader.next(b)) step(b.x(), b.targets(), b.valid());
//
// Features become Storage by convert (exact, or rounded once to nearest
// even; a std::uint8_t as the integer it is). Storage std::uint8_t keeps
// std::uint8_t features as they are, raw bytes to preprocess on the device:
// u8 is no tensor element type, so such a batch has pixels() (a
// pixel_batch for data::augment) and x_data(), and no x() view:
//
//   x = data::augment<28, 28, 1>(b.pixels(), {.pad = 2, .flip = true}, seed, step);
// Targets: class labels (i8, i32, std::uint8_t) become i32, what
// cross_entropy takes; floating targets stay in the dataset's Target type,
// unrounded (a loss converts them as it reads them).
//
// The order (permutation(size, seed, epoch), the same as batch_loader's),
// the padded last batch (x 0, targets 0, valid 0), sharding across ranks,
// the Device prefetch and the lifetimes are batch_pipeline's and
// batch_loader's: a batch stays valid for work queued on the compute stream
// (Host: done) before the next call to next(), and the dataset must outlive
// the loader.
#pragma once

#include "../memory/stream.hpp"
#include "../numeric/convert.hpp"
#include "../tensor/tensor.hpp"
#include "array_dataset.hpp"
#include "augment.hpp"
#include "batch_pipeline.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

namespace tenet::data {
namespace detail {

template <std::size_t N, class S>
struct prepend;
template <std::size_t N, std::size_t... M>
struct prepend<N, Shape<M...>> {
    using type = Shape<N, M...>;
};

// A value as a batch's element type T: convert's rounding, and a
// std::uint8_t (no element type) as the integer it is.
template <class T, class V>
T batch_value(V v)
{
    if constexpr (std::is_same_v<T, V>) return v;
    else if constexpr (is_byte_v<V>) return convert<T>(static_cast<i32>(v));
    else return convert<T>(v);
}

}  // namespace detail

template <class Storage, std::size_t Batch, class Dataset, class Place = Device>
class array_loader {
    static_assert(detail::is_array_dataset_v<Dataset>,
                  "tenet: array_loader<Storage, Batch, Dataset, ...>: Dataset must be a data::array_dataset");
    using feature = typename Dataset::feature_type;
    using feature_shape = typename Dataset::feature_shape;
    using target_shape = typename Dataset::target_shape;
    static_assert(element<Storage> || detail::is_byte_v<Storage>,
                  "tenet: array_loader<Storage, ...>: Storage must be a tenet element type or std::uint8_t");
    static_assert(!detail::is_byte_v<Storage> || detail::is_byte_v<feature>,
                  "tenet: array_loader<std::uint8_t, ...>: raw u8 batches need a dataset of std::uint8_t features");
    static_assert(memory_place<Place>, "tenet: array_loader<..., Place>: Place is Host, HostPinned or Device");
    static_assert(Batch > 0, "tenet: array_loader: Batch must be positive");
    static_assert(feature_shape::rank < 8 && target_shape::rank < 8,
                  "tenet: array_loader: x is [Batch, FeatureShape...] and targets [Batch, TargetShape...], so "
                  "FeatureShape and TargetShape have ranks below 8");

public:
    using x_shape = typename detail::prepend<Batch, feature_shape>::type;
    using targets_shape = typename detail::prepend<Batch, target_shape>::type;
    // i32 for class labels, the dataset's Target for regression targets.
    using target_type = std::conditional_t<is_floating_v<typename Dataset::target_type>,
                                           typename Dataset::target_type, i32>;

private:
    using pipeline = batch_pipeline<Place>;
    static constexpr std::size_t feature_size = Dataset::feature_size, target_size = Dataset::target_size;
    // One slot: x, then targets, then (the pipeline's) valid, each 256-byte aligned.
    static constexpr std::size_t targets_offset = detail::align_slot(Batch * feature_size * sizeof(Storage));
    static constexpr std::size_t payload_bytes = targets_offset + Batch * target_size * sizeof(target_type);
    static constexpr std::size_t valid_offset = pipeline::valid_offset(payload_bytes);

public:
    using x_view = TensorView<Storage, contiguous_layout<x_shape>, Place>;
    using targets_view = TensorView<target_type, contiguous_layout<targets_shape>, Place>;
    using row_view = TensorView<std::int32_t, contiguous_layout<Shape<Batch>>, Place>;

    // Views of one slot (accessors: a view cannot be re-pointed).
    class batch {
    public:
        x_view x() const noexcept
            requires element<Storage>
        {
            return x_view(x_data());
        }
        Storage* x_data() const noexcept { return reinterpret_cast<Storage*>(slot_.base); }
        pixel_batch<x_shape, Place> pixels() const noexcept  // raw bytes, for data::augment
            requires detail::is_byte_v<Storage>
        {
            return {x_data()};
        }
        targets_view targets() const noexcept
        {
            return targets_view(reinterpret_cast<target_type*>(slot_.base + targets_offset));
        }
        row_view valid() const noexcept  // 1 for a sample, 0 for padding
        {
            return row_view(reinterpret_cast<std::int32_t*>(slot_.base + valid_offset));
        }
        std::size_t rows() const noexcept { return slot_.rows; }  // samples; the rest is padding

    private:
        friend array_loader;
        typename pipeline::slot slot_;
    };

    explicit array_loader(const Dataset& data, stream_ref compute = current_stream(), shard part = {})
        : data_(data), pipeline_(data.size(), Batch, payload_bytes, compute, part, "array_loader")
    {
    }
    // The loader keeps a reference: a temporary dataset would dangle.
    array_loader(Dataset&&, stream_ref = current_stream(), shard = {}) = delete;
    array_loader(const array_loader&) = delete;
    array_loader& operator=(const array_loader&) = delete;

    // The same on every rank of a shard: global batches of Batch * count rows.
    std::size_t batches_per_epoch() const noexcept { return pipeline_.batches_per_epoch(); }

    const shard& part() const noexcept { return pipeline_.part(); }

    // A profiler told of each batch's fill and host-to-device copy (batch_pipeline::observe).
    void observe(profile::step_observer* observer) noexcept { pipeline_.observe(observer); }

    // The epoch's order: permutation(size, seed, epoch), or the dataset's own
    // order without shuffling. Device: the first batch's copy starts here.
    void start_epoch(std::uint64_t seed, std::uint64_t epoch, bool shuffle = true)
    {
        pipeline_.start_epoch(seed, epoch, shuffle, filler());
    }

    // The epoch's next batch; false (and `out` untouched) after the last.
    bool next(batch& out) { return pipeline_.next(out.slot_, filler()); }

private:
    // The samples' features and targets into a slot's rows (the pipeline pads).
    auto filler() const
    {
        return [this](std::byte* base, std::span<const std::uint32_t> samples) {
            auto* x = reinterpret_cast<Storage*>(base);
            auto* t = reinterpret_cast<target_type*>(base + targets_offset);
            detail::fill_rows(samples, feature_size, [&](std::size_t r, std::size_t sample) {
                const auto* from_x = data_.features().data() + sample * feature_size;
                const auto* from_t = data_.targets().data() + sample * target_size;
                for (std::size_t f = 0; f != feature_size; ++f)
                    x[r * feature_size + f] = detail::batch_value<Storage>(from_x[f]);
                for (std::size_t k = 0; k != target_size; ++k)
                    t[r * target_size + k] = detail::batch_value<target_type>(from_t[k]);
            });
        };
    }

    const Dataset& data_;
    pipeline pipeline_;
};

}  // namespace tenet::data
