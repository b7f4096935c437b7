// Element access would read device memory from the host.
#include <tenet/tenet.hpp>
// expect: tenet: element access t(i, ...) needs a Host or HostPinned tensor
float f(tenet::Tensor<float, tenet::Shape<4>>& d) { return d(0); }
