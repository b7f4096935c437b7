// tenet::nn layers: Linear, activations, LayerNorm, Dropout, Conv2d, pooling,
// BatchNorm2d, Flatten, Sequential, the owning model, and initialisers. See
// layer.hpp for the protocol.
#pragma once

#include "activation_layers.hpp"
#include "batchnorm_layer.hpp"
#include "conv_layer.hpp"
#include "dropout.hpp"
#include "flatten.hpp"
#include "init.hpp"
#include "layer.hpp"
#include "layernorm_layer.hpp"
#include "linear_layer.hpp"
#include "linear_units.hpp"
#include "model.hpp"
#include "pooling_layers.hpp"
#include "sequential.hpp"
