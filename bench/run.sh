#!/usr/bin/env bash
# Builds and runs tenet's benchmarks; prints side-by-side tables.
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
tenet_require_cuda
tenet_install_packages

dir="$TENET_ROOT/build/bench"
tenet_configure "$dir" -DTENET_CUDA=OFF -DTENET_BUILD_TESTS=OFF -DTENET_BUILD_EXAMPLES=OFF -DTENET_BUILD_BENCH=ON \
    -DCMAKE_BUILD_TYPE=Release
cmake --build "$dir" -j "$(nproc)"
echo "== host conversions ($(nproc) cores, $(date -u +%F))"
"$dir/bench/bench_host_convert" --benchmark_min_time=0.5
