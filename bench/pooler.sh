#!/usr/bin/env bash
# Throughput behind a transaction pooler against the direct path, in one run: each row of
# bench/targets.sh named in ONLY (default: the push and pop + ack rows) runs RUNS times
# directly and RUNS times behind a PgBouncer in transaction mode (POOLER=transaction), and the
# medians are printed side by side with their ratio. Usage: bench/pooler.sh [RUNS] (default 3).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-3}"
export ONLY="${ONLY:-push100,push1x50,popack100,popack1}"
direct="$(mktemp)" pooled="$(mktemp)"
trap 'rm -f "$direct" "$pooled"' EXIT
bash bench/targets.sh "$RUNS" 2>/dev/null | tee "$direct"
POOLER=transaction bash bench/targets.sh "$RUNS" 2>/dev/null | tee "$pooled"
echo
# One row per targets.sh row, matched by its parameters (two rows may share a scenario name).
python3 - "$direct" "$pooled" <<'PY'
import sys
def rows(path):
    out = {}
    for line in open(path):
        f = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(f) > 2 and f[2].replace(",", "").isdigit():
            out[f[1]] = (f[0], float(f[2].replace(",", "")))
    return out
d, p = rows(sys.argv[1]), rows(sys.argv[2])
print("| scenario | params | direct msgs/s | behind PgBouncer msgs/s | pooled ÷ direct |")
print("|---|---|---|---|---|")
for k, (name, v) in d.items():
    if k in p:
        print(f"| {name} | {k} | {v:,.0f} | {p[k][1]:,.0f} | {100 * p[k][1] / v:.0f} % |")
PY
