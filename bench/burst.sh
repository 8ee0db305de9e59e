#!/usr/bin/env bash
# A burst of consumers (docs/api/operations.md §9.7): 200 partitions of one message each, then
# 200 concurrent single-message pops, one per partition, nothing else running. Prints how many
# got their message, how many got 503 (and with which error), the slowest and the p99, and
# whether the broker logged an outage. Loopback only; fresh database and spool.
# Usage: bench/burst.sh [N]   (default 200). Needs PostgreSQL on 127.0.0.1:5432 (trust auth,
# user postgres), Go, curl and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-200}"
DB=queen_bench_burst
DSN="postgres://postgres@127.0.0.1:5432/$DB?sslmode=disable"
PORT=16792
OUT="$(mktemp -d)"
go build -o "$OUT/queen" ./cmd/queen
psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null 2>&1
FILE_BUFFER_DIR="$OUT/spool" DATABASE_URL="$DSN" PORT=$PORT LOG_LEVEL=info "$OUT/queen" >"$OUT/queen.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true' EXIT
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.1; done
python3 - "$N" >"$OUT/push.json" <<'PY'
import json, sys
n = int(sys.argv[1])
print(json.dumps({"items": [{"queue": "burst", "partition": f"p{i:03d}", "payload": {"i": i}} for i in range(n)]}))
PY
curl -sf -o /dev/null -H 'Content-Type: application/json' --data-binary "@$OUT/push.json" "http://127.0.0.1:$PORT/api/v1/push"
seq 0 $((N - 1)) | xargs -P "$N" -I{} sh -c \
	'p=$(printf "p%03d" {}); curl -s -o '"$OUT"'/pop-{} -w "%{http_code} %{time_total}\n" "http://127.0.0.1:'"$PORT"'/api/v1/pop/queue/burst/partition/$p?batch=1&wait=false"' \
	>"$OUT/answers.txt"
python3 - "$OUT" "$N" <<'PY'
import collections, glob, json, os, sys
out, n = sys.argv[1], int(sys.argv[2])
codes = collections.Counter(); times = []
for line in open(os.path.join(out, "answers.txt")):
    code, took = line.split()
    codes[code] += 1; times.append(float(took))
errors = collections.Counter()
for f in glob.glob(os.path.join(out, "pop-*")):
    try:
        b = json.load(open(f))
    except Exception:
        continue
    if "error" in b:
        errors[b["error"]] += 1
times.sort()
p99 = times[min(len(times) - 1, int(0.99 * len(times)))]
log = open(os.path.join(out, "queen.log")).read()
print(f"{n} pops: {codes.get('200', 0)} got their message; answers {dict(codes)}; errors {dict(errors)}")
print(f"p50 {times[len(times)//2]*1000:.0f} ms, p99 {p99*1000:.0f} ms, slowest {times[-1]*1000:.0f} ms")
print("outage logged" if "database unavailable" in log else "no outage logged")
PY
