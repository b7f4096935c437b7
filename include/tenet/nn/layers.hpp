// tenet::nn layers: Linear, activations, LayerNorm, Dropout, Sequential, the
// owning model, and initialisers. See layer.hpp for the protocol.
#pragma once

#include "activation.hpp"
#include "dropout.hpp"
#include "init.hpp"
#include "layer.hpp"
#include "normalization.hpp"
#include "linear.hpp"
#include "model.hpp"
#include "sequential.hpp"
