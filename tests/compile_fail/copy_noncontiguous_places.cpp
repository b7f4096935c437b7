// Copies between places move contiguous bytes; a transposed view is not.
#include <tenet/tenet.hpp>
// expect: tenet: copy between places needs contiguous tensors
void f(tenet::Tensor<float, tenet::Shape<4, 4>>& d, const tenet::Tensor<float, tenet::Shape<4, 4>, tenet::Host>& h)
{
    tenet::copy(d, tenet::transpose(h));
}
