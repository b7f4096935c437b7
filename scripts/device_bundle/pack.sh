#!/usr/bin/env bash
# Packs a built CUDA build's GPU programs into a device bundle:
#   bash scripts/device_bundle/pack.sh BUILD_DIR DIR [--max-mib N]
# BUILD_DIR is a CUDA build of tenet (scripts/gpu_check.sh --bundle makes
# one); its device_bundle/ folder lists the programs and the manifest
# (cmake/TenetDeviceBundle.cmake). DIR gets bin/ (the programs, host symbols
# stripped: device code and its line information stay), lib/ (the C++ and
# OpenMP runtimes they were linked against), manifest.tsv, bundle.txt (what
# it was built from and against) and run.sh. DIR must be
# a folder git ignores, and at most N MiB (default 60) when done.
set -euo pipefail

usage() { echo "usage: $0 BUILD_DIR DIR [--max-mib N]" >&2; exit 2; }
(($# >= 2)) || usage
build="$(cd "$1" && pwd)" dir="$2" max_mib=60
shift 2
while (($#)); do
    case "$1" in
    --max-mib) max_mib="${2:?}"; shift ;;
    *) usage ;;
    esac
    shift
done
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
listing="$build/device_bundle"
[[ -f "$listing/manifest.tsv" && -f "$listing/files.txt" ]] ||
    { echo "pack: $build is not a CUDA build of tenet (no device_bundle/manifest.tsv)" >&2; exit 1; }

# Never delete a folder that is not an earlier bundle; never pack into one
# that git would commit.
if [[ -e "$dir" && ! -f "$dir/bundle.txt" && -n "$(ls -A "$dir" 2>/dev/null)" ]]; then
    echo "pack: $dir exists and is not a bundle; choose an empty or new folder" >&2
    exit 1
fi
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
if git -C "$dir" rev-parse --is-inside-work-tree >/dev/null 2>&1 && ! git -C "$dir" check-ignore -q "$dir"; then
    echo "pack: git does not ignore $dir: choose a folder under build/ (or one .gitignore names)" >&2
    exit 1
fi
rm -rf "${dir:?}"/*
mkdir -p "$dir/bin"

while IFS= read -r file; do
    [[ -n "$file" ]] || continue
    [[ -x "$file" ]] || { echo "pack: $file is not built (build the targets in $listing/targets.txt)" >&2; exit 1; }
    cp "$file" "$dir/bin/"
    strip --strip-all "$dir/bin/$(basename "$file")"
    # The device code must survive the strip.
    if command -v cuobjdump >/dev/null && [[ "$(basename "$file")" != tenet_device_probe ]]; then
        cuobjdump --list-elf --list-ptx "$dir/bin/$(basename "$file")" 2>/dev/null | grep -q . ||
            { echo "pack: no device code left in $(basename "$file") after strip" >&2; exit 1; }
    fi
done <"$listing/files.txt"
# The C++ and OpenMP runtimes the programs were linked against, for a GPU
# machine whose own are missing or older (run.sh uses them only then).
mkdir -p "$dir/lib"
compiler="$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")"
for runtime in libstdc++.so.6 libgcc_s.so.1 libgomp.so.1; do
    found="$("${compiler:-g++}" -print-file-name="$runtime")"
    [[ "$found" == /* && -e "$found" ]] || { echo "pack: $compiler has no $runtime" >&2; exit 1; }
    cp -L "$found" "$dir/lib/$runtime"
    strip --strip-unneeded "$dir/lib/$runtime"
done
cp "$listing/manifest.tsv" "$dir/manifest.tsv"
cp "$here/run.sh" "$dir/run.sh"

cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
root="$(cache_value CMAKE_HOME_DIRECTORY)"
{
    echo "made $(date -u +%FT%TZ) from $(git -C "$root" describe --always --dirty 2>/dev/null || echo 'an unknown commit')"
    echo "architectures $(cache_value CMAKE_CUDA_ARCHITECTURES)"
    echo "nvcc $("$(cache_value CMAKE_CUDA_COMPILER)" --version | sed -n 's/^Cuda compilation tools, //p')"
    echo "flags $(cache_value CMAKE_BUILD_TYPE) $(cache_value CMAKE_CUDA_FLAGS)"
    "$dir/bin/tenet_device_probe" built | awk -F'\t' '{print "built against " $1 " " $3 " (" $2 "), needs >= " $4}'
} >"$dir/bundle.txt"

bytes="$(du -sb "$dir" | cut -f1)"
(cd "$dir/bin" && ls -l --block-size=K | awk 'NR > 1 {printf "  %-40s %8s\n", $9, $5}')
echo "pack: $dir: $((bytes / 1024 / 1024)) MiB ($bytes bytes), $(($(wc -l <"$dir/manifest.tsv") - 1)) runs"
if ((bytes > max_mib * 1024 * 1024)); then
    echo "pack: the bundle is over $max_mib MiB" >&2
    exit 1
fi
