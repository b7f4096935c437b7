// Datasets for training: IDX files, MNIST-format datasets, the per-epoch
// shuffle and fixed-shape batches with prefetch. Needs zlib (link -lz).
#pragma once

#include "batches.hpp"
#include "fashion_mnist.hpp"
#include "idx.hpp"
#include "shuffle.hpp"
