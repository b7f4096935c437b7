// Variables numbered with a gap.
#include <tenet/tenet.hpp>
// expect: gradients_variables_numbered_0_1_without_gaps_one_missing<1
// expect-cxx: tenet: gradients: variables are numbered 0, 1, ... without gaps, and var<1> is missing
// expect-cuda: gradients_variables_numbered_0_1_without_gaps_one_missing<1UL>
using namespace tenet;
void f(const Tensor<float, Shape<4, 3>, Host>& x, Tensor<float, Shape<4, 3>, Host>& d0, Tensor<float, Shape<4, 3>, Host>& d2)
{
    tie(d0, d2) = gradients(var<0>(x) * var<2>(x), 1.0f);
}
