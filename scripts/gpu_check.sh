#!/usr/bin/env bash
# The GPU machine's commands. A lent GPU comes for minutes, without a package
# registry, so the usual way is the device bundle: built here, run there.
#
#   bash scripts/gpu_check.sh --bundle DIR        (a machine without a GPU)
#       builds every gpu test program and device benchmark for sm_90
#       (Release, -lineinfo; CUDA_ARCHITECTURES=80 for sm_80) in build/gpu-bundle
#       with ccache, and packs them, a manifest and run.sh into DIR (a folder
#       git ignores, e.g. build/device-bundle; at most 60 MiB).
#   bash DIR/run.sh [--quick] OUT                 (the GPU machine: no compiler)
#       runs them all; see scripts/device_bundle/run.sh.
#   bash scripts/gpu_check.sh --check-bundle DIR  (a machine without a GPU)
#       the bundle's dry run (everything skipped, "no GPU", in under a
#       minute), then `ldd -r` of every program against PyPI's CUDA 13 wheels
#       of cuBLAS, cuDNN and NCCL in a scratch venv (build/cuda-wheels), with
#       the LD_LIBRARY_PATH run.sh sets.
#
# On a GPU machine that has a compiler, the stages build and run in place
# (sm_90 code alone, the H100/H200's), each in a few minutes on 16 cores:
#
#   bash scripts/gpu_check.sh                  build, tests and bench
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
bundle_build="$TENET_ROOT/build/gpu-bundle"
bundle=""
stages=()
while (($#)); do
    case "$1" in
    --build | --tests | --bench | --deps) stages+=("${1#--}") ;;
    --bundle | --check-bundle) stages+=("${1#--}"); bundle="${2:?$1 takes a folder}"; shift ;;
    --logs) logs="$2"; shift ;;
    *) echo "usage: $0 [--bundle DIR] [--check-bundle DIR] [--deps] [--build] [--tests] [--bench] [--logs DIR]" >&2; exit 2 ;;
    esac
    shift
done
((${#stages[@]})) || stages=(build tests bench)
jobs="$(nproc)"
# What a GPU machine with PyTorch for CUDA 13 has beside it (check-bundle's venv).
bundle_wheels=(nvidia-cublas nvidia-cudnn-cu13 nvidia-nccl-cu13)
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
    configure_gpu_build "$dir" && build_gpu_programs "$dir"
}

# The GPU test programs and device benchmarks, Release, for CUDA_ARCHITECTURES
# (90 by default), with any further CMake arguments.
configure_gpu_build() {
    local build="$1" launcher=()
    shift
    command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
    # (set -e does not reach into a stage: main calls it with ||, so each step says how it failed)
    cmake -S "$TENET_ROOT" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTENET_CUDA=ON -DTENET_BUILD_TESTS=ON \
        -DTENET_BUILD_EXAMPLES=OFF -DTENET_BUILD_BENCH=ON -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHITECTURES:-90}" \
        "${launcher[@]}" "$@" >"$logs/configure.log" 2>&1 || { tail -n 30 "$logs/configure.log"; summary+=("configure failed ($logs/configure.log)"); return 1; }
}

# Builds what the device bundle carries: every program cmake/TenetDeviceBundle.cmake lists.
build_gpu_programs() {
    local build="$1" targets started=$SECONDS
    mapfile -t targets <"$build/device_bundle/targets.txt"
    if ! cmake --build "$build" -j "$jobs" --target "${targets[@]}" >"$logs/build.log" 2>&1; then
        grep -E -A3 '^FAILED|error' "$logs/build.log" | head -n 60
        summary+=("build failed ($logs/build.log)")
        return 1
    fi
    summary+=("build ok in $((SECONDS - started)) s")
}

# The bundle's build, sized to travel: machine code for the one architecture
# (90-real: no PTX beside it, 43% of the device code) in size-compressed
# fatbins (30% less again); -lineinfo, so compute-sanitizer's reports name
# source lines. --as-needed: a program records only the libraries it calls,
# so a machine without cuDNN or NCCL refuses only the programs that need
# them. No oneDNN: the host references then use tenet's own convolution
# lowering (tested on the host too), and libdnnl is not needed there.
stage_bundle() {
    tenet_install_packages
    CUDA_ARCHITECTURES="${CUDA_ARCHITECTURES:-90}-real" configure_gpu_build "$bundle_build" \
        -DCMAKE_CUDA_FLAGS="-lineinfo --compress-mode=size" -DCMAKE_EXE_LINKER_FLAGS=-Wl,--as-needed -DTENET_ONEDNN=OFF &&
        build_gpu_programs "$bundle_build" &&
        bash "$TENET_ROOT/scripts/device_bundle/pack.sh" "$bundle_build" "$bundle" | tee "$logs/pack.log" &&
        summary+=("$(tail -n 1 "$logs/pack.log")")
}

# The bundle's dry run, and its programs loaded against PyPI's CUDA 13 wheels.
stage_check_bundle() {
    local venv="$TENET_ROOT/build/cuda-wheels"
    if [[ ! -x "$venv/bin/python" ]]; then
        python3 -m venv "$venv" || { summary+=("no venv at $venv"); return 1; }
    fi
    "$venv/bin/pip" install -q "${bundle_wheels[@]}" || { summary+=("pip could not install ${bundle_wheels[*]}"); return 1; }
    "$venv/bin/pip" list 2>/dev/null | grep -E '^nvidia-' | sed 's/^/  wheel: /'
    bash "$TENET_ROOT/scripts/device_bundle/check.sh" "$bundle" "$TENET_ROOT/build/gpu-bundle-dry-run" --wheels "$venv" &&
        summary+=("bundle $bundle checked")
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

# Every benchmark row of the manifest (cmake/TenetDeviceBundle.cmake), with
# its full arguments; each one's output to its own file.
stage_bench() {
    local kind name binary expected quick args argv=() ran=0 failed=0
    while IFS=$'\t' read -r kind name binary expected quick args; do
        [[ "$kind" == bench ]] || continue
        argv=()
        [[ -n "$args" ]] && IFS='|' read -r -a argv <<<"$args"
        echo "== $name"
        ran=$((ran + 1))
        if "$dir/bench/$binary" "${argv[@]}" >"$logs/$name.txt" 2>&1; then
            tail -n 3 "$logs/$name.txt"
        else
            failed=$((failed + 1))
            tail -n 20 "$logs/$name.txt"
        fi
    done < <(tail -n +2 "$dir/device_bundle/manifest.tsv")
    summary+=("benchmarks: $ran run, $failed failed, figures in $logs/bench_device_*.txt")
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
    "stage_${stage//-/_}" || result=1
done
(IFS=';'; echo "gpu_check: $([[ $result == 0 ]] && echo PASSED || echo FAILED): ${summary[*]}")
exit "$result"
