#!/usr/bin/env bash
# tenet's main job: builds and runs the quickstart example with nvcc; it runs
# on the host, and on the GPU too when one is present.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tenet_require_cuda
tenet_install_packages

dir="$TENET_ROOT/build/quickstart"
tenet_configure "$dir" -DTENET_CUDA=ON -DTENET_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release
cmake --build "$dir" --target quickstart -j "$(nproc)"
"$dir/examples/quickstart"
