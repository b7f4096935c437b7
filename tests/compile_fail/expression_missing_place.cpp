// A user's expression without a place: assigning it names the missing member.
#include <tenet/tenet.hpp>
// expect: tenet: expression: needs place
struct ramp {
    using shape = tenet::Shape<8>;
    using value_type = float;
    template <class Context>
    auto prepare(Context&) const
    {
        return 0;
    }
};
void f(tenet::Tensor<float, tenet::Shape<8>, tenet::Host>& t) { t = ramp{}; }
