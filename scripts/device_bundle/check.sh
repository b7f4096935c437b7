#!/usr/bin/env bash
# Checks a device bundle on a machine without a GPU:
#   bash scripts/device_bundle/check.sh DIR OUT [--wheels VENV]
# 1. The dry run: DIR/run.sh OUT must end in under a minute, exit 0, say
#    "no GPU", write summary.txt with every run skipped and nothing failed,
#    and write at most 8 files.
# 2. With --wheels: every program in DIR/bin must load against the CUDA 13
#    wheels in the Python venv VENV (PyPI's nvidia-cublas, nvidia-cudnn-cu13,
#    nvidia-nccl-cu13, as a GPU machine with PyTorch has them), with the
#    LD_LIBRARY_PATH run.sh sets: `ldd -r` finds every library and symbol,
#    and cuBLASLt, cuDNN and NCCL come from VENV. Prints each program's size
#    and the libraries it loads.
set -euo pipefail

usage() { echo "usage: $0 DIR OUT [--wheels VENV]" >&2; exit 2; }
(($# >= 2)) || usage
dir="$(cd "$1" && pwd)" out="$2" venv=""
shift 2
while (($#)); do
    case "$1" in
    --wheels) venv="${2:?}"; shift ;;
    *) usage ;;
    esac
    shift
done
problems=0
problem() { echo "check: $*" >&2; problems=$((problems + 1)); }

# ---------------------------------------------------------------- dry run
rm -rf "$out"
started=$SECONDS
status=0
bash "$dir/run.sh" "$out" >/dev/null 2>&1 || status=$?
seconds=$((SECONDS - started))
summary="$out/summary.txt"
if "$dir/bin/tenet_device_probe" device >/dev/null 2>&1; then
    echo "check: this machine has a GPU; the run was a real one (exit $status, $seconds s)"
else
    ((status == 0)) || problem "run.sh exited $status"
    ((seconds < 60)) || problem "the dry run took $seconds s (at most 60)"
    [[ -f "$summary" ]] || problem "no summary.txt"
    grep -q '^# no GPU' "$summary" 2>/dev/null || problem "summary.txt has no 'no GPU' line"
    runs="$(grep -vc '^#' "$summary" || true)"
    rows="$(awk -F'\t' 'NR > 1' "$dir/manifest.tsv" | wc -l)"
    # every row of the manifest, and the closing line
    ((runs == rows + 1)) || problem "summary.txt has $((runs - 1)) runs, the manifest $rows"
    not_skipped="$(grep -v '^#' "$summary" | grep -vE '^[^ ]+ +skip ' | grep -v 'passed, ' || true)"
    [[ -z "$not_skipped" ]] || problem "runs not skipped without a GPU: $not_skipped"
    grep -qx "0 passed, 0 failed, $rows skipped" "$summary" || problem "closing line is not '0 passed, 0 failed, $rows skipped'"
    echo "check: dry run: exit $status in $seconds s, $rows runs skipped ($(grep -m1 '^# no GPU' "$summary" || true))"
fi
files="$(find "$out" -type f | wc -l)"
((files <= 8)) || problem "run.sh wrote $files files (at most 8)"

# ---------------------------------------------------------------- ldd
if [[ -n "$venv" ]]; then
    [[ -x "$venv/bin/python" ]] || { problem "no Python venv at $venv"; exit 1; }
    venv="$(cd "$venv" && pwd)"
    libraries="$(PATH="$venv/bin:$PATH" bash "$dir/run.sh" --libraries)"
    echo "$libraries" | sed 's/^/  /'
    library_path="$(sed -n 's/^LD_LIBRARY_PATH=//p' <<<"$libraries")"
    for program in "$dir"/bin/*; do
        listing="$(LD_LIBRARY_PATH="$library_path" ldd -r "$program" 2>&1)"
        if grep -qE 'not found|undefined symbol' <<<"$listing"; then
            problem "$(basename "$program"): $(grep -m1 -E 'not found|undefined symbol' <<<"$listing")"
        fi
        loaded="$(awk '/libcublasLt|libcudnn|libnccl/ {print $1 " -> " $3}' <<<"$listing")"
        while read -r soname _ path; do
            [[ -n "$soname" ]] || continue
            [[ "$path" == "$venv"/* ]] || problem "$(basename "$program"): $soname resolves to $path, not inside $venv"
        done <<<"$loaded"
        printf '  %-32s %6s KiB  %s\n' "$(basename "$program")" "$(($(stat -c %s "$program") / 1024))" \
            "$(tr '\n' ' ' <<<"${loaded:-no cuBLASLt, cuDNN or NCCL}" | sed "s|$venv/||g")"
    done
fi

if ((problems)); then
    echo "check: $problems problems" >&2
    exit 1
fi
echo "check: the bundle in $dir passed"
