#!/usr/bin/env bash
# Check benchmark: `warpdrf check --kernel K` for every kernel of a folder
# that uses warp primitives, one at a time. Prints each kernel's verdicts
# (memory, participation; one pair per definition of that name) and wall
# time (front end included), then the median, 95th percentile and maximum,
# the verdict counts, how many kernels the clock's safety net stopped
# (marked `/clock`), and the peak memory.
#   scripts/bench-check.sh [DIR]     (DIR defaults to $WARPDRF_LLAMA_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-${WARPDRF_LLAMA_DIR:?set WARPDRF_LLAMA_DIR or pass a folder}}"
cargo build --release --quiet
bin=target/release/warpdrf
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" kernels --format json "$dir" | python3 -c '
import json, sys
for k in json.load(sys.stdin)["kernels"]:
    if k["uses_warp_primitives"]:
        print(k["kernel"])' | sort -u > "$tmp/kernels"
peak=0
while read -r k; do
    out=$( { /usr/bin/time -f "%e %M" "$bin" check --format json --kernel "$k" "$dir" > "$tmp/$k.json" || true; } 2>&1 | tail -1)
    kb="${out#* }"
    (( kb > peak )) && peak=$kb
    verdict=$(python3 -c 'import json,sys; print(" ".join(k["memory"] + "/" + k["participation"] + ("/clock" if k.get("clock_limited") else "") for k in json.load(open(sys.argv[1]))["kernels"]))' "$tmp/$k.json")
    printf '%-36s %6ss  %s\n' "$k" "${out% *}" "$verdict" | tee -a "$tmp/table"
done < "$tmp/kernels"
python3 - "$tmp/table" "$peak" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
times = sorted(float(r[1].rstrip("s")) for r in rows)
pick = lambda q: times[min(len(times) - 1, int(q * len(times)))]
counts = [{}, {}]
clock = 0
for r in rows:
    clock += any(v.endswith("/clock") for v in r[2:])
    for v in r[2:]:
        for i, part in enumerate(v.split("/")[:2]):
            counts[i][part] = counts[i].get(part, 0) + 1
for i, what in enumerate(["memory", "participation"]):
    print(f"kernels: {len(rows)}; {what} verdicts: " + ", ".join(f"{n} {v}" for v, n in sorted(counts[i].items())))
print(f"per kernel: median {pick(0.5):.1f}s, p95 {pick(0.95):.1f}s, max {times[-1]:.1f}s")
print(f"stopped by the clock's safety net (results may vary with load): {clock} kernels")
print(f"peak RSS: {int(sys.argv[2]) // 1024} MiB")
PY
