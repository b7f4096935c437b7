"""The peers of bench/host_inference.cpp: inference latency of the same
models, on the same weights, in PyTorch eager, torch.compile (mode default)
and ONNX Runtime (the model exported with torch.onnx.export; intra-op
threads = the core count, sequential execution, all graph optimizations),
batch 1 and 32, median and p99 of many single calls after a warm-up, one JSON
line per (framework, model, precision, batch) as the tenet bench prints them.

The models are read from the directory bench_host_inference wrote (--dir,
default /tmp/tenet_inference): NAME_bB.safetensors (tenet's parameters with
PyTorch's names and layouts), NAME_bB_input.npy (or _tokens.npy) and
NAME_bB_fp32_out.npy (tenet's output for it). Each torch model is checked
against tenet's output first ("host_inference_check" lines: the largest
absolute difference, and ok when it is within 1e-4 of the logits' scale);
a model that disagrees is not timed.

  mlp      nn.Sequential of Linear/ReLU (784-256-128-10)
  cnn      the example's CNN, NCHW. tenet's Flatten is (h, w, c); the first
           Linear's columns are permuted once at load to PyTorch's (c, h, w).
           The images are 28x28x1: NHWC and NCHW are the same bytes.
  vit      Conv2d patch embedding (kernel = stride = 7, tenet's proj.weight
           reshaped), learned positions, 4 nn.TransformerEncoderLayer
           (norm_first, exact GELU, batch_first: PyTorch's fused fast path
           in eval), mean over tokens, LayerNorm, Linear
  char_lm  one KV-cached decode step of char_lm's gpt, written here with
           tenet's math: a cache [2, B, Heads, Context, Dim/Heads] per block;
           the step's query attends over the cache's positions < pos and its
           own key/value (softmax over both), and returns the logits and the
           step's keys/values, which the caller writes into the caches at pos
           (in place: torch tensors / NumPy arrays bound to ONNX Runtime
           through IOBinding, no copy of the caches). Timed at position 64,
           the same step each call (each sequence's cache filled to 64).

int8 (MLP and CNN; the ViT and the decode step have no tenet int8 form yet,
so no int8 peer is run for them):
  torch eager   torch.ao.quantization.quantize_dynamic on nn.Linear (qint8
                weights, activations quantized per call; the CNN's
                convolutions stay fp32)
  onnxruntime   onnxruntime.quantization.quantize_dynamic of the fp32 ONNX
                file (QInt8 weights; MatMul/Gemm and Conv become integer ops)
  torch.compile of the int8 models is not measured.

  inference_cpu.py [--dir DIR] [--models mlp,cnn,vit,char_lm] [--batches 1,32]
                   [--frameworks eager,compile,onnxruntime] [--quick]
  inference_cpu.py --table FILE   a Markdown table from FILE's JSON lines
                                  (tenet's and this script's)
"""
import argparse
import json
import math
import os
import sys
import tempfile
import time
import warnings

LEAST = {1: 500, 32: 200}


def line(**fields):
    print(json.dumps({"bench": "host_inference", **fields}), flush=True)


def check_line(**fields):
    print(json.dumps({"bench": "host_inference_check", **fields}), flush=True)


def time_calls(call, batch, quick):
    """Median and p99 in microseconds of single calls: 20 warm-up calls, then
    as many as fit in about 2 s (0.3 s with --quick), at least LEAST[batch]."""
    budget = 0.3 if quick else 2.0
    most = 500 if quick else 20000
    least = LEAST.get(batch, 200)
    for _ in range(20):
        call()
    us = []
    start = time.perf_counter()
    while len(us) < most and (len(us) < least or time.perf_counter() - start < budget):
        t0 = time.perf_counter_ns()
        call()
        us.append((time.perf_counter_ns() - t0) / 1000.0)
    us.sort()
    return {"median_us": round(us[len(us) // 2], 3),
            "p99_us": round(us[min(len(us) - 1, int(0.99 * len(us)))], 3), "calls": len(us)}


# --------------------------------------------------------------------- models

def build_mlp(torch, nn, sd):
    m = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    m.load_state_dict(sd)
    return m


def build_cnn(torch, nn, sd):
    m = nn.Sequential(nn.Conv2d(1, 32, 3, 1, 1), nn.ReLU(), nn.BatchNorm2d(32), nn.MaxPool2d(2),
                      nn.Conv2d(32, 64, 3, 1, 1), nn.ReLU(), nn.BatchNorm2d(64), nn.MaxPool2d(2), nn.Flatten(),
                      nn.Dropout(0.25), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))
    sd = dict(sd)
    # tenet's Flatten is (h, w, c); PyTorch's (c, h, w): permute the columns once.
    sd["10.weight"] = sd["10.weight"].reshape(128, 7, 7, 64).permute(0, 3, 1, 2).reshape(128, 3136).contiguous()
    m.load_state_dict(sd)
    return m


def encoder_names(prefix, sd):
    """tenet's TransformerEncoderLayer names -> nn.TransformerEncoderLayer's."""
    table = {"0.0.": "norm1.", "0.1.": "self_attn.", "1.0.": "norm2.", "1.1.": "linear1.", "1.3.": "linear2."}
    out = {}
    for key, value in sd.items():
        if key.startswith(prefix):
            rest = key[len(prefix):]
            for a, b in table.items():
                if rest.startswith(a):
                    out[b + rest[len(a):]] = value
                    break
            else:
                raise KeyError(key)
    return out


def build_vit(torch, nn, sd):
    class ViT(nn.Module):
        def __init__(self):
            super().__init__()
            self.patch = nn.Conv2d(1, 64, 7, 7)
            self.pos = nn.Parameter(torch.zeros(16, 64))
            self.layers = nn.ModuleList(
                nn.TransformerEncoderLayer(64, 4, 128, dropout=0.1, activation="gelu", batch_first=True,
                                           norm_first=True) for _ in range(4))
            self.norm = nn.LayerNorm(64)
            self.head = nn.Linear(64, 10)

        def forward(self, x):  # x: NHWC [N, 28, 28, 1], the same bytes as NCHW [N, 1, 28, 28]
            t = self.patch(x.reshape(x.shape[0], 1, 28, 28)).flatten(2).transpose(1, 2) + self.pos
            for layer in self.layers:
                t = layer(t)
            return self.head(self.norm(t.mean(1)))

    m = ViT()
    with torch.no_grad():
        m.patch.weight.copy_(sd["0.proj.weight"].reshape(64, 1, 7, 7))
        m.patch.bias.copy_(sd["0.proj.bias"])
        m.pos.copy_(sd["1.weight"])
        for i, layer in enumerate(m.layers):
            layer.load_state_dict(encoder_names(f"{i + 2}.", sd))
        m.norm.load_state_dict({"weight": sd["7.weight"], "bias": sd["7.bias"]})
        m.head.load_state_dict({"weight": sd["8.weight"], "bias": sd["8.bias"]})
    return m


VOCAB, CONTEXT, WIDTH, HEADS, BLOCKS = 128, 128, 128, 4, 4


def build_gpt_step(torch, nn, sd):
    F = torch.nn.functional
    D = WIDTH // HEADS

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
            self.qkv, self.out = nn.Linear(WIDTH, 3 * WIDTH), nn.Linear(WIDTH, WIDTH)
            self.fc1, self.fc2 = nn.Linear(WIDTH, 4 * WIDTH), nn.Linear(4 * WIDTH, WIDTH)

        def forward(self, x, cache, visible):
            # x [B, W]; cache [2, B, H, C, D]; visible [B, 1, 1, C]: positions < pos
            B = x.shape[0]
            qkv = self.qkv(self.ln1(x)).reshape(B, 3, HEADS, 1, D)
            q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]  # [B, H, 1, D]
            scale = 1.0 / math.sqrt(D)
            old = torch.matmul(q, cache[0].transpose(-1, -2)) * scale  # [B, H, 1, C]
            old = old.masked_fill(~visible, float("-inf"))
            new = (q * k).sum(-1, keepdim=True) * scale  # [B, H, 1, 1]
            p = torch.softmax(torch.cat([old, new], -1), -1)
            o = torch.matmul(p[..., :CONTEXT], cache[1]) + p[..., CONTEXT:] * v  # [B, H, 1, D]
            x = x + self.out(o.reshape(B, WIDTH))
            x = x + self.fc2(F.gelu(self.fc1(self.ln2(x))))
            return x, torch.stack([k, v]).reshape(2, B, HEADS, D)

    class Step(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(VOCAB, WIDTH)
            self.pos = nn.Embedding(CONTEXT, WIDTH)
            self.blocks = nn.ModuleList(Block() for _ in range(BLOCKS))
            self.norm = nn.LayerNorm(WIDTH)
            self.head = nn.Linear(WIDTH, VOCAB)
            self.register_buffer("slots", torch.arange(CONTEXT), persistent=False)

        def forward(self, tokens, pos, c0, c1, c2, c3):
            # tokens, pos: i64 [B]; c_l: block l's cache [2, B, H, C, D]
            x = self.embed(tokens) + self.pos(pos)
            visible = (self.slots[None, :] < pos[:, None]).reshape(-1, 1, 1, CONTEXT)
            fresh = []
            for block, cache in zip(self.blocks, (c0, c1, c2, c3)):
                x, kv = block(x, cache, visible)
                fresh.append(kv)
            return self.head(self.norm(x)), torch.stack(fresh)  # [B, V], [L, 2, B, H, D]

    m = Step()
    with torch.no_grad():
        m.embed.weight.copy_(sd["0.weight"])
        m.pos.weight.copy_(sd["1.weight"])
        for i, b in enumerate(m.blocks):
            p = f"{i + 2}."
            b.ln1.load_state_dict({"weight": sd[p + "0.0.weight"], "bias": sd[p + "0.0.bias"]})
            b.qkv.load_state_dict({"weight": sd[p + "0.1.in_proj_weight"], "bias": sd[p + "0.1.in_proj_bias"]})
            b.out.load_state_dict({"weight": sd[p + "0.1.out_proj.weight"], "bias": sd[p + "0.1.out_proj.bias"]})
            b.ln2.load_state_dict({"weight": sd[p + "1.0.weight"], "bias": sd[p + "1.0.bias"]})
            b.fc1.load_state_dict({"weight": sd[p + "1.1.weight"], "bias": sd[p + "1.1.bias"]})
            b.fc2.load_state_dict({"weight": sd[p + "1.3.weight"], "bias": sd[p + "1.3.bias"]})
        m.norm.load_state_dict({"weight": sd["6.weight"], "bias": sd["6.bias"]})
        m.head.load_state_dict({"weight": sd["7.weight"], "bias": sd["7.bias"]})
    return m


BUILDERS = {"mlp": build_mlp, "cnn": build_cnn, "vit": build_vit, "char_lm": build_gpt_step}
INT8_MODELS = ("mlp", "cnn")


def max_diff(np, a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.max(np.abs(a - b))), float(np.max(np.abs(b)))


# --------------------------------------------------------------- the decode step

class Decode:
    """The char_lm step's state in torch: caches [2, B, H, C, D] per block,
    filled by replaying tokens; write(kv, at) stores a step's keys/values."""

    def __init__(self, torch, batch):
        self.torch = torch
        self.batch = batch
        self.caches = [torch.zeros(2, batch, HEADS, CONTEXT, WIDTH // HEADS) for _ in range(BLOCKS)]

    def write(self, kv, at):
        for l in range(BLOCKS):
            self.caches[l][:, :, :, at, :] = kv[l]

    def replay(self, step, tokens):
        """Steps through tokens [B, T] from position 0; the last step's logits."""
        torch = self.torch
        for c in self.caches:
            c.zero_()
        logits = None
        for t in range(tokens.shape[1]):
            pos = torch.full((self.batch,), t, dtype=torch.int64)
            logits, kv = step(tokens[:, t].contiguous(), pos, *self.caches)
            self.write(kv, t)
        return logits


# ------------------------------------------------------------------ ONNX Runtime

def ort_session(ort, path):
    so = ort.SessionOptions()
    so.intra_op_num_threads = os.cpu_count()
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def export_onnx(torch, module, args, path, input_names, output_names):
    """torch.onnx.export: the dynamo exporter first, the TorchScript one if it
    fails. Returns which one wrote the file."""
    errors = []
    for dynamo in (True, False):
        try:
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")
                torch.onnx.export(module, args, path, input_names=input_names, output_names=output_names,
                                  dynamo=dynamo, opset_version=18, verbose=False)
            return "dynamo" if dynamo else "torchscript", errors
        except Exception as e:  # noqa: BLE001 -- reported, then the other exporter
            errors.append(f"{'dynamo' if dynamo else 'torchscript'}: {type(e).__name__}: {str(e)[:200]}")
    raise RuntimeError("; ".join(errors))


# ------------------------------------------------------------------------ main

def run_classifier(args, torch, np, ort, name, batch, tmp):
    nn = torch.nn
    from safetensors.torch import load_file
    stem = os.path.join(args.dir, f"{name}_b{batch}")
    sd = {k: v for k, v in load_file(stem + ".safetensors").items()}
    m = BUILDERS[name](torch, nn, sd).eval()
    x_np = np.load(stem + "_input.npy")
    want = np.load(stem + "_fp32_out.npy")
    x = torch.from_numpy(x_np) if name != "cnn" else torch.from_numpy(x_np).reshape(batch, 1, 28, 28)
    with torch.inference_mode():
        got = m(x).numpy()
    diff, scale = max_diff(np, got, want)
    ok = diff <= 1e-4 * max(1.0, scale)
    check_line(framework="torch-eager", model=name, precision="fp32", batch=batch, against="tenet fp32",
               max_abs_diff=diff, logit_scale=scale, ok=ok)
    if not ok:
        line(framework="torch", model=name, precision="fp32", batch=batch, skipped="outputs differ from tenet's")
        return
    threads = torch.get_num_threads()
    if "eager" in args.frameworks:
        with torch.inference_mode():
            r = time_calls(lambda: m(x), batch, args.quick)
        line(framework="torch-eager", model=name, precision="fp32", batch=batch, **r, threads=threads)
    if "compile" in args.frameworks:
        try:
            c = torch.compile(m)
            start = time.perf_counter()
            with torch.inference_mode():
                got_c = c(x).numpy()
            compile_s = time.perf_counter() - start
            d, _ = max_diff(np, got_c, want)
            check_line(framework="torch-compile", model=name, precision="fp32", batch=batch, against="tenet fp32",
                       max_abs_diff=d, compile_s=round(compile_s, 1))
            with torch.inference_mode():
                r = time_calls(lambda: c(x), batch, args.quick)
            line(framework="torch-compile", model=name, precision="fp32", batch=batch, **r, threads=threads)
        except Exception as e:  # noqa: BLE001
            line(framework="torch-compile", model=name, precision="fp32", batch=batch,
                 skipped=f"torch.compile failed: {type(e).__name__}: {str(e)[:300]}")
    onnx_path = os.path.join(tmp, f"{name}_b{batch}.onnx")
    exported = False
    if "onnxruntime" in args.frameworks:
        if ort is None:
            line(framework="onnxruntime", model=name, precision="fp32", batch=batch, skipped="onnxruntime not installed")
        else:
            try:
                how, errors = export_onnx(torch, m, (x,), onnx_path, ["x"], ["y"])
                exported = True
                s = ort_session(ort, onnx_path)
                feed = {"x": x.numpy()}
                got_o = s.run(None, feed)[0]
                d, _ = max_diff(np, got_o, want)
                check_line(framework="onnxruntime", model=name, precision="fp32", batch=batch, against="tenet fp32",
                           max_abs_diff=d, exporter=how, export_errors=errors)
                r = time_calls(lambda: s.run(None, feed), batch, args.quick)
                line(framework="onnxruntime", model=name, precision="fp32", batch=batch, **r,
                     threads=os.cpu_count())
            except Exception as e:  # noqa: BLE001
                line(framework="onnxruntime", model=name, precision="fp32", batch=batch,
                     skipped=f"{type(e).__name__}: {str(e)[:300]}")

    if name not in INT8_MODELS:
        line(framework="peers", model=name, precision="int8", batch=batch,
             skipped="not measured: tenet has no int8 form of this model yet")
        return
    want_int8 = np.load(stem + "_int8_out.npy")
    if "eager" in args.frameworks:
        try:
            q = torch.ao.quantization.quantize_dynamic(m, {nn.Linear}, dtype=torch.qint8)
            with torch.inference_mode():
                got_q = q(x).numpy()
            check_line(framework="torch-eager", model=name, precision="int8", batch=batch,
                       max_abs_diff_vs_tenet_fp32=max_diff(np, got_q, want)[0],
                       max_abs_diff_vs_tenet_int8=max_diff(np, got_q, want_int8)[0],
                       quantized="nn.Linear (dynamic, qint8)")
            with torch.inference_mode():
                r = time_calls(lambda: q(x), batch, args.quick)
            line(framework="torch-eager", model=name, precision="int8", batch=batch, **r, threads=threads)
        except Exception as e:  # noqa: BLE001
            line(framework="torch-eager", model=name, precision="int8", batch=batch,
                 skipped=f"quantize_dynamic failed: {type(e).__name__}: {str(e)[:300]}")
    if "compile" in args.frameworks:
        line(framework="torch-compile", model=name, precision="int8", batch=batch, skipped="not measured")
    if "onnxruntime" in args.frameworks and ort is not None and exported:
        try:
            from onnxruntime.quantization import QuantType, quantize_dynamic
            int8_path = os.path.join(tmp, f"{name}_b{batch}.int8.onnx")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                quantize_dynamic(onnx_path, int8_path, weight_type=QuantType.QInt8)
            s = ort_session(ort, int8_path)
            feed = {"x": x.numpy()}
            got_o = s.run(None, feed)[0]
            ops = sorted({n.op_type for n in __import__("onnx").load(int8_path).graph.node})
            check_line(framework="onnxruntime", model=name, precision="int8", batch=batch,
                       max_abs_diff_vs_tenet_fp32=max_diff(np, got_o, want)[0],
                       max_abs_diff_vs_tenet_int8=max_diff(np, got_o, want_int8)[0], ops=ops)
            r = time_calls(lambda: s.run(None, feed), batch, args.quick)
            line(framework="onnxruntime", model=name, precision="int8", batch=batch, **r, threads=os.cpu_count())
        except Exception as e:  # noqa: BLE001
            line(framework="onnxruntime", model=name, precision="int8", batch=batch,
                 skipped=f"{type(e).__name__}: {str(e)[:300]}")


def run_decode(args, torch, np, ort, batch, tmp):
    nn = torch.nn
    from safetensors.torch import load_file
    stem = os.path.join(args.dir, f"char_lm_b{batch}")
    sd = load_file(stem + ".safetensors")
    m = build_gpt_step(torch, nn, sd).eval()
    tokens = torch.from_numpy(np.load(stem + "_tokens.npy").astype(np.int64))  # [B, 65]
    want = np.load(stem + "_fp32_out.npy")
    at = tokens.shape[1] - 1  # the timed step's position (64)
    state = Decode(torch, batch)
    with torch.inference_mode():
        got = state.replay(m, tokens).numpy()
    diff, scale = max_diff(np, got, want)
    ok = diff <= 1e-4 * max(1.0, scale)
    check_line(framework="torch-eager", model="char_lm", precision="fp32", batch=batch, against="tenet decoder step",
               position=at, max_abs_diff=diff, logit_scale=scale, ok=ok)
    line(framework="peers", model="char_lm", precision="int8", batch=batch,
         skipped="not measured: tenet has no int8 decoder yet")
    if not ok:
        line(framework="torch", model="char_lm", precision="fp32", batch=batch, skipped="outputs differ from tenet's")
        return
    # The timed step: position `at` for every sequence, the caches filled to it.
    tok = tokens[:, at].contiguous()
    pos = torch.full((batch,), at, dtype=torch.int64)
    threads = torch.get_num_threads()

    def one(step):
        def call():
            logits, kv = step(tok, pos, *state.caches)
            state.write(kv, at)
            return logits
        return call

    if "eager" in args.frameworks:
        with torch.inference_mode():
            r = time_calls(one(m), batch, args.quick)
        line(framework="torch-eager", model="char_lm", precision="fp32", batch=batch, **r, threads=threads)
    if "compile" in args.frameworks:
        try:
            c = torch.compile(m)
            start = time.perf_counter()
            with torch.inference_mode():
                got_c = state.replay(c, tokens).numpy()
            compile_s = time.perf_counter() - start
            check_line(framework="torch-compile", model="char_lm", precision="fp32", batch=batch,
                       against="tenet decoder step", max_abs_diff=max_diff(np, got_c, want)[0],
                       compile_s=round(compile_s, 1))
            with torch.inference_mode():
                r = time_calls(one(c), batch, args.quick)
            line(framework="torch-compile", model="char_lm", precision="fp32", batch=batch, **r, threads=threads)
        except Exception as e:  # noqa: BLE001
            line(framework="torch-compile", model="char_lm", precision="fp32", batch=batch,
                 skipped=f"torch.compile failed: {type(e).__name__}: {str(e)[:300]}")
    if "onnxruntime" in args.frameworks:
        if ort is None:
            line(framework="onnxruntime", model="char_lm", precision="fp32", batch=batch,
                 skipped="onnxruntime not installed")
            return
        try:
            path = os.path.join(tmp, f"char_lm_step_b{batch}.onnx")
            names = ["tokens", "pos", "cache0", "cache1", "cache2", "cache3"]
            how, errors = export_onnx(torch, m, (tok, pos, *state.caches), path, names, ["logits", "kv"])
            s = ort_session(ort, path)
            caches = [np.zeros((2, batch, HEADS, CONTEXT, WIDTH // HEADS), np.float32) for _ in range(BLOCKS)]
            binding = s.io_binding()
            for i, c in enumerate(caches):  # the NumPy arrays themselves: written in place below
                binding.bind_ortvalue_input(f"cache{i}", ort.OrtValue.ortvalue_from_numpy(c))
            binding.bind_output("logits")
            binding.bind_output("kv")
            tok_np = np.zeros(batch, np.int64)
            pos_np = np.zeros(batch, np.int64)
            binding.bind_cpu_input("tokens", tok_np)
            binding.bind_cpu_input("pos", pos_np)

            def ort_step(t):
                tok_np[:] = tokens[:, t].numpy()
                pos_np[:] = t
                s.run_with_iobinding(binding)
                logits, kv = binding.get_outputs()
                kv = kv.numpy()
                for l in range(BLOCKS):
                    caches[l][:, :, :, t, :] = kv[l]
                return logits

            logits = None
            for t in range(at + 1):
                logits = ort_step(t)
            d, _ = max_diff(np, logits.numpy(), want)
            check_line(framework="onnxruntime", model="char_lm", precision="fp32", batch=batch,
                       against="tenet decoder step", max_abs_diff=d, exporter=how, export_errors=errors)
            r = time_calls(lambda: ort_step(at), batch, args.quick)
            line(framework="onnxruntime", model="char_lm", precision="fp32", batch=batch, **r,
                 threads=os.cpu_count())
        except Exception as e:  # noqa: BLE001
            line(framework="onnxruntime", model="char_lm", precision="fp32", batch=batch,
                 skipped=f"{type(e).__name__}: {str(e)[:300]}")


FRAMEWORKS = ("tenet", "torch-eager", "torch-compile", "onnxruntime")


def table(path):
    rows = [json.loads(l) for l in open(path) if l.startswith("{")]
    timed = {}
    for r in rows:
        if r.get("bench") == "host_inference" and "median_us" in r:
            timed[(r["model"], r["precision"], r["batch"], r["framework"])] = r
    keys = sorted({k[:3] for k in timed}, key=lambda k: (["mlp", "cnn", "vit", "char_lm"].index(k[0]), k[1], k[2]))
    print("| model | precision | batch | " + " | ".join(f"{f} median / p99 (µs)" for f in FRAMEWORKS) +
          " | tenet median vs fastest peer |")
    print("|---|---|---:|" + "---:|" * len(FRAMEWORKS) + "---|")
    for k in keys:
        cells, peers = [], []
        for f in FRAMEWORKS:
            r = timed.get(k + (f,))
            cells.append(f"{r['median_us']:.1f} / {r['p99_us']:.1f}" if r else "--")
            if r and f != "tenet":
                peers.append((r["median_us"], f))
        t = timed.get(k + ("tenet",))
        if t and peers:
            best, who = min(peers)
            verdict = f"{best / t['median_us']:.2f}x as fast as {who}"
        else:
            verdict = "--"
        print(f"| {k[0]} | {k[1]} | {k[2]} | " + " | ".join(cells) + f" | {verdict} |")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dir", default="/tmp/tenet_inference")
    p.add_argument("--models", default="mlp,cnn,vit,char_lm")
    p.add_argument("--batches", default="1,32")
    p.add_argument("--frameworks", default="eager,compile,onnxruntime")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--table", metavar="FILE")
    args = p.parse_args()
    if args.table:
        table(args.table)
        return
    args.frameworks = args.frameworks.split(",")
    import logging
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    import numpy as np
    import torch
    for noisy in ("torch.onnx", "torch.onnx._internal.exporter._registration", "root"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    try:
        import onnxruntime as ort
        ort.set_default_logger_severity(3)
    except ImportError:
        ort = None
    torch.set_num_threads(os.cpu_count())
    print(json.dumps({"bench": "host_inference_peers", "torch": torch.__version__,
                      "onnxruntime": ort.__version__ if ort else None, "torch_threads": torch.get_num_threads(),
                      "ort_intra_op_threads": os.cpu_count(), "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                      "mkldnn": torch.backends.mkldnn.is_available()}), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            for batch in (int(b) for b in args.batches.split(",")):
                if not os.path.exists(os.path.join(args.dir, f"{name}_b{batch}.safetensors")):
                    line(framework="peers", model=name, precision="fp32", batch=batch,
                         skipped=f"no weights in {args.dir}: run bench_host_inference first")
                    continue
                if name == "char_lm":
                    run_decode(args, torch, np, ort, batch, tmp)
                else:
                    run_classifier(args, torch, np, ort, name, batch, tmp)


if __name__ == "__main__":
    sys.exit(main())
