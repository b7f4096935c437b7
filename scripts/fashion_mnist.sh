#!/usr/bin/env bash
# tenet's main job: builds examples/fashion_mnist with nvcc and trains the MLP
# 784-256-128-10 on Fashion-MNIST (Debian's dataset-fashion-mnist, installed
# here) in fp32, bf16_mixed and fp16_mixed -- on the GPU when one is present,
# otherwise on the host. Extra arguments go to the example (e.g. --policy bf16).
# RANKS=N trains data parallel on this machine: N processes under mpirun
# (OpenMPI), the cores shared between them, on the host.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tenet_require_cuda
tenet_install_packages

dir="$TENET_ROOT/build/fashion_mnist"
tenet_configure "$dir" -DTENET_CUDA=ON -DTENET_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release
cmake --build "$dir" --target fashion_mnist -j "$(nproc)"
if [[ -n "${RANKS:-}" ]]; then
    threads=$(($(nproc) / RANKS))
    ((threads > 0)) || threads=1
    as_root=()
    ((EUID == 0)) && as_root=(--allow-run-as-root)
    exec mpirun "${as_root[@]}" -np "$RANKS" --oversubscribe --bind-to none -x OMP_NUM_THREADS="$threads" \
        "$dir/examples/fashion_mnist" --data-parallel "$@"
fi
"$dir/examples/fashion_mnist" "$@"
