#!/usr/bin/env bash
# Builds and runs tenet's benchmarks; prints side-by-side tables: host
# conversions, the host elementwise chain (tenet, Eigen), its Python peers
# (NumPy, jax.jit on CPU, in a venv), host row ops (tenet vs PyTorch on the
# CPU), the device elementwise chain (tenet, cub, cudaMemcpy), host
# convolution (tenet vs oneDNN), host matmul (tenet vs Eigen) and the device
# matmul epilogues (fused vs GEMM + kernels),
# training epochs on the host (the MLP and the CNN; tenet vs PyTorch and JAX
# on the CPU), a training step on the device (eager vs CUDA Graph, vs
# PyTorch AMP), device attention (vs PyTorch's scaled_dot_product_attention) and
# host data parallel under mpirun (allreduce vs MPI_Allreduce, 2 ranks vs 1 process),
# host inference latency (tenet vs PyTorch eager, torch.compile, ONNX Runtime);
# device parts print "skipped: no CUDA device" without a GPU.
# bench/run.sh --contention [...]: the host training benchmarks idle and
# beside a busy process instead (bench/contention.sh).
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
if [[ "${1:-}" == --contention ]]; then
    exec bash "$TENET_ROOT/bench/contention.sh" "$@"
fi
tenet_require_cuda
tenet_install_packages python3 python3-venv

dir="$TENET_ROOT/build/bench"
tenet_configure "$dir" -DTENET_CUDA=ON -DTENET_BUILD_TESTS=OFF -DTENET_BUILD_EXAMPLES=OFF -DTENET_BUILD_BENCH=ON \
    -DCMAKE_BUILD_TYPE=Release
cmake --build "$dir" -j "$(nproc)"

echo "== host conversions ($(nproc) cores, $(date -u +%F))"
"$dir/bench/bench_host_convert" --benchmark_min_time=0.5

echo "== host elementwise: 30-op chain, 16M elements ($(nproc) cores)"
"$dir/bench/bench_host_elementwise" --benchmark_min_time=1 2>&1 | tee "$dir/host_elementwise.log"

# The Python peers need numpy and jax from PyPI: without them, say so and go on.
echo "== host elementwise peers: NumPy and jax.jit (CPU)"
venv="$TENET_ROOT/build/bench-venv"
if [[ ! -x "$venv/bin/python" ]]; then
    python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import numpy, jax" 2>/dev/null &&
    ! "$venv/bin/pip" install --quiet --disable-pip-version-check numpy "jax[cpu]"; then
    echo "skipped: pip could not install numpy and jax into $venv (no network?)"
else
    "$venv/bin/python" "$TENET_ROOT/bench/peers/elementwise.py" --probes "$dir/host_elementwise.log"
fi

# Row ops on the host against PyTorch eager on the CPU (the venv's torch, when
# it is there; the training-epoch section below installs it).
echo "== host row ops: softmax, layernorm, cross-entropy, row sum, f32, 2^24 elements ($(nproc) cores)"
"$dir/bench/bench_host_row_ops" | tee "$dir/host_row_ops.jsonl"
if "$venv/bin/python" -c "import torch" 2>/dev/null; then
    "$venv/bin/python" "$TENET_ROOT/bench/peers/row_ops_torch_cpu.py" | tee -a "$dir/host_row_ops.jsonl"
    "$venv/bin/python" "$TENET_ROOT/bench/peers/row_ops_torch_cpu.py" --compare "$dir/host_row_ops.jsonl"
else
    echo "skipped: PyTorch CPU peer (torch is not installed in $venv)"
fi

echo "== device elementwise: 30-op chain, 2^16 .. 2^28 elements"
"$dir/bench/bench_device_elementwise"

echo "== host convolution: tenet (im2col + GEMM) vs oneDNN, the example CNN's layers, batch 256 ($(nproc) cores)"
"$dir/bench/bench_host_conv"

echo "== host matmul: tenet vs Eigen called directly, f32 ($(nproc) cores)"
"$dir/bench/bench_host_matmul" --benchmark_min_time=1 --benchmark_repetitions=5 --benchmark_report_aggregates_only=true

echo "== device matmul: fused cuBLASLt epilogue vs GEMM + separate kernels"
"$dir/bench/bench_device_matmul"

echo "== device row ops: softmax, layernorm, cross-entropy GB/s"
"$dir/bench/bench_device_row_ops"
if "$venv/bin/python" -c "import torch" 2>/dev/null; then
    "$venv/bin/python" "$TENET_ROOT/bench/peers/row_ops_torch.py"
else
    echo "skipped: PyTorch peer (torch is not installed in $venv; the GPU machine's own torch is used there)"
fi

# Prints each framework's epoch of a JSON-lines file against tenet's f32 one.
compare_epochs() {
    "$venv/bin/python" - "$1" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
tenet = next(r for r in rows if r["framework"] == "tenet" and r["mode"] == "host-f32")
for r in rows:
    print(f'{r["framework"]:>6} {r["mode"]:<16} {r["epoch_s"]:8.3f} s/epoch {r["samples_per_s"]:9.1f} samples/s'
          f'  tenet f32 is {r["epoch_s"] / tenet["epoch_s"]:5.2f}x as fast')
PY
}

# Training: one epoch of the Fashion-MNIST MLP on the host (tenet f32 and
# bf16_mixed) against PyTorch (eager, torch.compile) and jax.jit (+optax) on the CPU.
echo "== host training epoch: MLP 784-256-128-10, batch 256, AdamW ($(nproc) cores)"
"$dir/bench/bench_host_train_epoch" | tee "$dir/train_epoch.jsonl"
"$venv/bin/python" -c "import optax" 2>/dev/null ||
    "$venv/bin/pip" install --quiet --disable-pip-version-check optax || echo "optax not installed: JAX uses its own AdamW"
"$venv/bin/python" -c "import torch" 2>/dev/null ||
    "$venv/bin/pip" install --quiet --disable-pip-version-check torch --index-url https://download.pytorch.org/whl/cpu ||
    "$venv/bin/pip" install --quiet --disable-pip-version-check torch || echo "skipped: PyTorch could not be installed"
for framework in torch jax; do
    "$venv/bin/python" "$TENET_ROOT/bench/peers/mlp_epoch.py" --framework "$framework" | tee -a "$dir/train_epoch.jsonl"
done
compare_epochs "$dir/train_epoch.jsonl"

# The Fashion-MNIST example's CNN (issue 16): one epoch of 10240 samples, tenet vs PyTorch eager/compile.
echo "== host training epoch: the example's CNN, 10240 samples, batch 256, AdamW ($(nproc) cores)"
"$dir/bench/bench_host_train_epoch" --model cnn | tee "$dir/cnn_epoch.jsonl"
"$venv/bin/python" "$TENET_ROOT/bench/peers/mlp_epoch.py" --framework torch --model cnn | tee -a "$dir/cnn_epoch.jsonl"
compare_epochs "$dir/cnn_epoch.jsonl"

echo "== host gradient checkpointing: char_lm's model, plain vs Checkpointed blocks ($(nproc) cores)"
"$dir/bench/bench_host_checkpointing"

# Data parallel on this machine: 2 ranks under mpirun, the cores split between them.
echo "== host data parallel: tenet's allreduce vs MPI_Allreduce; the MLP step, 2 ranks vs 1 process ($(nproc) cores)"
if [[ -x "$dir/bench/bench_host_data_parallel" ]]; then
    as_root=()
    ((EUID == 0)) && as_root=(--allow-run-as-root)
    threads=$(($(nproc) / 2))
    ((threads > 0)) || threads=1
    mpirun "${as_root[@]}" -np 2 --oversubscribe --bind-to none -x OMP_NUM_THREADS="$threads" \
        "$dir/bench/bench_host_data_parallel"
else
    echo "skipped: built without MPI (libopenmpi-dev)"
fi

echo "== host int8 GEMM vs Eigen f32, 256x784x256 ($(nproc) cores)"
"$dir/bench/bench_host_int8_gemm"

echo "== host inference: the fp32 MLP vs its int8 form (PTQ), Fashion-MNIST test set ($(nproc) cores)"
"$dir/bench/bench_host_int8_inference"

echo "== host inference: CSR sparse_model vs the dense fp32 MLP, by sparsity ($(nproc) cores)"
"$dir/bench/bench_host_sparse_inference"

# Inference latency, batch 1 and 32 (median and p99 per call): the MLP, CNN,
# ViT and one char_lm decode step, fp32 and int8, tenet against PyTorch eager,
# torch.compile and ONNX Runtime on the same weights (the bench writes them,
# with one input and its outputs, to $dir/inference; the peer checks its
# outputs against tenet's before timing).
echo "== host inference latency: MLP, CNN, ViT, char_lm decode step, batch 1 and 32, vs PyTorch and ONNX Runtime ($(nproc) cores)"
"$dir/bench/bench_host_inference" --out "$dir/inference" | tee "$dir/inference.jsonl"
if ! "$venv/bin/python" -c "import torch, numpy, safetensors, onnx, onnxruntime, onnxscript" 2>/dev/null &&
    ! "$venv/bin/pip" install --quiet --disable-pip-version-check numpy safetensors onnx onnxruntime onnxscript; then
    echo "skipped: pip could not install numpy, safetensors, onnx, onnxruntime and onnxscript into $venv (no network?)"
elif ! "$venv/bin/python" -c "import torch" 2>/dev/null; then
    echo "skipped: PyTorch and ONNX Runtime peers (torch is not installed in $venv)"
else
    "$venv/bin/python" "$TENET_ROOT/bench/peers/inference_cpu.py" --dir "$dir/inference" | tee -a "$dir/inference.jsonl"
    "$venv/bin/python" "$TENET_ROOT/bench/peers/inference_cpu.py" --table "$dir/inference.jsonl"
fi

echo "== device training step: eager vs CUDA Graph, batch 256"
"$dir/bench/bench_device_train_step"
"$dir/bench/bench_device_train_step" --model cnn
if "$venv/bin/python" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    "$venv/bin/python" "$TENET_ROOT/bench/peers/mlp_step_torch_gpu.py"
    "$venv/bin/python" "$TENET_ROOT/bench/peers/mlp_step_torch_gpu.py" --model cnn
else
    echo "skipped: PyTorch GPU peer (no CUDA device for torch)"
fi

echo "== device attention: MultiHeadAttention forward + backward, vs PyTorch's scaled_dot_product_attention"
"$dir/bench/bench_device_attention"
if "$venv/bin/python" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    "$venv/bin/python" "$TENET_ROOT/bench/peers/attention_torch_gpu.py"
else
    echo "skipped: PyTorch GPU peer (no CUDA device for torch)"
fi
