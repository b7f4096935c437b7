// The 30-operation chain with bf16 storage: still one kernel, three 16-byte
// loads (8 elements each) and one 16-byte store in the main loop, f32 math.
#include "chain30.hpp"  // bench/chain30.hpp: the benchmarks' chain

// PTX-IGNORE: EmptyKernel
// PTX-CHECK: kernels=1
// PTX-CHECK: kernel=elementwise_kernel ld.global.v4=3 ld.global.nc=6 st.global.v4=1 st.global.v1=1 spills=0
void run(tenet::Tensor<tenet::bf16, tenet::Shape<1 << 24>>& y,
         const tenet::Tensor<tenet::bf16, tenet::Shape<1 << 24>>& a,
         const tenet::Tensor<tenet::bf16, tenet::Shape<1 << 24>>& b,
         const tenet::Tensor<tenet::bf16, tenet::Shape<1 << 24>>& c)
{
    bench::tenet_fused ops;
    y = bench::chain30(a, b, c, ops);
}
