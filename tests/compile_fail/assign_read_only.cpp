// Views of a const tensor are read-only.
#include <tenet/tenet.hpp>
// expect: tenet: cannot assign to a read-only view
void f(const tenet::Tensor<float, tenet::Shape<3, 3>, tenet::Host>& x) { tenet::transpose(x) = 0.0f; }
