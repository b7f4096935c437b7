// Linear algebra: matmul (Eigen on the host, cuBLASLt on the device), its
// fused epilogues, and the Linear layer's GEMMs (tenet::linalg).
#pragma once

#include "activation_kind.hpp"
#include "cublas_error.hpp"
#include "epilogue.hpp"
#include "int8_gemm.hpp"
#include "linear_gemms.hpp"
#include "matmul_expr.hpp"
#include "peak_probe.hpp"
