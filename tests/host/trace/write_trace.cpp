// Trains a small MLP for a few steps on the host with a layer_profile that
// writes every section to the Chrome trace file given (read_back.py reads
// it with Python's own JSON reader). With --stop-early the process ends
// abruptly (std::_Exit, no destructor runs) inside the third step's
// backward: the file must still be a closed JSON document.
#include <tenet/tenet.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace tenet;

namespace {

// Passes its input through; ends the process in its third backward when asked.
struct StopsEarly {
    template <class S>
    using output_shape = S;
    template <precision_policy P, class S, class Place>
    struct layer : nn::parameterless_layer {
        using nn::parameterless_layer::parameterless_layer;
        template <class X, class Y>
        void forward(const X& x, const Y& y, const nn::step_info&)
        {
            assign(nn::contiguous_as<S>(y), nn::contiguous_as<S>(x));
        }
        template <class DY, class DX, class Prev>
        void backward(const DY& dy, const DX& dx, const nn::step_info& step, Prev&)
        {
            if (stop_early && step.step == 3) std::_Exit(3);
            if constexpr (!nn::is_no_input_gradient<DX>) assign(nn::contiguous_as<S>(dx), nn::contiguous_as<S>(dy));
        }
    };
    static inline bool stop_early = false;
};

}  // namespace

int main(int argc, char** argv)
{
    if (argc < 2 || argc > 3 || (argc == 3 && std::string(argv[2]) != "--stop-early")) {
        std::fprintf(stderr, "usage: %s TRACE.json [--stop-early]\n", argv[0]);
        return 2;
    }
    StopsEarly::stop_early = argc == 3;
    using spec = nn::Sequential<nn::Linear<12, 32>, nn::ReLU, nn::Residual<nn::Linear<32, 32>, nn::Tanh>, StopsEarly,
                                nn::Linear<32, 4>>;
    nn::model<spec, fp32, Shape<16, 12>, Host> net(1);
    train::trainer t(net, train::adamw{}, train::constant_lr{1e-3f});
    Tensor<f32, Shape<16, 12>, Host> x;
    Tensor<i32, Shape<16>, Host> labels, valid;
    for (std::size_t i = 0; i < x.numel; ++i) x.data()[i] = static_cast<f32>((i * 7919) % 17) * 0.1f - 0.8f;
    for (std::size_t i = 0; i < 16; ++i) labels.data()[i] = static_cast<i32>(i % 4), valid.data()[i] = 1;
    profile::trace_writer trace(argv[1]);
    profile::layer_profile p({.warmup_steps = 1, .trace = &trace});
    t.observe(&p);
    for (int s = 0; s < 4; ++s) {
        { const auto wait = p.data_wait(); }
        t.step(x, labels, valid);
    }
    t.observe(nullptr);
}
