// int8_model's convolutions are one int8 GEMM each: a grouped (here
// depthwise) Conv2d has no int8 form yet.
#include <tenet/tenet.hpp>
// expect: tenet: int8_model: a grouped Conv2d has no int8 form yet
using spec = tenet::nn::Sequential<tenet::nn::Conv2d<4, 4, 3, 1, 1, 1, 4>, tenet::nn::Flatten, tenet::nn::Linear<256, 3>>;
using int8 = tenet::quant::int8_model<spec, tenet::Shape<2, 8, 8, 4>, tenet::Host>;
constexpr std::size_t bytes = int8::weight_bytes;
