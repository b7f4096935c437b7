// The example's host training (see training.hpp), compiled by the C++
// compiler in every build.
#include "training.hpp"

namespace example {

std::vector<result> train_on_host(const data::mnist_dataset& set, const options& o) { return train_all<Host>(set, o); }

}  // namespace example
