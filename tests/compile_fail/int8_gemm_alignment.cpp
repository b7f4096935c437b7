// cuBLASLt's int8 GEMM (IMMA) needs K and N to be multiples of 4: pad the features.
#include <tenet/linalg/int8_gemm.hpp>
#include <tenet/tenet.hpp>
// compilers: cuda
// expect: int8_gemm_unaligned_on_device<256UL, 10UL, 784UL>
void f(tenet::Tensor<tenet::i32, tenet::Shape<256, 10>>& acc, const tenet::Tensor<tenet::i8, tenet::Shape<256, 784>>& x,
       const tenet::Tensor<tenet::i8, tenet::Shape<10, 784>>& w)
{
    tenet::linalg::int8_gemm(acc, x, w);
}
