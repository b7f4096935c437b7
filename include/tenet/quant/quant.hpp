// quant/: int8 quantization (observers, quantize/dequantize, quantized
// tensors, post-training quantization, quantization-aware training, the int8
// GEMM path) and fp8 training with delayed scaling.
#pragma once

#include "fp8.hpp"
#include "fp8_linear.hpp"
#include "granularity.hpp"
#include "int8_model.hpp"
#include "observers.hpp"
#include "qat.hpp"
#include "qparams.hpp"
#include "qtensor.hpp"
#include "quantize.hpp"
