// The 30-operation chain, written once, for the benchmarks and the PTX tests
// that prove fusion. chain30(a, b, c, ops) is a template: the same text builds
// a tenet expression (fused: one loop or one kernel), tenet's one-op-at-a-time
// baseline, an Eigen Array expression, and the float reference (host, and the
// functor given to cub on the device). bench/peers/elementwise.py transcribes
// it line by line and checks itself against the reference values that
// host_elementwise prints.
//
// Each input is read once and every intermediate is used once (tenet and
// Eigen would evaluate a shared subexpression twice), so a fused evaluator
// does exactly 30 operations and three loads per element: mostly arithmetic,
// with abs, min, max, one exp and one tanh. For inputs in [0, 1) every
// intermediate stays within [-1, 6], and the result varies with the inputs
// (no clamp saturates for typical values), so comparisons mean something.
#pragma once

#include <tenet/tenet.hpp>

#include <memory>
#include <utility>
#include <vector>

namespace bench {

// ops supplies the functions spelled differently per backend (min max abs exp
// tanh) and step(e), applied to every op's result: the identity for a
// fused evaluation, "assign to a temporary" for the unfused baseline.
// __host__ __device__ for the float functor; nvcc must not flag the host-only
// instantiations (tenet and Eigen types).
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <class A, class B, class C, class Ops>
TENET_HD auto chain30(const A& a, const B& b, const C& c, Ops& o)
{
    auto t1 = o.step(a * 1.5f);
    auto t2 = o.step(t1 + 0.25f);
    auto t3 = o.step(t2 * b);
    auto t4 = o.step(t3 - c);
    auto t5 = o.step(o.abs(t4));
    auto t6 = o.step(o.min(t5, 1.5f));
    auto t7 = o.step(t6 + 0.5f);
    auto t8 = o.step(1.0f / t7);
    auto t9 = o.step(t8 * 0.5f);
    auto t10 = o.step(0.75f - t9);
    auto t11 = o.step(o.exp(t10));
    auto t12 = o.step(t11 * 0.25f);
    auto t13 = o.step(t12 - 0.5f);
    auto t14 = o.step(o.tanh(t13));
    auto t15 = o.step(t14 * 2.0f);
    auto t16 = o.step(t15 + 0.125f);
    auto t17 = o.step(o.abs(t16));
    auto t18 = o.step(o.min(t17, 1.5f));
    auto t19 = o.step(o.max(t18, 0.0625f));
    auto t20 = o.step(t19 * 3.0f);
    auto t21 = o.step(t20 - 1.0f);
    auto t22 = o.step(o.abs(t21));
    auto t23 = o.step(t22 + 0.5f);
    auto t24 = o.step(1.0f / t23);
    auto t25 = o.step(t24 * 0.75f);
    auto t26 = o.step(t25 - 0.25f);
    auto t27 = o.step(o.max(t26, -0.5f));
    auto t28 = o.step(o.min(t27, 2.0f));
    auto t29 = o.step(t28 * 4.0f);
    return o.step(t29 + 1.0f);
}

// Plain floats through tenet's own per-element functions (so min and max
// propagate NaN, as NumPy's and JAX's do): the reference, and the functor
// cub::DeviceTransform runs, so that it does exactly the work tenet does.
struct float_ops {
    template <class X>
    TENET_HD X step(X x) const
    {
        return x;
    }
    TENET_HD float min(float x, float y) const { return tenet::ops::minimum{}(x, y); }
    TENET_HD float max(float x, float y) const { return tenet::ops::maximum{}(x, y); }
    TENET_HD float abs(float x) const { return tenet::ops::absolute{}(x); }
    TENET_HD float exp(float x) const { return tenet::ops::exp{}(x); }
    TENET_HD float tanh(float x) const { return tenet::ops::tanh{}(x); }
};

TENET_HD inline float chain30_reference(float a, float b, float c)
{
    float_ops ops;
    return chain30(a, b, c, ops);
}

// tenet expressions, left unevaluated: the whole chain becomes one expression.
struct tenet_fused {
    template <class E>
    E step(E e) const
    {
        return e;
    }
    template <class X, class Y>
    auto min(const X& x, const Y& y) const
    {
        return tenet::min(x, y);
    }
    template <class X, class Y>
    auto max(const X& x, const Y& y) const
    {
        return tenet::max(x, y);
    }
    template <class X>
    auto abs(const X& x) const
    {
        return tenet::abs(x);
    }
    template <class X>
    auto exp(const X& x) const
    {
        return tenet::exp(x);
    }
    template <class X>
    auto tanh(const X& x) const
    {
        return tenet::tanh(x);
    }
};

// The unfused baseline, as an eager framework runs the chain: every op is
// assigned to a temporary of the storage type,
// one loop or kernel per op. Temporaries are allocated on the first run and
// reused after it (a caching allocator), so only the ops' work is timed; the
// chain asks for the same temporaries in the same order every run.
template <class Storage, class S, class Place>
class tenet_unfused : public tenet_fused {
public:
    template <class E>
    auto step(const E& e)
    {
        using tensor = tenet::Tensor<Storage, S, Place>;
        if (next_ == temporaries_.size()) temporaries_.push_back(std::make_shared<tensor>());
        tensor& t = *static_cast<tensor*>(temporaries_[next_++].get());
        t = e;
        return std::as_const(t).view();
    }

    // The chain's result: its last temporary, valid until the next run.
    template <class A, class B, class C>
    auto run(const A& a, const B& b, const C& c)
    {
        next_ = 0;
        return chain30(a, b, c, *this);
    }

private:
    std::vector<std::shared_ptr<void>> temporaries_;
    std::size_t next_ = 0;
};

}  // namespace bench
