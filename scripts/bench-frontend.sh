#!/usr/bin/env bash
# Front-end benchmark: lists and lowers every kernel of a folder on one core.
# Prints wall time (min and median of N runs) and peak memory.
#   scripts/bench-frontend.sh [DIR] [RUNS]     (DIR defaults to $WARPDRF_LLAMA_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-${WARPDRF_LLAMA_DIR:?set WARPDRF_LLAMA_DIR or pass a folder}}"
runs="${2:-5}"
cargo build --release --quiet
bin=${WARPDRF_BIN:-target/release/warpdrf}
pin=()
command -v taskset >/dev/null && pin=(taskset -c 0)
times=()
peak=0
for _ in $(seq "$runs"); do
    out=$( { /usr/bin/time -f "%e %M" "${pin[@]}" "$bin" kernels --format json "$dir" >/dev/null; } 2>&1 | tail -1)
    times+=("${out% *}")
    kb="${out#* }"
    (( kb > peak )) && peak=$kb
done
sorted=$(printf '%s\n' "${times[@]}" | sort -n)
min=$(echo "$sorted" | head -1)
median=$(echo "$sorted" | sed -n "$(( (runs + 1) / 2 ))p")
kernels=$("$bin" kernels --format json "$dir" | grep -c '"kernel":')
echo "folder:   $dir"
echo "kernels:  $kernels"
echo "runs:     $runs (one core)"
echo "wall:     min ${min}s, median ${median}s"
echo "peak RSS: $(( peak / 1024 )) MiB"
