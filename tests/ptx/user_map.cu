// A user's functor through tenet::map is fused exactly like the built-ins:
// a chain that mixes it (binary, with state) with built-in ops over bf16
// tensors is ONE kernel whose main loop makes one 16-byte load per input and
// one 16-byte store, and spills nothing -- the same code a built-in op gets.
#include <tenet/tenet.hpp>

using namespace tenet;

namespace user {
// A leaky, shifted blend of two operands, with state.
struct blend {
    float slope;
    template <class A, class B>
    __host__ __device__ auto operator()(A a, B b) const
    {
        const auto s = a + b;
        return s > 0 ? s : s * slope;
    }
};
}  // namespace user

// PTX-IGNORE: EmptyKernel
// PTX-CHECK: kernels=1
// PTX-CHECK: kernel=elementwise_kernel ld.global.v4=2 st.global.v4=1 spills=0
void run(Tensor<bf16, Shape<1 << 20>>& y, const Tensor<bf16, Shape<1 << 20>>& a, const Tensor<bf16, Shape<1 << 20>>& b)
{
    y = exp(map(user::blend{0.1f}, a * 2.0f, b)) - 1.0f;
}
