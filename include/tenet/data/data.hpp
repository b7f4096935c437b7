// Datasets for training: IDX files, MNIST-format datasets, arrays from
// memory or .npy files, the per-epoch shuffle, fixed-shape batches with
// prefetch, augmentation where the batch lies. Needs zlib (link -lz).
#pragma once

#include "array_dataset.hpp"
#include "array_loader.hpp"
#include "augment.hpp"
#include "batch_pipeline.hpp"
#include "batches.hpp"
#include "fashion_mnist.hpp"
#include "idx.hpp"
#include "shuffle.hpp"
