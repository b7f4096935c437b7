"""The JAX peers' models for bench/peers/mlp_epoch.py, in jax.numpy and
jax.lax alone (no flax): the MLP 784-256-128-10, the Fashion-MNIST
example's CNN and its Vision Transformer, as mlp_epoch.py's PyTorch peer
builds them (torch_model, torch_vit), on NHWC images [N, 28, 28, 1]
(convolutions: lax.conv_general_dilated, NHWC/HWIO).

build(name, key) -> (params, buffers, forward), where
forward(params, buffers, x, key) -> (logits, new buffers) runs in training
mode: dropout (inverted, 1 / (1 - rate) on the kept values, from the key
given), BatchNorm on the batch's statistics (its running statistics, the
buffers, move by momentum 0.1 towards the batch's mean and unbiased
variance, as PyTorch's). Parameters start as PyTorch's defaults do:
Linear and Conv2d weights and biases uniform in +-1/sqrt(fan_in)
(kaiming_uniform(a=sqrt(5))); BatchNorm and LayerNorm 1 and 0; the
attention's in-projection Xavier-uniform, its biases 0; the learned
positions N(0, 0.02^2). Dense weights are [in, out] (x @ w).

Where they differ from PyTorch's models, in layout only (the work is the
same): the CNN's dense 3136 -> 128 reads the pooled NHWC activations in
(h, w, c) order, as tenet's nn::Flatten does (PyTorch's nn.Flatten reads its
NCHW tensor in (c, h, w) order); the attention scales the scores q.k by
1/sqrt(head dim) after the product (PyTorch scales q before it).
"""
import math

import jax
import jax.numpy as jnp
from jax import lax

LN_EPS = BN_EPS = 1e-5
BN_MOMENTUM = 0.1
CNN_DROPOUT = 0.25
VIT_DIM, VIT_HEADS, VIT_HIDDEN, VIT_LAYERS, VIT_PATCH, VIT_TOKENS = 64, 4, 128, 4, 7, 16
VIT_DROPOUT = 0.1
NHWC = ("NHWC", "HWIO", "NHWC")


# Initialisers (PyTorch's defaults).
def uniform(key, shape, bound):
    return jax.random.uniform(key, shape, jnp.float32, -bound, bound)


def dense_init(key, fan_in, fan_out):
    """nn.Linear(fan_in, fan_out): {"w": [in, out], "b": [out]}."""
    kw, kb = jax.random.split(key)
    bound = 1 / math.sqrt(fan_in)
    return {"w": uniform(kw, (fan_in, fan_out), bound), "b": uniform(kb, (fan_out,), bound)}


def conv_init(key, size, c_in, c_out):
    """nn.Conv2d(c_in, c_out, size): {"w": HWIO [size, size, in, out], "b": [out]}."""
    kw, kb = jax.random.split(key)
    bound = 1 / math.sqrt(c_in * size * size)
    return {"w": uniform(kw, (size, size, c_in, c_out), bound), "b": uniform(kb, (c_out,), bound)}


def norm_init(channels):
    """BatchNorm's or LayerNorm's affine parameters: gamma 1, beta 0."""
    return {"g": jnp.ones((channels,), jnp.float32), "b": jnp.zeros((channels,), jnp.float32)}


# Layers.
def dense(p, x):
    return x @ p["w"] + p["b"]


def conv(p, x, stride=1, padding="SAME"):
    y = lax.conv_general_dilated(x, p["w"], (stride, stride), padding, dimension_numbers=NHWC)
    return y + p["b"]


def max_pool(x, size=2):
    """nn.MaxPool2d(size) on NHWC."""
    window = (1, size, size, 1)
    return lax.reduce_window(x, -jnp.inf, lax.max, window, window, "VALID")


def batch_norm(p, running, x):
    """nn.BatchNorm2d in training mode on NHWC: (y, new running statistics)."""
    mean = jnp.mean(x, axis=(0, 1, 2))
    var = jnp.mean(jnp.square(x - mean), axis=(0, 1, 2))  # biased, for the normalisation
    y = (x - mean) * lax.rsqrt(var + BN_EPS) * p["g"] + p["b"]
    count = x.size // x.shape[-1]
    mean, var = lax.stop_gradient(mean), lax.stop_gradient(var)
    running = {"mean": (1 - BN_MOMENTUM) * running["mean"] + BN_MOMENTUM * mean,
               "var": (1 - BN_MOMENTUM) * running["var"] + BN_MOMENTUM * var * (count / (count - 1))}
    return y, running


def layer_norm(p, x):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * lax.rsqrt(var + LN_EPS) * p["g"] + p["b"]


def dropout(key, x, rate):
    keep = jax.random.bernoulli(key, 1 - rate, x.shape)
    return jnp.where(keep, x / (1 - rate), jnp.zeros_like(x))


def gelu(x):
    return jax.nn.gelu(x, approximate=False)  # the erf form, PyTorch's default


def softmax_cross_entropy(logits, labels):
    """The mean over the batch, as F.cross_entropy."""
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), labels[:, None], axis=1))


# The MLP 784-256-128-10 (ReLU), on rows [N, 784].
MLP_SIZES = (784, 256, 128, 10)


def mlp_build(key):
    keys = jax.random.split(key, len(MLP_SIZES) - 1)
    params = [dense_init(k, fan_in, fan_out) for k, fan_in, fan_out in zip(keys, MLP_SIZES, MLP_SIZES[1:])]

    def forward(p, buffers, x, key):
        for layer in p[:-1]:
            x = jax.nn.relu(dense(layer, x))
        return dense(p[-1], x), buffers

    return params, {}, forward


# The CNN: conv 3x3 32 + ReLU + BatchNorm + max pool 2, conv 3x3 64 + ReLU +
# BatchNorm + max pool 2, flatten, dropout 0.25, dense 128 + ReLU, dense 10.
def cnn_build(key):
    k1, k2, k3, k4 = jax.random.split(key, 4)
    params = {"conv1": conv_init(k1, 3, 1, 32), "bn1": norm_init(32),
              "conv2": conv_init(k2, 3, 32, 64), "bn2": norm_init(64),
              "fc1": dense_init(k3, 7 * 7 * 64, 128), "fc2": dense_init(k4, 128, 10)}
    buffers = {name: {"mean": jnp.zeros((c,), jnp.float32), "var": jnp.ones((c,), jnp.float32)}
               for name, c in (("bn1", 32), ("bn2", 64))}

    def forward(p, buffers, x, key):
        x = jax.nn.relu(conv(p["conv1"], x))
        x, bn1 = batch_norm(p["bn1"], buffers["bn1"], x)
        x = max_pool(x)
        x = jax.nn.relu(conv(p["conv2"], x))
        x, bn2 = batch_norm(p["bn2"], buffers["bn2"], x)
        x = max_pool(x)
        x = dropout(key, x.reshape(x.shape[0], -1), CNN_DROPOUT)
        x = jax.nn.relu(dense(p["fc1"], x))
        return dense(p["fc2"], x), {"bn1": bn1, "bn2": bn2}

    return params, buffers, forward


# The ViT: 7x7 patches embedded to 64 (a conv of kernel and stride 7),
# learned positions for the 16 tokens, 4 pre-norm encoder layers as
# nn.TransformerEncoderLayer(64, 4, 128, dropout=0.1, activation="gelu",
# batch_first=True, norm_first=True) computes them in training:
#   x = x + Dropout(SelfAttention(LayerNorm(x)))  (dropout on the attention's weights too)
#   x = x + Dropout(Linear(Dropout(GELU(Linear(LayerNorm(x))))))
# then the mean over the tokens, LayerNorm, dense 10.
def encoder_init(key):
    k_in, k_out, k_1, k_2 = jax.random.split(key, 4)
    dim = VIT_DIM
    xavier = math.sqrt(6 / (dim + 3 * dim))  # in_proj_weight [3 dim, dim], xavier_uniform_
    out_proj = dense_init(k_out, dim, dim)
    return {"norm1": norm_init(dim),
            "attn": {"in": {"w": uniform(k_in, (dim, 3 * dim), xavier), "b": jnp.zeros((3 * dim,), jnp.float32)},
                     "out": {"w": out_proj["w"], "b": jnp.zeros((dim,), jnp.float32)}},
            "norm2": norm_init(dim),
            "lin1": dense_init(k_1, dim, VIT_HIDDEN), "lin2": dense_init(k_2, VIT_HIDDEN, dim)}


def self_attention(p, x, key):
    n, t, dim = x.shape
    head = dim // VIT_HEADS

    def heads(z):  # [n, t, dim] -> [n, heads, t, head]
        return z.reshape(n, t, VIT_HEADS, head).transpose(0, 2, 1, 3)

    q, k, v = (heads(z) for z in jnp.split(dense(p["in"], x), 3, axis=-1))
    weights = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / math.sqrt(head), axis=-1)
    weights = dropout(key, weights, VIT_DROPOUT)
    out = (weights @ v).transpose(0, 2, 1, 3).reshape(n, t, dim)
    return dense(p["out"], out)


def encoder_layer(p, x, key):
    k_attn, k_1, k_ff, k_2 = jax.random.split(key, 4)
    x = x + dropout(k_1, self_attention(p["attn"], layer_norm(p["norm1"], x), k_attn), VIT_DROPOUT)
    h = dropout(k_ff, gelu(dense(p["lin1"], layer_norm(p["norm2"], x))), VIT_DROPOUT)
    return x + dropout(k_2, dense(p["lin2"], h), VIT_DROPOUT)


def vit_build(key):
    k_proj, k_pos, k_head, k_layers = jax.random.split(key, 4)
    params = {"proj": conv_init(k_proj, VIT_PATCH, 1, VIT_DIM),
              "pos": 0.02 * jax.random.normal(k_pos, (1, VIT_TOKENS, VIT_DIM), jnp.float32),
              "layers": [encoder_init(k) for k in jax.random.split(k_layers, VIT_LAYERS)],
              "norm": norm_init(VIT_DIM), "head": dense_init(k_head, VIT_DIM, 10)}

    def forward(p, buffers, x, key):
        x = conv(p["proj"], x, VIT_PATCH, "VALID")  # [n, 4, 4, 64]
        x = x.reshape(x.shape[0], -1, VIT_DIM) + p["pos"]  # tokens in row-major patch order, as PyTorch's
        for layer, k in zip(p["layers"], jax.random.split(key, VIT_LAYERS)):
            x = encoder_layer(layer, x, k)
        return dense(p["head"], layer_norm(p["norm"], jnp.mean(x, axis=1))), buffers

    return params, {}, forward


BUILDERS = {"mlp": mlp_build, "cnn": cnn_build, "vit": vit_build}


def build(name, key):
    """(params, buffers, forward) of the model named (mlp, cnn or vit)."""
    return BUILDERS[name](key)
