// Fewer destinations than variables.
#include <tenet/tenet.hpp>
// expect: gradients_needs_one_destination_per_variable<2
// expect-cxx: tenet: tie(...) = gradients(e, dy): one destination per variable: 2 variables, 1 destinations
// expect-cuda: gradients_needs_one_destination_per_variable<2UL, 1UL>
using namespace tenet;
void f(const Tensor<float, Shape<4, 3>, Host>& x, const Tensor<float, Shape<4, 3>, Host>& w,
       Tensor<float, Shape<4, 3>, Host>& dx)
{
    tie(dx) = gradients(var<0>(x) * var<1>(w), 1.0f);
}
