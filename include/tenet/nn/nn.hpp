// tenet::nn layers: Linear, activations, LayerNorm, Dropout, Sequential, the
// owning model, and initialisers. See layer.hpp for the protocol.
#pragma once

#include "activation_layers.hpp"
#include "dropout.hpp"
#include "init.hpp"
#include "layer.hpp"
#include "layernorm_layer.hpp"
#include "linear_layer.hpp"
#include "linear_units.hpp"
#include "model.hpp"
#include "sequential.hpp"
