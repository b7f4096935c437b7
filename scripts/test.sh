#!/usr/bin/env bash
# tenet's full test suite, as CI runs it. Three builds, each tested by ctest:
#   host  g++ alone (no CUDA compiler): host tests, compile-fail, the consumer
#         program through find_package and add_subdirectory, compiled by g++
#   cuda  nvcc for sm_80 and sm_90: every test compiled as CUDA, gpu tests (skipped
#         with a message when there is no GPU), PTX checks, compile-fail under nvcc,
#         the consumer program through find_package and add_subdirectory, as CUDA
#   asan  g++ with -fsanitize=address,undefined at -O0: the host tests (autodiff.cpp and quant_fp8.cpp aside)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tenet_require_cuda
tenet_install_packages

build="$TENET_ROOT/build"
jobs="$(nproc)"
started=$SECONDS

run_build() {
    local name="$1" labels="$2"
    shift 2
    echo "== tenet tests: $name build"
    tenet_configure "$build/test-$name" "$@"
    cmake --build "$build/test-$name" -j "$jobs"
    (cd "$build/test-$name" && ctest --output-on-failure -j "$jobs" ${labels:+-L "$labels"})
}

run_build host "" -DTENET_CUDA=OFF -DCMAKE_BUILD_TYPE=Release
run_build cuda "" -DTENET_CUDA=ON -DCMAKE_BUILD_TYPE=Release
# -O0: half the compile time of -O1 for these template-heavy tests, and the
# host tests still run in seconds under the sanitizers.
run_build asan host -DTENET_CUDA=OFF -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1" \
    -DTENET_BUILD_EXAMPLES=OFF -DTENET_SANITIZE=address,undefined

echo "== tenet tests: all three builds passed in $((SECONDS - started)) s"
