// take with floating-point indices: tokens are integers.
#include <tenet/tenet.hpp>
// expect: tenet: take: the indices must be integers (an i32 tensor), not floating-point values
tenet::Tensor<float, tenet::Shape<3, 4>, tenet::Host> run(const tenet::Tensor<float, tenet::Shape<10, 4>, tenet::Host>& table,
                                                           const tenet::Tensor<float, tenet::Shape<3>, tenet::Host>& idx)
{
    tenet::Tensor<float, tenet::Shape<3, 4>, tenet::Host> y;
    y = tenet::take<0>(table, idx);
    return y;
}
