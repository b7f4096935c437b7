#!/usr/bin/env bash
# tenet's main job: builds examples/fashion_mnist with nvcc and trains the MLP
# 784-256-128-10 on Fashion-MNIST (Debian's dataset-fashion-mnist, installed
# here) in fp32, bf16_mixed and fp16_mixed -- on the GPU when one is present,
# otherwise on the host. Extra arguments go to the example (e.g. --policy bf16).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tenet_require_cuda
tenet_install_packages

dir="$TENET_ROOT/build/fashion_mnist"
tenet_configure "$dir" -DTENET_CUDA=ON -DTENET_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release
cmake --build "$dir" --target fashion_mnist -j "$(nproc)"
"$dir/examples/fashion_mnist" "$@"
