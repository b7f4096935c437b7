// A one-output (regression) model under the default loss, softmax
// cross-entropy, which would be 0 whatever the model does.
#include <tenet/tenet.hpp>
// expect: tenet: softmax_cross_entropy needs a model with at least 2 outputs (classes) per row
using spec = tenet::nn::Sequential<tenet::nn::Linear<8, 16>, tenet::nn::ReLU, tenet::nn::Linear<16, 1>>;
void f(tenet::nn::model<spec, tenet::fp32, tenet::Shape<4, 8>, tenet::Host>& m)
{
    tenet::train::trainer t(m, tenet::train::adamw{});
}
