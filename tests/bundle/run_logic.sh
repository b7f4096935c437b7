#!/usr/bin/env bash
# The device bundle's run.sh on a pretend GPU machine: stand-in programs (a
# probe that reports a device, tests that pass, fail, match no case or hang,
# a compute-sanitizer that finds errors, a benchmark) check how each run is
# classified and what lands in which file -- the paths a real GPU takes,
# which this machine cannot.
#   bash tests/bundle/run_logic.sh RUN_SH SCRATCH
set -euo pipefail
run_sh="$1" scratch="$2"
rm -rf "$scratch"
bundle="$scratch/bundle" tools="$scratch/tools"
mkdir -p "$bundle/bin" "$tools"
cp "$run_sh" "$bundle/run.sh"

program() {  # name, body
    printf '#!/usr/bin/env bash\n%s\n' "$2" >"$bundle/bin/$1"
    chmod +x "$bundle/bin/$1"
}
program tenet_device_probe 'case "$1" in
device) echo "device 0: Pretend GPU, sm_90, 80.0 GiB, 132 SMs" ;;
built) ;;
esac'
doctest_summary='echo "[doctest] test cases: 2 | 2 passed | 0 failed | 0 skipped"'
program passes "echo \"args: \$*\"; $doctest_summary"
program fails 'echo "softmax forward: relative error 0.5 > 1e-05 over 64 elements; first off [10] device 2, host 1.5"
echo "[doctest] test cases: 2 | 1 passed | 1 failed | 0 skipped"; exit 1'
program matches_nothing 'echo "[doctest] test cases:      0 |      0 passed | 0 failed | 0 skipped"'
program racy "echo racy; $doctest_summary"
program hangs 'sleep 30'
program bench 'echo "== a table"; echo "{\"bench\": \"pretend\", \"gbs\": 1.5}"; echo "args: $*"'
printf '#!/usr/bin/env bash\n# stand-in compute-sanitizer: --tool T --error-exitcode N --print-limit L PROGRAM ARGS\nshift 6\nout="$("$@")"; echo "$out"\n[[ "$out" == racy* ]] && { echo "========= Race reported"; exit 86; }\nexit 0\n' >"$tools/compute-sanitizer"
chmod +x "$tools/compute-sanitizer"

tab=$'\t'
{
    echo "kind${tab}name${tab}binary${tab}seconds${tab}quick${tab}args"
    echo "test${tab}gpu.passes${tab}passes${tab}1${tab}--test-case=only one*${tab}"
    echo "test${tab}gpu.fails${tab}fails${tab}1${tab}--test-case=x${tab}"
    echo "test${tab}gpu.matches_nothing${tab}matches_nothing${tab}1${tab}--test-case=x${tab}--test-case=y*|--no-skip"
    echo "memcheck${tab}memcheck.passes${tab}passes${tab}1${tab}-${tab}--test-case=a b*,c*"
    echo "racecheck${tab}racecheck.racy${tab}racy${tab}1${tab}-${tab}--test-case=r*"
    echo "bench${tab}bench.pretend${tab}bench${tab}1${tab}--model|cnn|--quick${tab}--model|cnn"
    echo "bench${tab}bench.hangs${tab}hangs${tab}1${tab}--quick${tab}"
    echo "bench${tab}bench.after_the_budget${tab}bench${tab}1${tab}--quick${tab}"
} >"$bundle/manifest.tsv"

problems=0
expect() {  # file, extended regex, what
    grep -qE "$2" "$1" || { echo "run_logic: $3: no line matching '$2' in $(basename "$1")" >&2; problems=$((problems + 1)); }
}

# A full run: within a 6-second budget the hanging benchmark is killed and
# the last one is left for want of time.
status=0
PATH="$tools:$PATH" bash "$bundle/run.sh" --budget 6 "$scratch/full" >"$scratch/full.out" 2>&1 || status=$?
summary="$scratch/full/summary.txt"
((status == 1)) || { echo "run_logic: a run with failures exited $status, not 1" >&2; problems=$((problems + 1)); }
expect "$summary" '^# device 0: Pretend GPU' "the device line"
expect "$summary" '^# compute-sanitizer: .*tools/compute-sanitizer' "the sanitizer found on PATH"
expect "$summary" '^gpu.passes +pass +[0-9]+ s .*test cases: 2 \| 2 passed' "a passing test"
expect "$summary" '^gpu.fails +fail ' "a failing test"
expect "$summary" '^gpu.matches_nothing +fail .*no test case ran \(arguments: --test-case=y\* --no-skip\)' "a filter that matches no case"
expect "$summary" '^memcheck.passes +pass ' "a clean sanitizer run"
expect "$summary" '^racecheck.racy +fail .*compute-sanitizer found errors' "a sanitizer that finds errors"
expect "$summary" '^bench.pretend +pass ' "a benchmark"
expect "$summary" '^bench.hangs +timeout .*killed after' "a program that hangs"
expect "$summary" '^bench.after_the_budget +skip .*over the 6 s budget' "the budget"
expect "$summary" '^3 passed, 4 failed, 1 skipped$' "the closing line"
expect "$scratch/full/failures.log" 'first off \[10\] device 2, host 1.5' "the failing test's whole output"
expect "$scratch/full/failures.log" '^== bench.hangs: timeout' "the hanging program"
expect "$scratch/full/sanitizer.log" 'Race reported' "the sanitizer's report"
expect "$scratch/full/bench.log" 'args: --model cnn$' "the benchmark's arguments"
expect "$scratch/full/bench.jsonl" '^\{"bench": "pretend", "gbs": 1.5\}$' "the benchmark's JSON line"
grep -q 'a table' "$scratch/full/bench.jsonl" && { echo "run_logic: text in bench.jsonl" >&2; problems=$((problems + 1)); }
expect "$scratch/full/run.log" '3 passed, 4 failed, 1 skipped' "run.log whole"
files="$(find "$scratch/full" -type f | wc -l)"
((files <= 8)) || { echo "run_logic: $files files written" >&2; problems=$((problems + 1)); }

# --quick: the quick arguments, no sanitizers; --only picks rows.
PATH="$tools:$PATH" bash "$bundle/run.sh" --quick --only 'gpu.passes' "$scratch/quick" >"$scratch/quick.out" 2>&1 ||
    { echo "run_logic: the quick run failed" >&2; problems=$((problems + 1)); }
expect "$scratch/quick/summary.txt" '^1 passed, 0 failed, 0 skipped$' "--quick --only"
grep -q 'memcheck' "$scratch/quick/summary.txt" && { echo "run_logic: sanitizers in a quick run" >&2; problems=$((problems + 1)); }
PATH="$tools:$PATH" bash "$bundle/run.sh" --quick --only 'bench.pretend' "$scratch/quick" >/dev/null 2>&1 || true
expect "$scratch/quick/bench.log" 'args: --model cnn --quick$' "a benchmark's quick arguments"

if ((problems)); then
    echo "run_logic: $problems problems; outputs in $scratch" >&2
    exit 1
fi
echo "run_logic: every classification as expected"
