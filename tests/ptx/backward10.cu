// The fused backward of a 10-operation expression over three variables of
// one shape, each used twice: ONE kernel writing all three gradients. Its
// main loop loads each input once -- a, b, c and dy, one 16-byte load each,
// although a, b and c occur twice in the expression -- stores each gradient
// once, and spills nothing. (The scalar loads and stores are the tail loop's,
// the same one of each.)
#include <tenet/tenet.hpp>

using namespace tenet;

using S = Shape<1 << 20>;

// PTX-IGNORE: EmptyKernel
// PTX-CHECK: kernels=1
// PTX-CHECK: kernel=elementwise_kernel ld.global.v4=4 ld.global.v1=4 ld.global.nc=8 st.global.v4=3 st.global.v1=3 spills=0
void run(Tensor<f32, S>& da, Tensor<f32, S>& db, Tensor<f32, S>& dc, const Tensor<f32, S>& a,
         const Tensor<f32, S>& b, const Tensor<f32, S>& c, const Tensor<f32, S>& dy)
{
    const auto A = var<0>(a);
    const auto B = var<1>(b);
    const auto C = var<2>(c);
    tie(da, db, dc) = gradients(tanh(A * B + C) * sigmoid(A) + exp(C * 0.5f) * square(B), dy);
}
