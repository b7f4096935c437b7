// A model sharing the parameters of a model of another spec: one error
// naming what must agree, before anything reads the other model.
#include <tenet/tenet.hpp>
// expect: tenet: model(share_parameters, other): other must be an nn::model of the same spec, storage type and place, whose input differs in the batch alone
using trained_net = tenet::nn::Sequential<tenet::nn::ReLU>;  // (no GEMM: the CUDA run has no Eigen)
using other_net = tenet::nn::Sequential<tenet::nn::Tanh>;
void run(tenet::nn::model<trained_net, tenet::fp32, tenet::Shape<8, 16>, tenet::Host>& trained)
{
    tenet::nn::model<other_net, tenet::fp32, tenet::Shape<1, 16>, tenet::Host> one(tenet::nn::share_parameters, trained);
    (void)one;
}
