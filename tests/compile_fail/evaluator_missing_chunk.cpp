// A user's expression whose evaluator has no chunk<K>(i): assigning it names
// the missing member.
#include <tenet/tenet.hpp>
// expect: tenet: evaluator: needs chunk<K>(i)
struct ramp_eval {
    using value_type = float;
    static constexpr std::size_t smallest_element = 16;
    float at(std::size_t i) const { return static_cast<float>(i); }
    template <std::size_t K>
    bool aligned() const
    {
        return true;
    }
    template <class F>
    void visit_leaves(F&&, bool) const
    {
    }
};
struct ramp {
    using shape = tenet::Shape<8>;
    using value_type = float;
    using place = tenet::AnyPlace;
    template <class Context>
    ramp_eval prepare(Context&) const
    {
        return {};
    }
};
void f(tenet::Tensor<float, tenet::Shape<8>, tenet::Host>& t) { t = ramp{}; }
