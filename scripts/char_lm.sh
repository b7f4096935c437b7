#!/usr/bin/env bash
# Builds examples/char_lm with nvcc and trains the character-level causal
# language model on the fortunes package's texts (installed here) -- on the
# GPU when one is present, otherwise on the host. Extra arguments go to the
# example (e.g. --steps 3000 --policy bf16, or --text FILE).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tenet_require_cuda
tenet_install_packages

dir="$TENET_ROOT/build/char_lm"
tenet_configure "$dir" -DTENET_CUDA=ON -DTENET_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release
cmake --build "$dir" --target char_lm -j "$(nproc)"
"$dir/examples/char_lm" "$@"
