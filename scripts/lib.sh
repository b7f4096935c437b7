# Shared by the README's commands (sourced, not run): finds the CUDA Toolkit
# and installs the Debian packages tenet builds, tests and benchmarks with.
set -euo pipefail

TENET_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# ocl-icd-opencl-dev: Debian's oneDNN CMake package requires OpenCL (its GPU
# runtime), which libdnnl-dev only recommends.
TENET_PACKAGES=(cmake ninja-build g++ ccache doctest-dev libeigen3-dev zlib1g-dev libbenchmark-dev libdnnl-dev ocl-icd-opencl-dev
    libopenmpi-dev openmpi-bin dataset-fashion-mnist fortunes)

tenet_require_cuda() {
    if [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
        echo "tenet: the CUDA Toolkit is missing: /usr/local/cuda/bin/nvcc not found." >&2
        echo "tenet: install CUDA 12.x or 13.x at /usr/local/cuda (nvcc is needed even without a GPU), then rerun." >&2
        exit 1
    fi
    export PATH="/usr/local/cuda/bin:$PATH"
}

# Installs whatever of TENET_PACKAGES (plus any arguments) is missing; does
# nothing, and needs no network, when all are there.
tenet_install_packages() {
    local missing=() package
    for package in "${TENET_PACKAGES[@]}" "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
    done
    ((${#missing[@]} == 0)) && return 0
    echo "tenet: installing Debian packages: ${missing[*]}"
    local sudo=()
    ((EUID == 0)) || sudo=(sudo)
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# cmake -S tenet -B <dir> -G Ninja with ccache and the given options.
tenet_configure() {
    local dir="$1"
    shift
    cmake -S "$TENET_ROOT" -B "$dir" -G Ninja \
        -DCMAKE_CXX_COMPILER=g++ \
        -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache "$@" >/dev/null
}
