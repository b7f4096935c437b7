// Convolution and pooling over NHWC images (tenet::conv): window geometry,
// the im2col / col2im gathers and the pools as fusable expressions, and the
// convolution lowered onto linalg/'s GEMMs or, on the host in f32, run on
// oneDNN (conv2d_engine.hpp). nn/'s Conv2d and pooling layers
// are built on them.
#pragma once

#include "conv2d.hpp"
#include "conv2d_engine.hpp"
#include "geometry.hpp"
#include "im2col.hpp"
#include "pooling.hpp"
#include "window_expr.hpp"
