// Host and Device memory in one expression.
#include <tenet/tenet.hpp>
// expect: mixed_places<tenet::ops::multiplies,
// expect-cxx: tenet: operator* mixes places: Shape<4> in Host vs Shape<4> in Device
// expect-cuda: located<tenet::Shape<4UL>, tenet::Host>, tenet::detail::expr::located<tenet::Shape<4UL>, tenet::Device>>
auto f(const tenet::Tensor<float, tenet::Shape<4>, tenet::Host>& h, const tenet::Tensor<float, tenet::Shape<4>>& d)
{
    return h * d;
}
