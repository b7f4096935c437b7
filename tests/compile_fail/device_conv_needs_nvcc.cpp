// In a build with cuDNN, CUDA translation units run f32 device convolutions
// on it: a host compiler's unit must not build the same layer another way.
#define TENET_WITH_CUDNN
#include <tenet/tenet.hpp>
// compilers: cxx
// expect: tenet: a device convolution layer must be compiled as CUDA (nvcc)
using net = tenet::nn::Sequential<tenet::nn::Conv2d<1, 2, 3>, tenet::nn::Flatten>;
using model = tenet::nn::model<net, tenet::fp32, tenet::Shape<1, 5, 5, 1>, tenet::Device>;
constexpr std::size_t bytes = sizeof(model);
