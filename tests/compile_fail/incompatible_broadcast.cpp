// Operands whose shapes do not broadcast.
#include <tenet/tenet.hpp>
// expect: tenet: incompatible broadcast in an elementwise operation
// expect-cxx: tenet: incompatible broadcast in operator+: Shape<256,784> vs Shape<256,783>
// expect-cuda: Shape<256UL, 783UL>
auto f(const tenet::Tensor<float, tenet::Shape<256, 784>, tenet::Host>& a,
       const tenet::Tensor<float, tenet::Shape<256, 783>, tenet::Host>& b)
{
    return a + b;
}
