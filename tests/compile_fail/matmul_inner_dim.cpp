// Multiplying matrices whose inner dimensions differ.
#include <tenet/tenet.hpp>
// expect: matmul_inner_dimensions_differ<
// expect-cxx: tenet: matmul inner dimensions differ: Shape<2,3> x Shape<4,5>
// expect-cuda: matmul_inner_dimensions_differ<tenet::Shape<2UL, 3UL>, tenet::Shape<4UL, 5UL>>
auto f(const tenet::Tensor<float, tenet::Shape<2, 3>, tenet::Host>& a, const tenet::Tensor<float, tenet::Shape<4, 5>, tenet::Host>& b)
{
    return tenet::matmul(a, b);
}
