// A user's layer that counts its memory but misses one of those members
// (wants_preactivation_gradient): one tenet: line names that member.
#include <tenet/tenet.hpp>
// expect: tenet: layer: needs static constexpr bool wants_preactivation_gradient
struct Identity {
    template <class In>
    using output_shape = In;
    template <tenet::precision_policy P, class In, class Place>
    struct layer {
        static constexpr std::size_t parameter_count = 0, parameter_numel = 0;
        static constexpr std::size_t activation_bytes = 0, activation_gradient_bytes = 0;
        template <class Slice>
        explicit layer(Slice&) {}
        void initialize(std::uint64_t) {}
        template <class X, class Y>
        void forward(const X& x, const Y& y, const tenet::nn::step_info&) { y = x; }
        template <class DY, class DX, class Prev>
        void backward(const DY&, const DX&, const tenet::nn::step_info&, Prev&) {}
        template <class F>
        void for_each_parameter(F&&, const std::string&) {}
    };
};
using spec = tenet::nn::Sequential<tenet::nn::Linear<8, 8>, Identity>;
void f() { tenet::nn::model<spec, tenet::fp32, tenet::Shape<4, 8>, tenet::Host> m(1); }
