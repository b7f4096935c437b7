// array_dataset<Feature, Target, FeatureShape, TargetShape>: samples in host
// memory as two contiguous row-major arrays, features [N, FeatureShape...]
// and targets [N, TargetShape...], from vectors or from NumPy .npy files;
// array_loader makes fixed-shape batches of them.
//
//   using images = data::array_dataset<std::uint8_t, i32, Shape<28, 28>>;
//   const images train = images::from_npy("x_train.npy", "y_train.npy");
//   using series = data::array_dataset<f32, f32, Shape<64, 3>, Shape<3>>;
//   const series s(std::move(windows), std::move(next_values));
//
// Feature: a tenet element type (f32, f64, f16, bf16, f8e4m3, f8e5m2, i8,
// i32, bool) or std::uint8_t (raw bytes such as pixels). Target: i8, i32 or
// std::uint8_t for class labels, or a floating element type for regression
// targets. From files every element is converted exactly or refused, as
// load_npy does; a std::uint8_t must come from an integer file and lie in
// [0, 255].
#pragma once

#include "../io/npy.hpp"
#include "../memory/error.hpp"
#include "../numeric/traits.hpp"
#include "../shape/static_shape.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace tenet::data {
namespace detail {

template <class T>
inline constexpr bool is_byte_v = std::is_same_v<T, std::uint8_t>;

// What an array_dataset may hold: features, and class labels.
template <class T>
inline constexpr bool is_sample_value_v = element<T> || is_byte_v<T>;
template <class T>
inline constexpr bool is_label_v = is_byte_v<T> || std::is_same_v<T, i8> || std::is_same_v<T, i32>;

// "[N, 3, 4, 2]": a shape in messages, its extents numbers or N.
inline std::string extents_text(const std::vector<std::string>& extents)
{
    std::string text = "[";
    for (std::size_t i = 0; i != extents.size(); ++i) text += (i == 0 ? "" : ", ") + extents[i];
    return text + "]";
}

// A .npy file's shape and elements as T, exact or refused. std::uint8_t is
// no element type: it is read as i32 (which refuses float files), then
// range-checked.
template <class T>
io::npy_data<T> load_exact(const std::string& path)
{
    if constexpr (is_byte_v<T>) {
        io::npy_data<i32> wide = io::load_npy<i32>(path);
        std::vector<std::uint8_t> bytes(wide.values.size());
        for (std::size_t i = 0; i != bytes.size(); ++i) {
            if (wide.values[i] < 0 || wide.values[i] > 255)
                throw format_error(path, "npy data: element " + std::to_string(i) + " is " +
                                             std::to_string(wide.values[i]) + ", outside u8's range [0, 255]");
            bytes[i] = static_cast<std::uint8_t>(wide.values[i]);
        }
        return {std::move(wide.shape), std::move(bytes)};
    } else {
        return io::load_npy<T>(path);
    }
}

// The sample count of a file whose shape must be [N, Sample...], N being
// `count` when it is known (the targets of the features' samples).
template <class Sample>
std::size_t samples_in(const std::string& path, const std::vector<std::size_t>& shape, const std::string& what,
                       std::optional<std::size_t> count)
{
    const auto& sample = Sample::extents;
    if (shape.size() == sample.size() + 1 && std::equal(sample.begin(), sample.end(), shape.begin() + 1) &&
        (!count || shape[0] == *count))
        return shape[0];
    std::vector<std::string> found, expected{count ? std::to_string(*count) : "N"};
    for (const std::size_t d : shape) found.push_back(std::to_string(d));
    for (const std::size_t d : sample) expected.push_back(std::to_string(d));
    const std::string per_sample = shape_name<Sample>::text().chars;
    const std::string why = count ? "a " + per_sample + " target for each of the features file's " +
                                        std::to_string(*count) + " samples"
                                  : "N samples of " + per_sample;
    throw format_error(path, "array_dataset: the " + what + " file holds shape " + extents_text(found) +
                                 ", expected " + extents_text(expected) + " (" + why + ")");
}

}  // namespace detail

template <class Feature, class Target, class FeatureShape, class TargetShape = Shape<>>
class array_dataset {
    static_assert(detail::is_sample_value_v<Feature>,
                  "tenet: array_dataset<Feature, ...>: Feature must be a tenet element type (f32, f64, f16, bf16, "
                  "f8e4m3, f8e5m2, i8, i32, bool) or std::uint8_t");
    static_assert(detail::is_label_v<Target> || is_floating_v<Target>,
                  "tenet: array_dataset<Feature, Target, ...>: Target must be i8, i32 or std::uint8_t (class "
                  "labels) or a floating element type (regression targets)");
    static_assert(shape_type<FeatureShape> && shape_type<TargetShape>,
                  "tenet: array_dataset<..., FeatureShape, TargetShape>: both must be Shape<...> types");

public:
    using feature_type = Feature;
    using target_type = Target;
    using feature_shape = FeatureShape;
    using target_shape = TargetShape;
    static constexpr std::size_t feature_size = FeatureShape::numel;  // values per sample
    static constexpr std::size_t target_size = TargetShape::numel;

    array_dataset() = default;  // no samples

    // Sample i's features are features[i * feature_size, (i + 1) * feature_size),
    // its target targets[i * target_size, ...). Pass vectors by std::move to
    // keep them without a copy.
    array_dataset(std::vector<Feature> features, std::vector<Target> targets)
        : count_(checked_count(features.size(), targets.size())), features_(std::move(features)),
          targets_(std::move(targets))
    {
    }

    // Features from a file of shape [N, FeatureShape...], targets from one of
    // shape [N, TargetShape...]. format_error naming the file and both shapes
    // when they differ, or an element does not convert exactly.
    static array_dataset from_npy(const std::string& features_path, const std::string& targets_path)
    {
        io::npy_data<Feature> features = detail::load_exact<Feature>(features_path);
        const std::size_t count =
            detail::samples_in<FeatureShape>(features_path, features.shape, "features", std::nullopt);
        io::npy_data<Target> targets = detail::load_exact<Target>(targets_path);
        detail::samples_in<TargetShape>(targets_path, targets.shape, "targets", count);
        return array_dataset(std::move(features.values), std::move(targets.values));
    }

    std::size_t size() const noexcept { return count_; }
    std::span<const Feature> features() const noexcept { return features_; }  // [size(), FeatureShape...]
    std::span<const Target> targets() const noexcept { return targets_; }     // [size(), TargetShape...]

private:
    static std::size_t checked_count(std::size_t feature_values, std::size_t target_values)
    {
        const std::string targets_text = std::string(shape_name<TargetShape>::text().chars) + " targets";
        if (target_values % target_size != 0)
            throw error("tenet: array_dataset: " + std::to_string(target_values) +
                        " target values are not a whole number of " + targets_text);
        const std::size_t count = target_values / target_size;
        if (feature_values != count * feature_size)
            throw error("tenet: array_dataset: " + std::to_string(count) + " samples (" +
                        std::to_string(target_values) + " target values, " + targets_text + ") need " +
                        std::to_string(count * feature_size) + " feature values (" +
                        shape_name<FeatureShape>::text().chars + " each), found " + std::to_string(feature_values));
        return count;
    }

    std::size_t count_ = 0;
    std::vector<Feature> features_;
    std::vector<Target> targets_;
};

namespace detail {

template <class T>
inline constexpr bool is_array_dataset_v = false;
template <class F, class T, class FS, class TS>
inline constexpr bool is_array_dataset_v<array_dataset<F, T, FS, TS>> = true;

}  // namespace detail

}  // namespace tenet::data
