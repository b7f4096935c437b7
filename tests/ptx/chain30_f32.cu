// Fusion, proved on the compiler's output: a 30-operation chain over three
// f32 tensors assigned to a fourth is ONE kernel whose main loop makes three
// 16-byte loads (one per input, read-only) and one 16-byte store, and spills
// nothing. (The scalar loads are the tail and misaligned fallback loops.)
#include "chain30.hpp"  // bench/chain30.hpp: the benchmarks' chain

// PTX-IGNORE: EmptyKernel
// PTX-CHECK: kernels=1
// PTX-CHECK: kernel=elementwise_kernel ld.global.v4=3 ld.global.nc=6 st.global.v4=1 st.global.v1=1 spills=0
void run(tenet::Tensor<float, tenet::Shape<1 << 24>>& y, const tenet::Tensor<float, tenet::Shape<1 << 24>>& a,
         const tenet::Tensor<float, tenet::Shape<1 << 24>>& b, const tenet::Tensor<float, tenet::Shape<1 << 24>>& c)
{
    bench::tenet_fused ops;
    y = bench::chain30(a, b, c, ops);
}
