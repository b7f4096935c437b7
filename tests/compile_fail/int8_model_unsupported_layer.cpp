// int8_model turns Linear and Conv2d into int8 GEMM units and runs the
// layers between them in their epilogues; a LayerNorm has no int8 form.
#include <tenet/tenet.hpp>
// expect: int8_model_a_layer_has_no_int8_form<tenet::nn::LayerNorm<32
// expect-cxx: tenet: int8_model: a layer has no int8 form
using spec = tenet::nn::Sequential<tenet::nn::Linear<16, 32>, tenet::nn::LayerNorm<32>, tenet::nn::Linear<32, 4>>;
using int8 = tenet::quant::int8_model<spec, tenet::Shape<8, 16>, tenet::Host>;
constexpr std::size_t bytes = int8::weight_bytes;
