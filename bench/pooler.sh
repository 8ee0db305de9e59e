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
echo "| scenario | direct msgs/s | behind PgBouncer msgs/s | pooled ÷ direct |"
echo "|---|---|---|---|"
join -t'|' -j2 <(awk -F'|' 'NR>2 {print $0}' "$direct" | sort -t'|' -k2,2) \
	<(awk -F'|' 'NR>2 {print $0}' "$pooled" | sort -t'|' -k2,2) |
	awk -F'|' '{d=$4; p=$15; gsub(/ /,"",d); gsub(/ /,"",p); printf "| %s | %s | %s | %.0f %% |\n", $1, d, p, 100*p/d}'
