// A user's elementwise loss given targets of another shape: they would
// broadcast silently, so the loss refuses them.
#include <tenet/tenet.hpp>
// expect: target_shape_differs<
// expect-cxx: tenet: elementwise_loss: targets of shape Shape<3> for an output of shape Shape<4,3>
// expect-cuda: target_shape_differs<tenet::Shape<4UL, 3UL>, tenet::Shape<3UL>>
struct squared {
    template <class P, class T>
    auto operator()(const P& p, const T& t) const
    {
        return (p - t) * (p - t);
    }
};
using loss = tenet::train::elementwise_loss<squared>;
void f(const tenet::Tensor<float, tenet::Shape<4, 3>, tenet::Host>& prediction,
       const tenet::Tensor<float, tenet::Shape<3>, tenet::Host>& target,
       const tenet::Tensor<int, tenet::Shape<4>, tenet::Host>& valid, tenet::Tensor<float, tenet::Shape<>, tenet::Host>& out)
{
    loss::bound<tenet::fp32, tenet::Shape<4, 3>, tenet::Host> bound{loss{}};
    bound.forward(out, prediction, target, valid);
}
