#!/usr/bin/env bash
# bench/run.sh --contention [--models "mlp cnn vit"] [--sittings N]
# Each host training benchmark -- tenet's epoch of the MLP, the CNN and the
# ViT (f32), and PyTorch's and JAX's (all three) where the bench venv has
# them -- first on the idle machine, then with one busy process beside it (a
# shell loop this script starts and stops), in N sittings (3). tenet runs
# twice: with its default (the steps tune their thread count) and with every
# core fixed (--host-threads $(nproc): what it did before the tuner). Prints per
# framework the median epoch idle and busy and their ratio, and writes the
# JSON lines to build/bench-host/contention.jsonl.
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
tenet_install_packages python3

models="mlp cnn vit"
sittings=3
while (($#)); do
    case "$1" in
    --contention) ;;
    --models) models="$2"; shift ;;
    --sittings) sittings="$2"; shift ;;
    *) echo "contention.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done

dir="$TENET_ROOT/build/bench-host"
tenet_configure "$dir" -DTENET_CUDA=OFF -DTENET_BUILD_TESTS=OFF -DTENET_BUILD_EXAMPLES=OFF -DTENET_BUILD_BENCH=ON \
    -DCMAKE_BUILD_TYPE=Release
cmake --build "$dir" -j "$(nproc)" --target bench_host_train_epoch
bench="$dir/bench/bench_host_train_epoch"
venv="$TENET_ROOT/build/bench-venv"
out="$dir/contention.jsonl"
: >"$out"

busy_pid=""
busy_start() {
    bash -c 'while :; do :; done' &
    busy_pid=$!
    sleep 0.5  # (let the scheduler place it)
}
busy_stop() {
    if [[ -n "$busy_pid" ]]; then
        kill "$busy_pid" 2>/dev/null || true
        wait "$busy_pid" 2>/dev/null || true
        busy_pid=""
    fi
}
trap busy_stop EXIT

# run LABEL CONDITION COMMAND...: the command's JSON lines, tagged, into $out.
run() {
    local label="$1" condition="$2"
    shift 2
    [[ "$condition" == busy ]] && busy_start
    "$@" 2>/dev/null | grep '^{' | python3 -c '
import json, sys
label, condition = sys.argv[1], sys.argv[2]
for line in sys.stdin:
    row = json.loads(line)
    row.update({"label": label, "condition": condition})
    print(json.dumps(row))' "$label" "$condition" | tee -a "$out"
    busy_stop
}

peers=()
for framework in torch jax; do
    if [[ -x "$venv/bin/python" ]] && "$venv/bin/python" -c "import $framework" 2>/dev/null; then
        peers+=("$framework")
    else
        echo "skipped: $framework (not installed in $venv; bench/run.sh installs the peers)"
    fi
done

cores=$(nproc)
echo "== host training under contention: idle, then one busy process beside it ($cores cores, $(date -u +%F))"
for sitting in $(seq "$sittings"); do
    for model in $models; do
        for condition in idle busy; do
            run "tenet (tuned)" "$condition" "$bench" --model "$model" --policy f32 --epochs 1
            run "tenet ($cores threads fixed)" "$condition" "$bench" --model "$model" --policy f32 --epochs 1 \
                --host-threads "$cores"
            for framework in "${peers[@]}"; do
                run "$framework" "$condition" "$venv/bin/python" "$TENET_ROOT/bench/peers/mlp_epoch.py" \
                    --framework "$framework" --model "$model" --epochs 1 --no-compile
            done
        done
    done
done

python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
groups = {}
for r in rows:
    groups.setdefault((r["model"], r["label"], r["mode"], r["condition"]), []).append(r["epoch_s"])
print(f'{"model":<5} {"framework":<24} {"mode":<16} {"idle s":>8} {"busy s":>8} {"busy/idle":>9}  (medians of {max(len(v) for v in groups.values())})')
for (model, label, mode, condition), times in sorted(groups.items()):
    if condition != "idle" or (model, label, mode, "busy") not in groups:
        continue
    idle = statistics.median(times)
    busy = statistics.median(groups[(model, label, mode, "busy")])
    print(f"{model:<5} {label:<24} {mode:<16} {idle:8.3f} {busy:8.3f} {busy / idle:9.2f}")
PY
