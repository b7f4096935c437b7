#!/usr/bin/env bash
# tenet's device bundle on a GPU machine: no compiler, no package registry,
# no network needed. Made by `bash scripts/gpu_check.sh --bundle DIR`.
#
#   bash DIR/run.sh [--quick] [--budget SECONDS] [--only PATTERN] [OUT]
#       every gpu test group (a timeout each), compute-sanitizer memcheck on
#       one case of each kernel family, racecheck on the families that share
#       memory, then the device benchmarks. --quick: one case per family and
#       the benchmarks' headline rows, no sanitizers. The run ends within
#       --budget seconds (default 480, --quick 170): what is left then is
#       reported as skipped. --only runs the rows whose name matches a shell
#       pattern alone ('bench_*', 'gpu.conv', 'memcheck.*').
#   bash DIR/run.sh --libraries
#       where cuBLASLt, cuDNN and NCCL were found, and the LD_LIBRARY_PATH a
#       run sets; runs nothing.
#
# Libraries: the CUDA Toolkit's (CUDA_HOME, CUDA_PATH, nvcc's, /usr/local/cuda*),
# the system's (ldconfig), and the nvidia-* wheels of the Python that holds
# PyTorch (asked where its nvidia packages are); of each library the newest
# found. A program that needs a library missing, or older than the bundle
# needs, is refused with one line; the rest still run.
#
# Into OUT (default: results/ beside this script), at most these files:
#   summary.txt    the machine, the libraries, one line per run (name, pass,
#                  fail, timeout, refused or skip, seconds), the totals
#   failures.log   the whole output of every failing or timed-out run
#   sanitizer.log  compute-sanitizer's reports
#   bench.jsonl    the benchmarks' JSON lines
#   bench.log      the benchmarks' whole output
#   run.log        everything this script printed
# Exit status: 0 when nothing failed or timed out, 1 otherwise, 2 on bad usage.
set -uo pipefail
shopt -s nullglob

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
probe="$here/bin/tenet_device_probe"
quick=0 budget="" out="" only="*" libraries_only=0
while (($#)); do
    case "$1" in
    --quick) quick=1 ;;
    --budget) budget="${2:-}"; shift ;;
    --only) only="${2:?--only takes a pattern}"; shift ;;
    --libraries) libraries_only=1 ;;
    -h | --help) sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) out="$1" ;;
    esac
    shift
done
[[ -n "$budget" ]] || budget=$((quick ? 170 : 480))
[[ "$budget" =~ ^[0-9]+$ ]] || { echo "run.sh: --budget takes whole seconds" >&2; exit 2; }
[[ -x "$probe" && -f "$here/manifest.tsv" ]] || { echo "run.sh: $here is not a complete bundle (no bin/tenet_device_probe or manifest.tsv)" >&2; exit 2; }

# ---------------------------------------------------------------- libraries

toolkit_dirs() {
    local roots=() root sub nvcc
    [[ -n "${CUDA_HOME:-}" ]] && roots+=("$CUDA_HOME")
    [[ -n "${CUDA_PATH:-}" ]] && roots+=("$CUDA_PATH")
    nvcc="$(command -v nvcc 2>/dev/null)" && roots+=("$(dirname "$(dirname "$(readlink -f "$nvcc")")")")
    roots+=(/usr/local/cuda /usr/local/cuda-*)
    for root in "${roots[@]}"; do
        for sub in lib64 lib targets/x86_64-linux/lib targets/sbsa-linux/lib; do
            [[ -d "$root/$sub" ]] && echo "$root/$sub"
        done
    done
}

system_dirs() {
    command -v ldconfig >/dev/null || [[ -x /sbin/ldconfig ]] || return 0
    { ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null; } |
        awk -F' => ' '/libcublasLt|libcudnn|libnccl/ {print $2}' | xargs -r -n1 dirname | sort -u
}

# The Python that holds PyTorch (else any Python with nvidia-* wheels): its
# nvidia packages' lib folders, and torch's own.
wheel_dirs() {
    local py chosen=""
    for py in python3 python; do
        command -v "$py" >/dev/null || continue
        "$py" -c 'import importlib.util as u, sys; sys.exit(u.find_spec("torch") is None)' 2>/dev/null && { chosen="$py"; break; }
    done
    if [[ -z "$chosen" ]]; then
        for py in python3 python; do
            command -v "$py" >/dev/null || continue
            "$py" -c 'import importlib.util as u, sys; sys.exit(u.find_spec("nvidia") is None)' 2>/dev/null && { chosen="$py"; break; }
        done
    fi
    [[ -n "$chosen" ]] || return 0
    echo "python: $(command -v "$chosen")" >&2
    "$chosen" - <<'PY' 2>/dev/null
import glob, importlib.util, os
spec = importlib.util.find_spec("nvidia")
for root in (spec.submodule_search_locations if spec else []):
    for lib in sorted(glob.glob(os.path.join(root, "*", "lib"))):
        print(lib)
torch = importlib.util.find_spec("torch")
if torch and torch.origin:
    print(os.path.join(os.path.dirname(torch.origin), "lib"))
PY
}

# a >= b for dotted versions
version_at_least() { [[ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n1)" == "$2" ]]; }

declare -A lib_soname lib_status lib_line
lib_names=()
library_path=""
find_libraries() {
    local dirs=() dir name soname built least version best best_dir file
    mapfile -t dirs < <({ toolkit_dirs; system_dirs; wheel_dirs; } | awk '!seen[$0]++')
    while IFS=$'\t' read -r name soname built least; do
        [[ -n "$name" ]] || continue
        lib_names+=("$name")
        lib_soname[$name]="$soname"
        best="" best_dir=""
        for dir in "${dirs[@]}"; do
            file="$dir/$soname"
            [[ -e "$file" ]] || continue
            version="$("$probe" version "$name" "$file" 2>/dev/null)" || continue
            if [[ -z "$best" ]] || ! version_at_least "$best" "$version"; then best="$version" best_dir="$dir"; fi
        done
        if [[ -z "$best" ]]; then
            lib_status[$name]=missing
            lib_line[$name]="$name: $soname not found (built against $built, needs >= $least)"
        elif ! version_at_least "$best" "$least"; then
            lib_status[$name]=old
            lib_line[$name]="$name: $best in $best_dir is older than the bundle needs (>= $least; built against $built)"
        else
            lib_status[$name]=ok
            lib_line[$name]="$name: $best in $best_dir (built against $built, needs >= $least)"
            [[ ":$library_path:" == *":$best_dir:"* ]] || library_path="${library_path:+$library_path:}$best_dir"
        fi
    done < <("$probe" built)
}

# Why a program cannot run here (nothing when it can): a library it needs
# missing or too old, or a symbol no library found provides. Asked once per
# program (ldd -r loads every library it needs); the answer is left in
# $refused_because.
declare -A refusals
refused_because=""
refusal() {
    local binary="$1" listing name reason=""
    if [[ -z "${refusals[$binary]+asked}" ]] && command -v ldd >/dev/null; then
        listing="$(ldd -r "$binary" 2>&1)"
        for name in "${lib_names[@]}"; do
            grep -q "${lib_soname[$name]}" <<<"$listing" || continue
            [[ "${lib_status[$name]}" == ok ]] || { reason="needs ${lib_line[$name]}"; break; }
        done
        [[ -n "$reason" ]] || reason="$(grep -m1 -E 'not found|undefined symbol' <<<"$listing" | sed 's/^[[:space:]]*/loader: /')"
        refusals[$binary]="$reason"
    fi
    refused_because="${refusals[$binary]:-}"
}

find_libraries 2>"${TMPDIR:-/tmp}/tenet-bundle-python.$$"
python_line="$(cat "${TMPDIR:-/tmp}/tenet-bundle-python.$$")"
rm -f "${TMPDIR:-/tmp}/tenet-bundle-python.$$"
export LD_LIBRARY_PATH="${library_path}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# The C++ and OpenMP runtimes are the system's, unless a program finds one
# missing or older than it was linked against: then the bundle's own (lib/).
runtime_line="C++ and OpenMP runtimes: the system's"
if command -v ldd >/dev/null; then
    for program in "$here"/bin/*; do
        if ldd -r "$program" 2>&1 | grep -qE '(libstdc\+\+|libgcc_s|libgomp)[^ ]* => not found|(GLIBCXX|CXXABI|GCC|GOMP|OMP)_[0-9.]*. not found'; then
            export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$here/lib"
            runtime_line="C++ and OpenMP runtimes: the bundle's own ($here/lib; the system's are missing or older)"
            break
        fi
    done
fi

if ((libraries_only)); then
    [[ -n "$python_line" ]] && echo "$python_line"
    for name in "${lib_names[@]}"; do echo "${lib_line[$name]}"; done
    echo "$runtime_line"
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    exit 0
fi

# ---------------------------------------------------------------- the run

out="${out:-$here/results}"
mkdir -p "$out" || { echo "run.sh: cannot make $out" >&2; exit 2; }
out="$(cd "$out" && pwd)"
rm -f "$out"/{summary.txt,failures.log,sanitizer.log,bench.jsonl,bench.log,run.log}
touch "$out"/{failures.log,sanitizer.log,bench.jsonl,bench.log}
exec > >(tee "$out/run.log") 2>&1
tee_pid=$!

started=$SECONDS
summary=()
note() { summary+=("# $*"); echo "$*"; }

note "tenet device bundle: $(date -u +%FT%TZ), $( ((quick)) && echo quick || echo full) run, budget ${budget} s"
[[ -f "$here/bundle.txt" ]] && while IFS= read -r line; do note "bundle: $line"; done <"$here/bundle.txt"
gpu=1
while IFS= read -r line; do note "$line"; done < <("$probe" device) || true
"$probe" device >/dev/null 2>&1 || gpu=0
command -v nvidia-smi >/dev/null &&
    note "nvidia-smi: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n1)"
[[ -n "$python_line" ]] && note "$python_line"
for name in "${lib_names[@]}"; do note "${lib_line[$name]}"; done
note "$runtime_line"
note "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
if ((gpu)); then
    device_sm="$("$probe" device | sed -n 's/^device 0: .*, sm_\([0-9]*\),.*/\1/p')"
    bundle_sm="$(sed -n 's/^architectures \([0-9]*\).*/\1/p' "$here/bundle.txt" 2>/dev/null)"
    if [[ -n "$device_sm" && -n "$bundle_sm" ]] && ((device_sm < bundle_sm)); then
        note "warning: this GPU is sm_$device_sm, the bundle's kernels sm_$bundle_sm: they will not load (rebuild with CUDA_ARCHITECTURES=$device_sm)"
    fi
else
    note "no GPU: every test, sanitizer run and benchmark is reported as skipped"
fi

sanitizer=""
nvcc_bin=/nonexistent
nvcc_path="$(command -v nvcc 2>/dev/null)" && nvcc_bin="$(dirname "$(readlink -f "$nvcc_path")")"
for candidate in "$(command -v compute-sanitizer 2>/dev/null)" "${CUDA_HOME:-/nonexistent}/bin/compute-sanitizer" \
    "$nvcc_bin/compute-sanitizer" /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
    [[ -n "$candidate" && -x "$candidate" ]] && { sanitizer="$candidate"; break; }
done
if ((gpu && !quick)); then
    [[ -n "$sanitizer" ]] && note "compute-sanitizer: $sanitizer" || note "compute-sanitizer not found: its runs are skipped"
fi

passed=0 failed=0 skipped=0
record() {  # name status seconds expected detail
    local line
    line="$(printf '%-34s %-8s %6s s  (expected %s s)  %s' "$1" "$2" "$3" "$4" "$5")"
    summary+=("$line")
    echo "$line"
    case "$2" in pass) passed=$((passed + 1)) ;; fail | timeout) failed=$((failed + 1)) ;; *) skipped=$((skipped + 1)) ;; esac
}

run_row() {
    local kind="$1" name="$2" binary="$here/bin/$3" expected="$4" args="$5"
    local argv=() reason left limit command=() output rc seconds status detail t0
    [[ -n "$args" ]] && IFS='|' read -r -a argv <<<"$args"
    refusal "$binary"
    reason="$refused_because"
    if [[ -n "$reason" ]]; then record "$name" refused 0 "$expected" "$reason"; return; fi
    if ((!gpu)) && [[ "$kind" == memcheck || "$kind" == racecheck ]]; then record "$name" skip 0 "$expected" "no GPU"; return; fi
    if [[ "$kind" == memcheck || "$kind" == racecheck ]] && [[ -z "$sanitizer" ]]; then
        record "$name" skip 0 "$expected" "compute-sanitizer not found"; return
    fi
    left=$((budget - (SECONDS - started)))
    if ((left < 5)); then record "$name" skip 0 "$expected" "over the ${budget} s budget"; return; fi
    case "$kind" in
    memcheck | racecheck)
        limit=$((expected * 10 > 180 ? 180 : (expected * 10 < 60 ? 60 : expected * 10)))
        command=("$sanitizer" --tool "$kind" --error-exitcode 86 --print-limit 20) ;;
    *) limit=$((expected * 3 > 60 ? expected * 3 : 60)) ;;
    esac
    ((limit > left)) && limit=$left
    t0=$SECONDS
    output="$(timeout -k 10 "$limit" "${command[@]}" "$binary" "${argv[@]}" 2>&1)"
    rc=$?
    seconds=$((SECONDS - t0))
    detail="$(grep -m1 -E 'test cases:' <<<"$output" | sed 's/^\[doctest\] *//; s/[[:space:]]\+/ /g')"
    if ((rc == 124 || rc == 137)); then
        status=timeout detail="killed after $limit s"
    elif ((rc != 0)); then
        status=fail
        ((rc == 86)) && detail="compute-sanitizer found errors (sanitizer.log)"
    elif grep -q '^skipped: no CUDA device' <<<"$output"; then
        status=skip detail="no GPU"
    elif grep -qE 'test cases: +0 \|' <<<"$output"; then
        status=fail detail="no test case ran${args:+ (arguments: ${args//|/ })}"
    else
        status=pass
    fi
    case "$kind" in
    memcheck | racecheck) printf '== %s (%s %s): %s, rc %d\n%s\n\n' "$name" "$3" "${argv[*]}" "$status" "$rc" "$output" >>"$out/sanitizer.log" ;;
    bench)
        printf '== %s %s: %s\n%s\n\n' "$3" "${argv[*]}" "$status" "$output" >>"$out/bench.log"
        grep '^{' <<<"$output" >>"$out/bench.jsonl" ;;
    esac
    if [[ "$status" == fail || "$status" == timeout ]]; then
        printf '== %s: %s after %d s, rc %d: %s %s\n%s\n\n' "$name" "$status" "$seconds" "$rc" "$3" "${argv[*]}" "$output" >>"$out/failures.log"
    fi
    record "$name" "$status" "$seconds" "$expected" "$detail"
}

for kind in test memcheck racecheck bench; do
    ((quick)) && [[ "$kind" == memcheck || "$kind" == racecheck ]] && continue
    echo "== $kind"
    while IFS=$'\t' read -r row_kind name binary expected quick_args full_args; do
        [[ "$row_kind" == "$kind" ]] || continue
        # shellcheck disable=SC2053 # a pattern, by design
        [[ "$name" == $only ]] || continue
        if ((quick)); then
            [[ "$quick_args" == - ]] && continue
            run_row "$kind" "$name" "$binary" "$expected" "$quick_args"
        else
            run_row "$kind" "$name" "$binary" "$expected" "$full_args"
        fi
    done < <(tail -n +2 "$here/manifest.tsv")
done

closing="$passed passed, $failed failed, $skipped skipped"
{
    printf '%s\n' "${summary[@]}"
    echo "# $((SECONDS - started)) s in all"
    echo "$closing"
} >"$out/summary.txt"
echo "run.sh: $((SECONDS - started)) s; results in $out"
echo "$closing"
# run.log is whole only once tee has read everything.
exec >&- 2>&-
wait "$tee_pid" 2>/dev/null || true
((failed == 0))
