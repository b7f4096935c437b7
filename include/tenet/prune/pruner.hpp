// pruner<Optimizer, Schedule>: magnitude pruning of a model as it trains, on
// a sparsity schedule (schedule.hpp: gradual_sparsity, one_shot), through the
// masks of an optimizer built with optimizer_options::masked.
//
//   train::trainer_options options;
//   options.optimizer.masked = true;
//   train::trainer t(net, train::adamw{}, lr, options);
//   prune::pruner p(t.optimizer(), prune::gradual_sparsity{0.0, 0.9, 0, 20, 200}, prune::scope::global);
//   for (std::uint64_t step = 0; loader.next(b); ++step) {
//       p.update(step);                 // re-ranks and prunes when the schedule says so
//       t.step(b.x(), b.labels(), b.valid());
//   }
//
// Between pruning events the fused optimizer keeps the pruned weights at
// exactly zero; the masks only shrink, so a weight once pruned stays pruned.
// Masks live in device memory at a fixed address: a captured training step
// (trainer::capture) reads the new masks on its next replay.
#pragma once

#include "magnitude.hpp"
#include "sparsity_schedule.hpp"

#include <cstdint>

namespace tenet::prune {

template <class Optimizer, sparsity_schedule Schedule>
class pruner {
public:
    pruner(Optimizer& optimizer, Schedule schedule, scope s = scope::global)
        : optimizer_(optimizer), schedule_(schedule), scope_(s)
    {
        schedule.check();
        optimizer.masks();  // throws unless the optimizer keeps masks
    }

    // Prunes to the schedule's sparsity at `step` when it is a pruning step;
    // returns whether it pruned.
    bool update(std::uint64_t step)
    {
        if (!schedule_.prunes_at(step)) return false;
        magnitude(optimizer_.masks(), schedule_.at(step), scope_);
        optimizer_.apply_masks();
        return true;
    }

    const Schedule& schedule() const { return schedule_; }
    scope pruning_scope() const { return scope_; }

private:
    Optimizer& optimizer_;
    Schedule schedule_;
    scope scope_;
};

}  // namespace tenet::prune
