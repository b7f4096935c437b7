// A broadcast bias: y = gelu(x * w + b) with b one row broadcast down 1024
// rows. One kernel; the bias is read with 16-byte loads too (its index is
// i % 4096, a mask, so chunks of 4 stay contiguous).
#include <tenet/tenet.hpp>

using namespace tenet;

// PTX-IGNORE: EmptyKernel
// PTX-CHECK: kernels=1
// PTX-CHECK: kernel=elementwise_kernel ld.global.v4=3 st.global.v4=1 spills=0
void run(Tensor<f32, Shape<1024, 4096>>& y, const Tensor<f32, Shape<1024, 4096>>& x,
         const Tensor<f32, Shape<1024, 4096>>& w, const Tensor<f32, Shape<4096>>& b)
{
    y = gelu(x * w + b);
}
