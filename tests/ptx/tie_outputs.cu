// Multi-output: tie(y, mask) = pack(relu(x + b), x + b > 0) is ONE kernel
// storing 16 elements per thread in its main loop: 32 bytes of bf16 (two
// 16-byte stores) and 16 bytes of bool (one).
#include <tenet/tenet.hpp>

using namespace tenet;

// PTX-IGNORE: EmptyKernel
// PTX-CHECK: kernels=1
// PTX-CHECK: kernel=elementwise_kernel st.global.v4=3 spills=0
void run(Tensor<bf16, Shape<256, 1024>>& y, Tensor<bool, Shape<256, 1024>>& mask, const Tensor<bf16, Shape<256, 1024>>& x,
         const Tensor<bf16, Shape<1024>>& b)
{
    tie(y, mask) = pack(relu(x + b), x + b > 0);
}
