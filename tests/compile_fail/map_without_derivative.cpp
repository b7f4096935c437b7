// gradients(...) through a tenet::map functor that gives no derivative.
#include <tenet/tenet.hpp>
// expect: gradients_no_derivative_rule_give_the_functor_a_derivative_member<clamp_to_unit>
// expect-cxx: tenet: gradients: no derivative rule for tenet::map(f, ...)
struct clamp_to_unit {
    TENET_HD float operator()(float x) const { return x < -1.0f ? -1.0f : (x > 1.0f ? 1.0f : x); }
};
void f(tenet::Tensor<float, tenet::Shape<4>, tenet::Host>& dx, const tenet::Tensor<float, tenet::Shape<4>, tenet::Host>& x)
{
    dx = tenet::gradient<0>(tenet::map(clamp_to_unit{}, tenet::var<0>(x)), x);
}
