#!/usr/bin/env bash
# Builds and runs tenet's benchmarks; prints side-by-side tables: host
# conversions, the host elementwise chain (tenet, Eigen), its Python peers
# (NumPy, jax.jit on CPU, in a venv), the device elementwise chain (tenet,
# cub, cudaMemcpy), host matmul (tenet vs Eigen) and the device matmul
# epilogues (fused vs GEMM + kernels); device parts print "skipped: no CUDA
# device" without a GPU.
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
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

echo "== device elementwise: 30-op chain, 2^16 .. 2^28 elements"
"$dir/bench/bench_device_elementwise"

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
