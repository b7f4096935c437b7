// A user's expression without prepare(context): assigning it names the
// missing member.
#include <tenet/tenet.hpp>
// expect: tenet: expression: needs prepare(context)
struct ramp {
    using shape = tenet::Shape<8>;
    using value_type = float;
    using place = tenet::AnyPlace;
};
void f(tenet::Tensor<float, tenet::Shape<8>, tenet::Host>& t) { t = ramp{}; }
