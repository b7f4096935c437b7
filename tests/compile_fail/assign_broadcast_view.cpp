// A broadcast view has several elements at one address: it cannot be written.
#include <tenet/tenet.hpp>
// expect: tenet: cannot assign to a broadcast view
void f(tenet::Tensor<float, tenet::Shape<3>, tenet::Host>& x) { tenet::broadcast_to<tenet::Shape<4, 3>>(x) = 1.0f; }
