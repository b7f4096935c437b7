"""One training epoch of the MLP 784-256-128-10 (ReLU) on the CPU, float32,
in PyTorch (eager, and torch.compile when it works) or JAX (jax.jit of the
whole train step; optax's AdamW if installed, else the same update written
in jax.numpy): the peers of tenet's training benchmark
(bench_host_train_epoch). With --model cnn, the Fashion-MNIST example's CNN
instead, on 28x28x1 images: conv 3x3 32 + ReLU + BatchNorm + max pool 2,
conv 3x3 64 + ReLU + BatchNorm + max pool 2, dropout 0.25, dense 128 + ReLU,
dense 10, in PyTorch's channels_last memory format (NHWC, as tenet) and in
JAX on NHWC arrays, on the first --samples samples (10240 by default). With
--model vit, the example's Vision Transformer on the same images (10240
samples by default): 7x7 patches embedded to 64 (a Conv2d of kernel and
stride 7, as tenet's PatchEmbed computes), learned positions, 4 pre-norm
nn.TransformerEncoderLayer(64, 4 heads, MLP 128, GELU, dropout 0.1,
batch_first, norm_first), mean over the 16 tokens, LayerNorm, dense 10. The
JAX models (jax_models.py, beside this file: jax.numpy and jax.lax, no flax)
are the same layers in training mode (BatchNorm on the batch's statistics,
dropout from a key split each step inside the jitted step).

Batch 256, AdamW(lr=1e-3, weight_decay=1e-2), softmax cross-entropy with
mean reduction, on Fashion-MNIST (normalised as tenet's loader does:
(p/255 - 0.2860)/0.3530) when /usr/share/datasets/fashion-mnist exists, else
random data of its shape. Each epoch draws a new permutation; 60000 samples
make 234 full batches and a last one of 96 rows, which PyTorch and JAX train
on as is (a smaller batch; JAX compiles the step a second time for its shape,
during the warm-up). One warm-up epoch is not timed; the median of the timed
epochs (3) is printed as one JSON line per mode: {"framework", "model",
"mode", "epoch_s", "samples_per_s", "threads", "samples", "data"}. --loss
also prints each epoch's mean training loss to stderr.
Threads: the cores this process may run on, for both frameworks (torch:
set_num_threads; XLA's CPU pool is sized to the cores by default). Measure
on an otherwise idle machine: with 2 threads on 2 cores and other load,
PyTorch's spinning OpenMP threads made a step ~25x slower in testing.
"""
import argparse
import gzip
import json
import os
import statistics
import sys
import time

import numpy as np

DATA_DIR = "/usr/share/datasets/fashion-mnist"
SIZES = (784, 256, 128, 10)
BATCH = 256
LR, WEIGHT_DECAY = 1e-3, 1e-2
MEAN, STD = 0.2860, 0.3530


def load_train(samples):
    """(images [n, 784] float32 normalised, labels [n] int32, data name)."""
    images_path = os.path.join(DATA_DIR, "train-images-idx3-ubyte.gz")
    labels_path = os.path.join(DATA_DIR, "train-labels-idx1-ubyte.gz")
    if os.path.exists(images_path) and os.path.exists(labels_path):
        with gzip.open(images_path) as f:
            pixels = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784)
        with gzip.open(labels_path) as f:
            labels = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int32)
        data = "fashion-mnist"
    else:
        rng = np.random.default_rng(0)
        pixels = rng.integers(0, 256, (60000, 784), dtype=np.uint8)
        labels = rng.integers(0, 10, 60000, dtype=np.int32)
        data = "random"
    x = ((pixels[:samples].astype(np.float32) / 255 - MEAN) / STD).astype(np.float32)
    return x, labels[:samples], data


def batches(n, epoch):
    order = np.random.default_rng(epoch).permutation(n)
    return [order[i:i + BATCH] for i in range(0, n, BATCH)]


def time_epochs(run_epoch, epochs):
    run_epoch(0)  # warm-up: allocation, compilation (both batch shapes)
    seconds = []
    for epoch in range(1, epochs + 1):
        start = time.perf_counter()
        run_epoch(epoch)
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def report_loss(framework, mode, epoch, losses):
    """--loss: the epoch's mean training loss (the mean of its batches'), on stderr."""
    mean = float(np.mean([float(loss) for loss in losses]))
    print(f"{framework} {mode} epoch {epoch}: loss {mean:.4f}", file=sys.stderr, flush=True)


def torch_vit(torch):
    nn = torch.nn

    class ViT(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Conv2d(1, 64, 7, stride=7)
            self.pos = nn.Parameter(torch.randn(1, 16, 64) * 0.02)
            layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.1, activation="gelu", batch_first=True,
                                               norm_first=True)
            self.encoder = nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(64)
            self.head = nn.Linear(64, 10)

        def forward(self, x):
            tokens = self.proj(x).flatten(2).transpose(1, 2) + self.pos
            return self.head(self.norm(self.encoder(tokens).mean(1)))

    return ViT()


def torch_model(torch, model_name):
    nn = torch.nn
    if model_name == "vit":
        return torch_vit(torch)
    if model_name == "cnn":
        return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.BatchNorm2d(32), nn.MaxPool2d(2),
                             nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.BatchNorm2d(64), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Dropout(0.25), nn.Linear(3136, 128), nn.ReLU(),
                             nn.Linear(128, 10)).to(memory_format=torch.channels_last)
    layers = []
    for fan_in, fan_out in zip(SIZES, SIZES[1:]):
        layers += [nn.Linear(fan_in, fan_out), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def torch_modes(x_np, y_np, threads, compile_too, model_name, show_loss=False):
    import torch
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    x_all, y_all = torch.from_numpy(x_np), torch.from_numpy(y_np).long()
    if model_name == "cnn":
        x_all = x_all.reshape(-1, 1, 28, 28).contiguous(memory_format=torch.channels_last)
    if model_name == "vit":
        x_all = x_all.reshape(-1, 1, 28, 28)
    modes = []
    for mode in ["eager"] + (["compile"] if compile_too else []):
        model = torch_model(torch, model_name)
        opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
        forward, update = model, opt.step
        if mode == "compile":
            forward, update = torch.compile(model), torch.compile(opt.step)

        def run_epoch(epoch, mode=mode):
            losses = []
            for index in batches(len(x_all), epoch):
                idx = torch.from_numpy(index)
                opt.zero_grad(set_to_none=True)
                loss = torch.nn.functional.cross_entropy(forward(x_all[idx]), y_all[idx])
                loss.backward()
                update()
                if show_loss:
                    losses.append(loss.detach())
            if show_loss:
                report_loss("torch", mode, epoch, losses)

        modes.append((mode, run_epoch))
    return modes


def jax_modes(x_np, y_np, threads, compile_too, model_name, show_loss=False):
    import jax
    import jax.numpy as jnp

    import jax_models  # (this directory: the models in jax.numpy / jax.lax)

    if model_name != "mlp":
        x_np = x_np.reshape(-1, 28, 28, 1)  # NHWC
    init_key, dropout_key = jax.random.split(jax.random.PRNGKey(0))
    params, buffers, forward = jax_models.build(model_name, init_key)

    def loss_fn(p, buffers, x, y, key):
        logits, buffers = forward(p, buffers, x, key)
        return jax_models.softmax_cross_entropy(logits, y), buffers

    try:
        import optax
        mode = "jit+optax"
        tx = optax.adamw(LR, weight_decay=WEIGHT_DECAY)
        opt_state = tx.init(params)

        def apply(p, state, grads):
            updates, state = tx.update(grads, state, p)
            return optax.apply_updates(p, updates), state
    except ImportError:  # torch.optim.AdamW's update, written out
        mode = "jit"
        zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
        opt_state = (zeros, zeros, jnp.zeros((), jnp.int32))
        b1, b2, eps = 0.9, 0.999, 1e-8

        def apply(p, state, grads):
            m, v, t = state
            t = t + 1
            m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
            v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
            c1, c2 = 1 - b1 ** t, 1 - b2 ** t
            p = jax.tree_util.tree_map(
                lambda w, m, v: w * (1 - LR * WEIGHT_DECAY) - LR * (m / c1) / (jnp.sqrt(v / c2) + eps), p, m, v)
            return p, (m, v, t)

    @jax.jit
    def step(p, state, buffers, key, x, y):
        key, step_key = jax.random.split(key)  # a new dropout key each step
        (loss, buffers), grads = jax.value_and_grad(loss_fn, has_aux=True)(p, buffers, x, y, step_key)
        p, state = apply(p, state, grads)
        return p, state, buffers, key, loss

    state = [params, opt_state, buffers, dropout_key]

    def run_epoch(epoch):
        p, s, b, k = state
        losses = []
        for index in batches(len(x_np), epoch):
            p, s, b, k, loss = step(p, s, b, k, x_np[index], y_np[index])
            losses.append(loss)
        jax.block_until_ready(p)
        state[:] = [p, s, b, k]
        if show_loss:
            report_loss("jax", mode, epoch, losses)

    return [(mode, run_epoch)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--framework", choices=["torch", "jax"], required=True)
    parser.add_argument("--epochs", type=int, default=3, help="timed epochs (median)")
    parser.add_argument("--model", choices=["mlp", "cnn", "vit"], default="mlp")
    parser.add_argument("--samples", type=int, default=None,
                        help="the first N training samples (default: 60000 for the MLP, 10240 for the CNN and the ViT)")
    parser.add_argument("--no-compile", action="store_true", help="torch: eager only")
    parser.add_argument("--loss", action="store_true",
                        help="print each epoch's mean training loss to stderr (read inside the timed epochs)")
    args = parser.parse_args()

    threads = len(os.sched_getaffinity(0))
    x, y, data = load_train(args.samples or (60000 if args.model == "mlp" else 10240))
    modes = torch_modes if args.framework == "torch" else jax_modes
    for mode, run_epoch in modes(x, y, threads, not args.no_compile, args.model, args.loss):
        try:
            epoch_s = time_epochs(run_epoch, args.epochs)
        except Exception as e:  # torch.compile needs a working C++ toolchain; eager must work
            if mode != "compile":
                raise
            print(f"skipped: torch.compile failed: {type(e).__name__}: {str(e)[:300]}", file=sys.stderr)
            continue
        print(json.dumps({"framework": args.framework, "model": args.model, "mode": mode, "epoch_s": round(epoch_s, 4),
                          "samples_per_s": round(len(x) / epoch_s, 1), "threads": threads,
                          "samples": len(x), "data": data}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
