// tenet::nn layers: Linear, activations, LayerNorm, Dropout, Conv2d, pooling,
// BatchNorm2d, Flatten, Embedding, PositionalEmbedding, MeanPool, Residual,
// MultiHeadAttention, TransformerEncoderLayer, PatchEmbed, LastToken,
// Sequential, Frozen, the owning model, mode_scope, and initialisers. See
// layer.hpp for the protocol, parameterised_layer.hpp for a user's layer's base.
#pragma once

#include "activation_layers.hpp"
#include "attention.hpp"
#include "attention_projections.hpp"
#include "batchnorm_layer.hpp"
#include "cached_attention.hpp"
#include "conv_layer.hpp"
#include "decoding.hpp"
#include "dropout.hpp"
#include "embedding.hpp"
#include "flatten.hpp"
#include "frozen.hpp"
#include "init.hpp"
#include "layer.hpp"
#include "layernorm_layer.hpp"
#include "linear_layer.hpp"
#include "linear_units.hpp"
#include "mode_scope.hpp"
#include "model.hpp"
#include "parameterised_layer.hpp"
#include "patch_embed.hpp"
#include "pooling_layers.hpp"
#include "residual.hpp"
#include "sequence_pooling.hpp"
#include "sequential.hpp"
#include "transformer.hpp"
#include "valid_samples.hpp"
