// Operands whose shapes do not broadcast.
#include <tenet/tenet.hpp>
// expect: incompatible_broadcast<tenet::ops::plus,
// expect-cxx: tenet: incompatible broadcast in operator+: Shape<256,784> vs Shape<256,783>
// expect-cuda: incompatible_broadcast<tenet::ops::plus, tenet::Shape<256UL, 784UL>, tenet::Shape<256UL, 783UL>>
auto f(const tenet::Tensor<float, tenet::Shape<256, 784>, tenet::Host>& a,
       const tenet::Tensor<float, tenet::Shape<256, 783>, tenet::Host>& b)
{
    return a + b;
}
