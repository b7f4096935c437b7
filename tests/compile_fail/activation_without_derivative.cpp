// nn::Activation<F> needs F's derivative for its backward.
#include <tenet/tenet.hpp>
// expect: tenet: nn::Activation<F>: F must be default-constructible and give its derivative
struct clamp_to_unit {
    TENET_HD float operator()(float x) const { return x < -1.0f ? -1.0f : (x > 1.0f ? 1.0f : x); }
};
using spec = tenet::nn::Sequential<tenet::nn::Linear<8, 8>, tenet::nn::Activation<clamp_to_unit>>;
void f() { tenet::nn::model<spec, tenet::fp32, tenet::Shape<4, 8>, tenet::Host> m(1); }
