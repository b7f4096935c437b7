// The example's device training (see training.hpp), compiled by nvcc in
// CUDA builds: steps replayed as CUDA Graphs unless --eager.
#include "training.hpp"

namespace example {

std::vector<result> train_on_device(const data::mnist_dataset& set, const options& o) { return train_all<Device>(set, o); }

}  // namespace example
