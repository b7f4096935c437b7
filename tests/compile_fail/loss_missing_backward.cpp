// A user's loss whose bound has no backward: the trainer names the member.
#include <tenet/tenet.hpp>
// expect: tenet: loss: bound needs backward(dpred, pred, target, valid, scale)
struct half_a_loss {
    template <class P, class Out, class Place>
    struct bound {
        using target_type = tenet::Tensor<float, Out, Place>;
        explicit bound(const half_a_loss&) {}
        template <class L, class Pred, class T, class V>
        void forward(L&, const Pred&, const T&, const V&)
        {
        }
        template <class T, class V>
        void check_batch(const T&, const V&) const
        {
        }
    };
};
using spec = tenet::nn::Sequential<tenet::nn::Linear<8, 1>>;
void f(tenet::nn::model<spec, tenet::fp32, tenet::Shape<4, 8>, tenet::Host>& m)
{
    tenet::train::trainer t(m, tenet::train::adamw{}, tenet::train::constant_lr{1e-3f}, {}, half_a_loss{});
}
