// The example's device training (see training.hpp), compiled by nvcc in
// CUDA builds.
#include "training.hpp"

namespace example {

int run_on_device(const options& o, const std::vector<i32>& text) { return run_policy<Device>(o, text, "cuda"); }

}  // namespace example
