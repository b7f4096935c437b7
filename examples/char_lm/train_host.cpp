// The example's host training (see training.hpp), compiled by the C++
// compiler in every build.
#include "training.hpp"

namespace example {

int run_on_host(const options& o, const std::vector<i32>& text) { return run_policy<Host>(o, text, "host"); }

}  // namespace example
