// SGD has no conventional learning rate: an optimizer without a schedule
// would train at rate 0, so it does not compile.
#include <tenet/tenet.hpp>
// expect: tenet: this optimizer rule has no conventional learning rate (SGD)
using spec = tenet::nn::Sequential<tenet::nn::Linear<4, 2>>;
void f(tenet::nn::model<spec, tenet::fp32, tenet::Shape<3, 4>, tenet::Host>& net)
{
    tenet::train::optimizer opt(net, tenet::train::sgd{0.9f});
}
