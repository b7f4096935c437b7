// A reduction written straight into a bf16 destination is ONE kernel: the
// path that would first reduce into an f32 scratch tensor (for a reduction
// inside a larger expression) is never instantiated.
#include <tenet/tenet.hpp>

using namespace tenet;

// PTX-CHECK: kernels=1
// PTX-IGNORE: EmptyKernel
// PTX-CHECK: kernel=reduce_rows ld.global.nc>=2 st.global=1 spills=0
void run(Tensor<bf16, Shape<4096>>& y, const Tensor<bf16, Shape<4096, 512>>& x)
{
    y = sum<1>(x * x);
}
