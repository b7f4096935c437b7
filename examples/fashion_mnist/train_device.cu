// The example's device training (see training.hpp and active_learning.hpp),
// compiled by nvcc in CUDA builds: steps replayed as CUDA Graphs unless --eager.
#include "active_learning.hpp"

namespace example {

std::vector<result> train_on_device(const data::mnist_dataset& set, const options& o) { return train_all<Device>(set, o); }

std::vector<curve> active_learning_on_device(const data::mnist_dataset& set, const options& o)
{
    return active_learning<Device>(set, o);
}

}  // namespace example
