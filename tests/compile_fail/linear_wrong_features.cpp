// A Linear layer fed inputs with the wrong number of features.
#include <tenet/tenet.hpp>
// expect: Linear_In_Out_needs_a_last_extent_of_In_not<784
// expect-cxx: tenet: Linear<784, 256> fed Shape<64,785>: its last extent must be 784
// expect-cuda: Linear_In_Out_needs_a_last_extent_of_In_not<784UL, 256UL, tenet::Shape<64UL, 785UL>>
using net = tenet::nn::Sequential<tenet::nn::Linear<784, 256>, tenet::nn::ReLU, tenet::nn::Linear<256, 10>>;
tenet::nn::model<net, tenet::fp32, tenet::Shape<64, 785>, tenet::Host> make() { return tenet::nn::model<net, tenet::fp32, tenet::Shape<64, 785>, tenet::Host>(1); }
