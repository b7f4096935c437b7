// An elementwise loss functor that does not take (prediction, target).
#include <tenet/tenet.hpp>
// expect: tenet: elementwise_loss<F>: F must be callable as f(prediction, target)
struct one_argument {
    template <class P>
    auto operator()(const P& p) const
    {
        return p * p;
    }
};
using spec = tenet::nn::Sequential<tenet::nn::Linear<8, 1>>;
void f(tenet::nn::model<spec, tenet::fp32, tenet::Shape<4, 8>, tenet::Host>& m,
       const tenet::Tensor<float, tenet::Shape<4, 8>, tenet::Host>& x,
       const tenet::Tensor<float, tenet::Shape<4, 1>, tenet::Host>& y,
       const tenet::Tensor<int, tenet::Shape<4>, tenet::Host>& valid)
{
    tenet::train::trainer t(m, tenet::train::adamw{}, tenet::train::constant_lr{1e-3f}, {},
                            tenet::train::elementwise_loss{one_argument{}});
    t.step(x, y, valid);
    t.evaluate(x, y, valid);
}
