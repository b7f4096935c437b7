// A Linear layer fed inputs with the wrong number of features.
#include <tenet/tenet.hpp>
// expect: linear_input_failure<784
// expect-cxx: tenet: Linear<784, 256> fed Shape<64,785>: its last extent must be 784
// expect-cuda: linear_input_failure<784UL, 256UL, tenet::Shape<64UL, 785UL>>
using net = tenet::nn::Sequential<tenet::nn::Linear<784, 256>, tenet::nn::ReLU, tenet::nn::Linear<256, 10>>;
tenet::nn::model<net, tenet::fp32, tenet::Shape<64, 785>, tenet::Host> make() { return tenet::nn::model<net, tenet::fp32, tenet::Shape<64, 785>, tenet::Host>(1); }
