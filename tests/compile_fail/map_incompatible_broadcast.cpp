// A user's functor whose operands do not broadcast, assigned to a tensor: one
// error, naming the functor by its name().
#include <tenet/tenet.hpp>
// expect: incompatible_broadcast<scale_by,
// expect-cxx: tenet: incompatible broadcast in scale_by: Shape<3> vs Shape<4>
// expect-cuda: incompatible_broadcast<scale_by, tenet::Shape<3UL>, tenet::Shape<4UL>>
struct scale_by {
    TENET_HD float operator()(float x, float w) const { return x * w; }
    static constexpr auto name() { return tenet::fixed_string("scale_by"); }
};
void f(tenet::Tensor<float, tenet::Shape<4>, tenet::Host>& y, const tenet::Tensor<float, tenet::Shape<3>, tenet::Host>& x,
       const tenet::Tensor<float, tenet::Shape<4>, tenet::Host>& w)
{
    y = tenet::map(scale_by{}, x, w);
}
