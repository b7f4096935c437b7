// g++ cannot generate kernels: Device tensors are evaluated in nvcc-compiled files.
#include <tenet/tenet.hpp>
// compilers: cxx
// expect: tenet: evaluating into a Device tensor needs a CUDA compiler
void f(tenet::Tensor<float, tenet::Shape<4>>& d) { d = 1.0f; }
