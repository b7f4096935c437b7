// MNIST-format datasets (Fashion-MNIST, MNIST): the four standard IDX files
// of a directory, loaded into host memory as bytes and i32 labels.
#pragma once

#include "idx.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tenet::data {

inline constexpr std::size_t mnist_rows = 28;
inline constexpr std::size_t mnist_cols = 28;
inline constexpr std::size_t mnist_pixels = mnist_rows * mnist_cols;
inline constexpr std::size_t mnist_classes = 10;

// Where this project's machines keep Fashion-MNIST.
inline constexpr const char* fashion_mnist_dir = "/usr/share/datasets/fashion-mnist";
// Fashion-MNIST's pixel mean and standard deviation (training set, pixels / 255).
inline constexpr float fashion_mnist_mean = 0.2860f;
inline constexpr float fashion_mnist_std = 0.3530f;

struct mnist_split {
    std::size_t count = 0;
    std::vector<std::uint8_t> images;  // count * mnist_pixels, row-major images
    std::vector<std::int32_t> labels;  // count, each below mnist_classes
};

struct mnist_dataset {
    mnist_split train, test;
};

// One split from its images and labels files; the counts must agree.
inline mnist_split load_mnist_split(const std::string& images_path, const std::string& labels_path)
{
    idx_array images = read_idx_images(images_path, mnist_rows, mnist_cols);
    const idx_array labels = read_idx_labels(labels_path, mnist_classes);
    if (images.dims[0] != labels.dims[0])
        throw format_error(labels_path, std::to_string(labels.dims[0]) + " labels for the " +
                                            std::to_string(images.dims[0]) + " images of " + images_path);
    return {images.dims[0], std::move(images.bytes),
            std::vector<std::int32_t>(labels.bytes.begin(), labels.bytes.end())};
}

inline mnist_dataset load_mnist(const std::string& dir)
{
    return {load_mnist_split(dir + "/train-images-idx3-ubyte.gz", dir + "/train-labels-idx1-ubyte.gz"),
            load_mnist_split(dir + "/t10k-images-idx3-ubyte.gz", dir + "/t10k-labels-idx1-ubyte.gz")};
}

// The first n samples of a split (a quick run on part of the data).
inline mnist_split subset(const mnist_split& split, std::size_t n)
{
    if (n > split.count)
        throw index_error("tenet: subset of " + std::to_string(n) + " samples from a split of " +
                          std::to_string(split.count));
    const auto pixels = static_cast<std::ptrdiff_t>(n ? n * (split.images.size() / split.count) : 0);
    return {n, std::vector<std::uint8_t>(split.images.begin(), split.images.begin() + pixels),
            std::vector<std::int32_t>(split.labels.begin(), split.labels.begin() + static_cast<std::ptrdiff_t>(n))};
}

}  // namespace tenet::data
