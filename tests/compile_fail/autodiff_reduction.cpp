// A reduction of an expression holding a variable.
#include <tenet/tenet.hpp>
// expect: tenet: gradients: a reduction of an expression holding var<I> cannot be differentiated elementwise
using namespace tenet;
void f(const Tensor<float, Shape<4, 3>, Host>& x, Tensor<float, Shape<4, 3>, Host>& dx)
{
    tie(dx) = gradients(var<0>(x) - max<1>(var<0>(x), keepdims), 1.0f);
}
