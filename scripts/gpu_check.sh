#!/usr/bin/env bash
# One command for a machine with a GPU: builds the CUDA tests and the device
# benchmarks with every core (sm_90 code alone, the H100/H200's), runs every
# `gpu`-labelled test, then the device benchmarks, and ends with a one-line
# summary. Each stage can run alone and fits in a few minutes on a 16-core
# machine, so a lent GPU with a per-command time limit can take them one by one:
#
#   bash scripts/gpu_check.sh                  all three stages
#   bash scripts/gpu_check.sh --build          configure and build (build/gpu-check)
#   bash scripts/gpu_check.sh --tests          ctest -L gpu
#   bash scripts/gpu_check.sh --bench          the device benchmarks
#   bash scripts/gpu_check.sh --logs DIR ...   logs and figures go to DIR
#                                              (default build/gpu-check/logs)
#   bash scripts/gpu_check.sh --deps           on a machine with Debian's apt:
#       unpack the Debian packages the build needs (doctest, Eigen, zlib,
#       Google Benchmark) into build/gpu-deps, to carry to a GPU machine that
#       has the CUDA Toolkit and CMake but no package registry.
#
# CUDA_ARCHITECTURES overrides the architecture (e.g. 80 on an A100).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

dir="$TENET_ROOT/build/gpu-check"
deps="$TENET_ROOT/build/gpu-deps"
logs="$dir/logs"
stages=()
while (($#)); do
    case "$1" in
    --build | --tests | --bench | --deps) stages+=("${1#--}") ;;
    --logs) logs="$2"; shift ;;
    *) echo "usage: $0 [--deps] [--build] [--tests] [--bench] [--logs DIR]" >&2; exit 2 ;;
    esac
    shift
done
((${#stages[@]})) || stages=(build tests bench)
jobs="$(nproc)"
benchmarks=(bench_device_elementwise bench_device_matmul bench_device_row_ops bench_device_train_step)
gpu_deb_packages=(doctest-dev libeigen3-dev zlib1g-dev zlib1g libbenchmark-dev libbenchmark1debian)
summary=()

# Unpacked packages (from --deps), when this machine does not have them itself.
use_unpacked_deps() {
    [[ -d "$deps/usr" ]] || return 0
    export CMAKE_PREFIX_PATH="$deps/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
    export CPATH="$deps/usr/include${CPATH:+:$CPATH}"
    export LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LIBRARY_PATH:+:$LIBRARY_PATH}"
    export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu:$deps/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

stage_deps() {
    tenet_install_packages dpkg-dev
    rm -rf "$deps" && mkdir -p "$deps/debs"
    (cd "$deps/debs" && chmod 777 . && apt-get download "${gpu_deb_packages[@]}")
    for deb in "$deps"/debs/*.deb; do dpkg-deb -x "$deb" "$deps"; done
    rm -rf "$deps/debs" "$deps/usr/share/doc" "$deps/usr/share/man"
    # The packages' absolute symlinks (/usr/..., /lib/...) point inside.
    find "$deps" -type l -lname '/*' | while read -r link; do
        ln -sfnr "$deps$(readlink "$link")" "$link"
    done
    summary+=("deps unpacked in $deps (carry build/gpu-deps)")
}

stage_build() {
    # With Debian's apt and a registry, install what is missing; a GPU machine
    # without one uses build/gpu-deps (see --deps) and the toolkit it has.
    if [[ ! -d "$deps/usr" ]] && command -v apt-get >/dev/null; then tenet_install_packages; fi
    local launcher=()
    command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
    # (set -e does not reach into a stage: main calls it with ||, so each step says how it failed)
    cmake -S "$TENET_ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTENET_CUDA=ON -DTENET_BUILD_TESTS=ON \
        -DTENET_BUILD_EXAMPLES=OFF -DTENET_BUILD_BENCH=ON -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHITECTURES:-90}" \
        "${launcher[@]}" >"$logs/configure.log" 2>&1 || { tail -n 30 "$logs/configure.log"; summary+=("configure failed ($logs/configure.log)"); return 1; }
    local started=$SECONDS
    if ! cmake --build "$dir" -j "$jobs" --target tenet_gpu_tests tenet_gpu_tests_sm80 "${benchmarks[@]}" >"$logs/build.log" 2>&1; then
        grep -E -A3 '^FAILED|error' "$logs/build.log" | head -n 60
        summary+=("build failed ($logs/build.log)")
        return 1
    fi
    summary+=("build ok in $((SECONDS - started)) s")
}

stage_tests() {
    local log="$logs/gpu_tests.log" status=0
    (cd "$dir" && ctest -L gpu --output-on-failure -j 1 --timeout 600) >"$log" 2>&1 || status=$?
    grep -E 'tests passed|test cases|skipped: no CUDA device|FAILED|Failed' "$log" || true
    local line
    line="$(grep -E '[0-9]+% tests passed' "$log" || echo "ctest printed no summary")"
    summary+=("gpu tests: ${line} (log $log)")
    return "$status"
}

stage_bench() {
    local name failed=0
    for name in "${benchmarks[@]}"; do
        echo "== $name"
        if "$dir/bench/$name" >"$logs/$name.txt" 2>&1; then tail -n 3 "$logs/$name.txt"; else failed=$((failed + 1)); tail -n 20 "$logs/$name.txt"; fi
    done
    echo "== bench_device_train_step --model cnn"  # the Fashion-MNIST CNN's step (issue 16)
    if "$dir/bench/bench_device_train_step" --model cnn >"$logs/bench_device_train_step_cnn.txt" 2>&1; then
        tail -n 3 "$logs/bench_device_train_step_cnn.txt"
    else
        failed=$((failed + 1))
        tail -n 20 "$logs/bench_device_train_step_cnn.txt"
    fi
    summary+=("benchmarks: $((${#benchmarks[@]} + 1)) run, $failed failed, figures in $logs/bench_device_*.txt")
    return "$((failed > 0))"
}

mkdir -p "$logs"
use_unpacked_deps
tenet_require_cuda
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null >"$logs/device.txt" ||
    echo "no GPU visible (nvidia-smi failed)" >"$logs/device.txt"
echo "gpu_check: $(cat "$logs/device.txt"), $jobs cores, $(date -u +%FT%TZ)"

result=0
for stage in "${stages[@]}"; do
    echo "== gpu_check: $stage"
    "stage_$stage" || result=1
done
(IFS=';'; echo "gpu_check: $([[ $result == 0 ]] && echo PASSED || echo FAILED): ${summary[*]}")
exit "$result"
