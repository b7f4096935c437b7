// A slice past the end of its axis.
#include <tenet/tenet.hpp>
// expect: tenet: slice<Axis, Begin, End, Step>: needs Begin < End <= extent and Step > 0
auto f(const tenet::Tensor<float, tenet::Shape<4, 4>, tenet::Host>& x) { return tenet::slice<0, 2, 9>(x); }
