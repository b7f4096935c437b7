#!/usr/bin/env bash
# Fuzzes tenet's file readers with libFuzzer (clang 14), one after another:
#   bash scripts/fuzz.sh [seconds per reader, default 60] [reader...]
# Readers: checkpoint sparse idx safetensors npy (tests/fuzz/fuzz_<reader>.cpp). New inputs
# that add coverage are merged (-merge=1, minimised) into the committed
# corpus tests/fuzz/corpus/<reader>/, which the fuzz.replay ctest feeds to the
# same entry points. A crash leaves its input in build/fuzz/<reader>/.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tenet_require_cuda  # the host code path links the CUDA runtime (stream synchronisation)
tenet_install_packages clang-14 libclang-rt-14-dev
seconds="${1:-60}"
shift || true
readers=("$@")
((${#readers[@]})) || readers=(checkpoint sparse idx safetensors npy)
out="$TENET_ROOT/build/fuzz"
mkdir -p "$out"
for reader in "${readers[@]}"; do
    corpus="$TENET_ROOT/tests/fuzz/corpus/$reader"
    work="$out/$reader"
    mkdir -p "$work/new" "$corpus"
    echo "tenet: building the $reader fuzzer"
    clang++-14 -std=c++20 -O1 -g -Wall -Wextra -Werror -fsanitize=fuzzer,address,undefined \
        -fno-sanitize-recover=undefined -I"$TENET_ROOT/include" -I/usr/local/cuda/include \
        "$TENET_ROOT/tests/fuzz/fuzz_$reader.cpp" -L/usr/local/cuda/lib64 -Wl,-rpath,/usr/local/cuda/lib64 \
        -lcudart -lz -o "$work/fuzz_$reader"
    echo "tenet: fuzzing $reader for ${seconds}s"
    # TMPDIR: the scratch files the targets read stay under build/fuzz.
    (cd "$work" && TMPDIR="$work" ./"fuzz_$reader" -max_total_time="$seconds" -max_len=8192 -rss_limit_mb=2048 \
        -print_final_stats=1 new "$corpus")
    # Keep only what adds coverage: the corpus stays small.
    mkdir -p "$work/merged"
    (cd "$work" && TMPDIR="$work" ./"fuzz_$reader" -merge=1 merged "$corpus" new >/dev/null 2>&1)
    rm -f "$corpus"/*
    cp "$work"/merged/* "$corpus"/
    rm -rf "$work/new" "$work/merged"
    echo "tenet: $reader corpus: $(ls "$corpus" | wc -l) files, $(cat "$corpus"/* | wc -c) bytes"
done
