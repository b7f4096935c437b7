// A view of an expression holding a variable (its backward would scatter).
#include <tenet/tenet.hpp>
// expect: tenet: gradients: a view (transpose, slice, reshape, ...) of an expression holding var<I> cannot be differentiated elementwise
using namespace tenet;
void f(const Tensor<float, Shape<4, 3>, Host>& x, Tensor<float, Shape<3, 4>, Host>& dx)
{
    tie(dx) = gradients(transpose(var<0>(x) * 2.0f), 1.0f);
}
