#!/usr/bin/env bash
# Quick development build of a few test sources, outside CMake, so that work
# on one part does not wait for (or break on) the others.
#   scripts/dev_quick.sh host NAME tests/host/foo.cpp [more sources...] [-- doctest args]
#       g++ -O1, links tests/host/main.cpp, runs it
#   scripts/dev_quick.sh cuda NAME tests/gpu/foo.cu [...]
#       nvcc for sm_80 and sm_90 (warnings as errors), links tests/gpu/main.cpp;
#       runs it (prints "skipped: no CUDA device" without a GPU)
#   scripts/dev_quick.sh cuda-host NAME tests/host/foo.cpp [...]
#       the host tests compiled by nvcc, as the CUDA build does
# Output in build/quick/NAME.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tenet_require_cuda
mode="$1" name="$2"
shift 2
sources=() args=()
while (($#)); do
    if [[ "$1" == "--" ]]; then shift; args=("$@"); break; fi
    sources+=("$1"); shift
done
out="$TENET_ROOT/build/quick"
mkdir -p "$out"
inc=(-I"$TENET_ROOT/include" -I"$TENET_ROOT/tests/support" -I/usr/local/cuda/include -I/usr/include/eigen3)
cuda_libs=(-L/usr/local/cuda/lib64 -lcublasLt -lcudart -lz)
case "$mode" in
host)
    ccache g++ -std=c++20 -O1 -g -fopenmp -Wall -Wextra -Wpedantic -Werror "${inc[@]}" \
        "$TENET_ROOT/tests/host/main.cpp" "${sources[@]}" "${cuda_libs[@]}" -o "$out/$name" ;;
cuda | cuda-host)
    main="$TENET_ROOT/tests/gpu/main.cpp"
    [[ "$mode" == cuda-host ]] && main="$TENET_ROOT/tests/host/main.cpp"
    ccache nvcc -std=c++20 -O2 --extended-lambda --expt-relaxed-constexpr -Xcompiler=-fopenmp,-Wall,-Wextra \
        --Werror all-warnings -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
        "${inc[@]}" -x cu "$main" -x cu "${sources[@]}" "${cuda_libs[@]}" -lgomp -o "$out/$name" ;;
*) echo "usage: $0 host|cuda|cuda-host NAME sources... [-- args]" >&2; exit 2 ;;
esac
"$out/$name" "${args[@]}"
