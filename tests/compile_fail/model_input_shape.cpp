// A model fed a tensor of another shape with as many elements (an image batch
// for a model of flat rows): an error, never a silent reinterpretation.
#include <tenet/tenet.hpp>
// expect: forward_needs_the_model_input_shape_reshape_if_meant<
// expect-cxx: tenet: forward: the input must have the model input shape Shape<8,784>, not Shape<8,28,28,1>
using net = tenet::nn::Sequential<tenet::nn::ReLU>;  // (no GEMM: the CUDA run has no Eigen)
const auto& run(tenet::nn::model<net, tenet::fp32, tenet::Shape<8, 784>, tenet::Host>& m,
                const tenet::Tensor<float, tenet::Shape<8, 28, 28, 1>, tenet::Host>& images)
{
    return m.forward(images);
}
