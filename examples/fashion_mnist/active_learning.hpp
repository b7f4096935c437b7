// --active-learning: how fast each way of choosing what to label raises the
// test accuracy. From --al-initial labelled training images (a seeded random
// pick, the same for every strategy), each of --al-rounds rounds labels
// --al-batch more images of the unlabelled pool (the rest of the training
// set), chosen by a strategy:
//   random            a seeded random pick (the baseline);
//   entropy           the largest entropy of the model's softmax;
//   margin            the smallest p_top1 - p_top2;
//   least_confidence  the largest 1 - p_top1.
// Every round retrains the MLP from scratch -- the same initial weights
// each time, so rounds differ only in their labels -- for --al-steps steps
// (AdamW, warm-up + cosine, fp32, batches of 256), then tests it. The pool's
// scores are the fused uncertainty_scores of the trained model's logits,
// batch by batch, and top_k picks the next labels from them (for random:
// from random_uniform numbers), where the model lives.
#pragma once

#include "training.hpp"

#include <numeric>

namespace example {

// One strategy's accuracy after each round.
struct curve {
    std::string strategy;
    std::vector<std::size_t> labels;  // labelled images when tested
    std::vector<double> accuracy;
    double seconds = 0;
};

// Room for a score per training image, in whole batches (a batch's scores
// are written whole, padding rows included).
constexpr std::size_t pool_capacity = (60000 + batch - 1) / batch * batch;
using pool_shape = Shape<pool_capacity>;

// The samples of `split` at `ids`, in that order.
inline data::mnist_split pick(const data::mnist_split& split, const std::vector<std::size_t>& ids)
{
    data::mnist_split out{ids.size(), std::vector<std::uint8_t>(ids.size() * data::mnist_pixels),
                          std::vector<std::int32_t>(ids.size())};
    for (std::size_t i = 0; i < ids.size(); ++i) {
        std::copy_n(split.images.begin() + static_cast<std::ptrdiff_t>(ids[i] * data::mnist_pixels),
                    data::mnist_pixels, out.images.begin() + static_cast<std::ptrdiff_t>(i * data::mnist_pixels));
        out.labels[i] = split.labels[ids[i]];
    }
    return out;
}

// The positions top_k chose, as a host vector (ids[position] are the samples).
template <class Place>
std::vector<std::size_t> chosen_samples(const Tensor<i32, pool_shape, Place>& chosen, const std::vector<std::size_t>& ids,
                                        std::size_t k)
{
    Tensor<i32, pool_shape, Host> positions;
    copy(positions, chosen);
    current_stream().synchronize();
    std::vector<std::size_t> out(k);
    for (std::size_t j = 0; j < k; ++j) out[j] = ids[static_cast<std::size_t>(positions.data()[j])];
    return out;
}

// k of the samples `ids`, uniformly at random (seeded by `draw`).
template <class Place>
std::vector<std::size_t> random_pick(const std::vector<std::size_t>& ids, std::size_t k, std::uint64_t seed,
                                     std::uint64_t draw)
{
    Tensor<i32, pool_shape, Place> chosen;
    top_k(chosen, random_uniform<pool_shape>(seed, draw), k, ids.size());
    return chosen_samples(chosen, ids, k);
}

template <class Place>
using mlp_model = nn::model<mlp, fp32, input_shape, Place>;

// Trains a fresh model on `labelled` for o.al_steps steps; returns its test accuracy.
template <class Place>
double train_round(mlp_model<Place>& net, const data::mnist_split& labelled, const data::mnist_split& test,
                   const options& o)
{
    const std::size_t steps_per_epoch = (labelled.count + batch - 1) / batch;
    const std::size_t epochs = (o.al_steps + steps_per_epoch - 1) / steps_per_epoch;
    auto trainer = make_trainer(net, steps_per_epoch, epochs, learning_rate<mlp>);
    if (!o.eager) trainer.capture();
    loader_t<Place> train_batches(labelled, data::normalize_pixels{}, trainer.stream());
    loader_t<Place> test_batches(test, data::normalize_pixels{}, trainer.stream());
    train_epochs(trainer, train_batches, "active learning", epochs, labelled.count, o);
    return test_accuracy(trainer, test_batches);
}

// The k most uncertain samples of the pool by `kind`, for the trained net.
template <class Place>
std::vector<std::size_t> most_uncertain(mlp_model<Place>& net, const data::mnist_split& train,
                                        const std::vector<std::size_t>& pool, std::size_t k, uncertainty kind)
{
    const data::mnist_split unlabelled = pick(train, pool);
    loader_t<Place> batches(unlabelled, data::normalize_pixels{});
    typename loader_t<Place>::batch b;
    Tensor<f32, pool_shape, Place> scores;
    batches.start_epoch(0, 0, /*shuffle=*/false);
    nn::mode_scope evaluating(net, nn::mode::evaluation);  // (the caller's mode comes back at return)
    for (std::size_t first = 0; batches.next(b); first += batch)
        uncertainty_scores(make_view<Shape<batch>, Place>(scores.data() + first), net.forward(b.x()), kind);
    // a small margin is an uncertain one: the top k of -margin
    const f32 sign = kind == uncertainty::margin ? -1.0f : 1.0f;
    Tensor<i32, pool_shape, Place> chosen;
    top_k(chosen, scores * sign, k, pool.size());
    return chosen_samples(chosen, pool, k);
}

inline uncertainty kind_of(const std::string& strategy)
{
    if (strategy == "entropy") return uncertainty::entropy;
    if (strategy == "margin") return uncertainty::margin;
    return uncertainty::least_confidence;
}

template <class Place>
curve run_strategy(const std::string& strategy, const data::mnist_dataset& set, const std::vector<std::size_t>& initial,
                   const options& o)
{
    curve c{strategy, {}, {}, 0};
    profile::host_timer timer;
    std::vector<std::size_t> labelled = initial, pool;
    std::vector<bool> taken(set.train.count, false);
    for (const std::size_t id : initial) taken[id] = true;
    for (std::size_t id = 0; id < set.train.count; ++id)
        if (!taken[id]) pool.push_back(id);
    for (std::size_t round = 0;; ++round) {
        mlp_model<Place> net(o.seed);
        const double accuracy = train_round(net, pick(set.train, labelled), set.test, o);
        c.labels.push_back(labelled.size());
        c.accuracy.push_back(accuracy);
        std::printf("%-16s round %2zu: %5zu labels, test accuracy %.4f\n", strategy.c_str(), round, labelled.size(),
                    accuracy);
        std::fflush(stdout);
        if (round == o.al_rounds) break;
        const std::vector<std::size_t> next =
            strategy == "random" ? random_pick<Place>(pool, o.al_batch, o.seed, round + 1)
                                 : most_uncertain(net, set.train, pool, o.al_batch, kind_of(strategy));
        for (const std::size_t id : next) taken[id] = true;
        labelled.insert(labelled.end(), next.begin(), next.end());
        std::erase_if(pool, [&](std::size_t id) { return taken[id]; });
    }
    c.seconds = timer.seconds();
    return c;
}

template <class Place>
std::vector<curve> active_learning(const data::mnist_dataset& set, options o)
{
    o.quiet = true;  // a line per round instead of a bar per epoch
    std::vector<std::size_t> everyone(set.train.count);
    std::iota(everyone.begin(), everyone.end(), std::size_t{0});
    const std::vector<std::size_t> initial = random_pick<Place>(everyone, o.al_initial, o.seed, 0);
    std::vector<curve> out;
    for (const std::string& strategy : o.al_strategies) out.push_back(run_strategy<Place>(strategy, set, initial, o));
    return out;
}

// The curves on each place (train_host.cpp, train_device.cu).
std::vector<curve> active_learning_on_host(const data::mnist_dataset& set, const options& o);
std::vector<curve> active_learning_on_device(const data::mnist_dataset& set, const options& o);

}  // namespace example
