// The element types tenet stores and computes in, under short tenet names.
//
// The 16-bit and 8-bit floating types ARE the CUDA Toolkit's types (not
// look-alikes), so a pointer from cuBLAS, PyTorch or any CUDA library can be
// wrapped without a copy or a cast. Their headers compile with any C++20 host
// compiler; tenet never uses their implicit conversions: every conversion goes
// through tenet::convert (numeric/convert.hpp).
#pragma once

#include "../config.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

namespace tenet {

using f32 = float;
using f64 = double;
using f16 = __half;          // IEEE binary16: 1 sign, 5 exponent, 10 mantissa bits
using bf16 = __nv_bfloat16;  // bfloat16: 1 sign, 8 exponent, 7 mantissa bits
using f8e4m3 = __nv_fp8_e4m3;  // OCP fp8 E4M3 (no infinity, max 448)
using f8e5m2 = __nv_fp8_e5m2;  // OCP fp8 E5M2 (IEEE-like, max 57344)
using i8 = std::int8_t;
using i32 = std::int32_t;
// bool is an element type too: masks from comparisons are Tensor<bool, ...>.

}  // namespace tenet
