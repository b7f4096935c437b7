#!/usr/bin/env bash
# Builds examples/fine_tune (host backend) and runs it: a CNN pretrained on
# Fashion-MNIST's classes 0-4 (Debian's dataset-fashion-mnist, installed here),
# then 1000 labelled images of classes 5-9 learned from scratch, with the
# backbone frozen, fine-tuned whole, and from a PyTorch-trained backbone.
# Extra arguments go to the example (e.g. --steps 600 --labelled 2000).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tenet_require_cuda
tenet_install_packages

dir="$TENET_ROOT/build/fine_tune"
tenet_configure "$dir" -DTENET_CUDA=OFF -DTENET_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release
cmake --build "$dir" --target fine_tune -j "$(nproc)"
mkdir -p "$dir/out"
"$dir/examples/fine_tune" --out "$dir/out" "$@"
