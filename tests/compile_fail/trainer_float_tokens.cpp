// Float values passed as tokens to the trainer of a model that starts with an
// Embedding: one error at the trainer, naming the model's input_type and the
// given type (not one inside the token range check).
#include <tenet/tenet.hpp>
// expect: model_takes_i32_tokens_not<
// expect-cxx: tenet: the model takes i32 inputs (its input_type), not f32: cast the input (i32 tokens are for a model whose first layer is an Embedding)
// expect-cuda: model_takes_i32_tokens_not<tenet::Tensor<tenet::f32, tenet::Shape<8UL, 5UL>
using namespace tenet;
using net = nn::Sequential<nn::Embedding<16, 4>, nn::MeanPool<1>>;  // (no GEMM: the CUDA run has no Eigen)
using model_t = nn::model<net, fp32, Shape<8, 5>, Host>;
void run(train::trainer<model_t, train::sgd>& t, const Tensor<f32, Shape<8, 5>, Host>& x,
         const Tensor<i32, Shape<8>, Host>& labels, const Tensor<f32, Shape<8>, Host>& valid)
{
    t.step(x, labels, valid);
    t.evaluate(x, labels, valid);
}
