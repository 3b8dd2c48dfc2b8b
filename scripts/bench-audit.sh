#!/usr/bin/env bash
# Audit benchmark: one `warpdrf audit` of a whole folder (front end, every
# kernel, both conditions), as a user runs it. Prints the wall time of the
# whole run, each kernel's checking time as median / 95th percentile /
# maximum (over all kernels, then over those that use warp primitives), the
# verdict table, the kernels over 5 s, how many kernels the clock's safety
# net stopped, the peak memory, and the CPU time (the VMs drift: compare
# runs back to back).
#   scripts/bench-audit.sh [DIR] [-- AUDIT FLAGS…]   (DIR defaults to $WARPDRF_LLAMA_DIR;
#   AUDIT_CSV=FILE keeps the audit's CSV, with each kernel's time;
#   BENCH_WORK=1 audits once more, profiled, and prints the solver work in
#   Z3's units: unlike seconds it does not drift with the machine, so two
#   builds compare run against run)
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${WARPDRF_LLAMA_DIR:-}"
if [[ $# -gt 0 && "$1" != "--" ]]; then
    dir="$1"
    shift
fi
[[ "${1:-}" == "--" ]] && shift
: "${dir:?set WARPDRF_LLAMA_DIR or pass a folder}"
cargo build --release --quiet
bin=target/release/warpdrf
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" kernels --format json "$dir" 2>/dev/null | python3 -c '
import json, sys
for k in json.load(sys.stdin)["kernels"]:
    if k["uses_warp_primitives"]:
        print(k["kernel"])' | sort -u > "$tmp/warp"
/usr/bin/time -f "%e %M %U %S" -o "$tmp/time" "$bin" audit --timings --format csv "$@" "$dir" > "$tmp/audit.csv" 2> "$tmp/stderr" || true
[[ -n "${AUDIT_CSV:-}" ]] && cp "$tmp/audit.csv" "$AUDIT_CSV"
python3 - "$tmp/audit.csv" "$tmp/time" "$tmp/warp" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
wall, kb, user, system = open(sys.argv[2]).read().split()[-4:]
warp = set(open(sys.argv[3]).read().split())
def spread(rs):
    t = sorted(int(r["time_ms"]) / 1000 for r in rs)
    if not t:
        return "none"
    pick = lambda q: t[min(len(t) - 1, int(q * len(t)))]
    return f"median {pick(0.5):.2f}s, p95 {pick(0.95):.2f}s, max {t[-1]:.2f}s"
print(f"kernels: {len(rows)} ({sum(r['kernel'] in warp for r in rows)} use warp primitives)")
print(f"wall: {float(wall):.1f}s; peak RSS: {int(kb) // 1024} MiB")
total = sum(int(r["time_ms"]) for r in rows) / 1000
print(f"cpu: {float(user) + float(system):.1f}s (user+system); sum of kernel times: {total:.1f}s")
print(f"per kernel (all): {spread(rows)}")
print(f"per kernel (warp): {spread([r for r in rows if r['kernel'] in warp])}")
verdicts = ["pass", "discharged", "alarm", "unknown"]
label = "memory \\ participation"
print(f"{label:<24}" + "".join(f"{v:>11}" for v in verdicts))
for m in verdicts:
    print(f"{m:<24}" + "".join(f"{sum(r['memory'] == m and r['participation'] == p for r in rows):>11}" for p in verdicts))
for what in ["memory", "participation"]:
    unknown = sorted(r["kernel"] for r in rows if r["kernel"] in warp and r[what] == "unknown")
    print(f"warp kernels with {what} unknown: {len(unknown)} {' '.join(unknown)}")
slow = sorted(((int(r["time_ms"]) / 1000, r["kernel"]) for r in rows if int(r["time_ms"]) > 5000), reverse=True)
print(f"kernels over 5 s: {len(slow)} " + " ".join(f"{k} ({t:.1f}s)" for t, k in slow))
print(f"stopped by the clock's safety net: {sum(r['clock_limited'] == 'true' for r in rows)} kernels")
PY
if [[ -n "${BENCH_WORK:-}" ]]; then
    WARPDRF_PROFILE=1 "$bin" audit --format json "$@" "$dir" > /dev/null 2> "$tmp/profile" || true
    awk '/ units  kernel\// && /\/check / {u += $5} END {printf "solver work: %.1f M units (the checks of every kernel)\n", u / 1e6}' "$tmp/profile"
fi
