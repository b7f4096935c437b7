// sparse_model folds Linear (+ the activation after it) and Dropout into CSR
// units; a LayerNorm has no sparse form.
#include <tenet/tenet.hpp>
// expect: sparse_model_a_layer_has_no_sparse_form<tenet::nn::LayerNorm<32
// expect-cxx: tenet: sparse_model: a layer has no sparse form
using spec = tenet::nn::Sequential<tenet::nn::Linear<16, 32>, tenet::nn::LayerNorm<32>, tenet::nn::Linear<32, 4>>;
using sparse = tenet::prune::sparse_model<spec, tenet::Shape<8, 16>>;
constexpr std::size_t units = sparse::unit_count();
