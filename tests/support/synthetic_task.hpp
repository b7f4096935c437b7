// A small learnable classification task for training tests: each sample's
// class is the argmax of a fixed random projection of its N(0, 1) features
// (the same projection for every split), and fixed-shape host batches of it
// with padding rows marked invalid, as batch_loader gives them.
#pragma once

#include <tenet/tenet.hpp>

#include <cstdint>
#include <random>
#include <vector>

namespace testing {

struct task {
    std::vector<float> x;
    std::vector<std::int32_t> y;
};

inline task make_task(std::size_t n, std::size_t features, std::size_t classes, std::uint64_t seed)
{
    std::mt19937_64 rng(seed), fixed(1234);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> projection(features * classes);
    for (auto& p : projection) p = normal(fixed);
    task t{std::vector<float>(n * features), std::vector<std::int32_t>(n)};
    for (std::size_t i = 0; i < n; ++i) {
        float best = -1e30f;
        for (std::size_t f = 0; f < features; ++f) t.x[i * features + f] = normal(rng);
        for (std::size_t c = 0; c < classes; ++c) {
            float z = 0;
            for (std::size_t f = 0; f < features; ++f) z += projection[f * classes + c] * t.x[i * features + f];
            if (z > best) best = z, t.y[i] = static_cast<std::int32_t>(c);
        }
    }
    return t;
}

template <class T, std::size_t Batch, std::size_t Features>
struct task_batch {
    tenet::Tensor<T, tenet::Shape<Batch, Features>, tenet::Host> x;
    tenet::Tensor<std::int32_t, tenet::Shape<Batch>, tenet::Host> labels;
    tenet::Tensor<std::int32_t, tenet::Shape<Batch>, tenet::Host> valid;

    // Rows [first, first + Batch) of the task; rows past its end are padding.
    void fill(const task& t, std::size_t first)
    {
        for (std::size_t r = 0; r < Batch; ++r) {
            const std::size_t i = first + r;
            const bool real = i < t.y.size();
            for (std::size_t f = 0; f < Features; ++f)
                x.data()[r * Features + f] = tenet::convert<T>(real ? t.x[i * Features + f] : 0.0f);
            labels.data()[r] = real ? t.y[i] : 0;
            valid.data()[r] = real ? 1 : 0;
        }
    }
};

}  // namespace testing
