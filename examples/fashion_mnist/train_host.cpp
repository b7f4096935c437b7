// The example's host training (see training.hpp and active_learning.hpp),
// compiled by the C++ compiler in every build.
#include "active_learning.hpp"

namespace example {

std::vector<result> train_on_host(const data::mnist_dataset& set, const options& o) { return train_all<Host>(set, o); }

std::vector<curve> active_learning_on_host(const data::mnist_dataset& set, const options& o)
{
    return active_learning<Host>(set, o);
}

}  // namespace example
