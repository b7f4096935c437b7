// valid_samples(mask): which entries of a batch are real, for
// model::forward(x, valid_samples(mask)) and train::trainer.
#pragma once

#include <type_traits>

namespace tenet::nn {

// Which entries of a batch are real: forward(x, valid_samples(v)) with v of
// shape [Batch] (any element type, or an expression; nonzero: a real
// sample, 0: padding) in the model's place. Layers whose results mix the
// batch (BatchNorm) then count the real samples alone, so a padded batch
// gives exactly what the batch of its real samples alone gives.
template <class V>
struct valid_samples_t {
    V mask;
};
template <class V>
auto valid_samples(const V& mask)
{
    if constexpr (requires { mask.view(); }) return valid_samples_t<decltype(mask.view())>{mask.view()};  // a tensor: its view
    else return valid_samples_t<V>{mask};
}

}  // namespace tenet::nn
