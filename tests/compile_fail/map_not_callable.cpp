// tenet::map's functor must take the operands' compute values.
#include <tenet/tenet.hpp>
// expect: tenet: map(f, xs...): f must be trivially copyable and callable with the operands' compute values
struct takes_a_pointer {
    float operator()(const float* p) const { return *p; }
};
void f(tenet::Tensor<float, tenet::Shape<4>, tenet::Host>& y, const tenet::Tensor<float, tenet::Shape<4>, tenet::Host>& x)
{
    y = tenet::map(takes_a_pointer{}, x);
}
