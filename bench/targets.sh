#!/usr/bin/env bash
# Runs every scenario of the performance targets (issue "Benchmarks") RUNS times against a
# fresh database, each against a freshly started broker, and prints the median of each as a
# Markdown table row. Loopback only. Usage: bench/targets.sh [RUNS]   (default 3)
# ONLY=name,name runs those rows only (the names in the first column of SCENARIOS below).
# Needs PostgreSQL on 127.0.0.1:5432 (trust auth, user postgres) and Go.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-3}"
DB=queen_bench_targets
DSN="postgres://postgres@127.0.0.1:5432/$DB?sslmode=disable"
PORT=16790
# Requests wait up to 30 s in front of the database, not the default 2 s: on a loaded machine a
# run at the default spools pushes that waited longer and then measures the file buffer, not
# the database (bench/HISTORY.md, "Spooling hides a slow database"). An exported value wins.
export DB_CONNECTION_TIMEOUT="${DB_CONNECTION_TIMEOUT:-30000}"
OUT="$(mktemp -d)"
go build -o "$OUT/queen" ./cmd/queen
go build -o "$OUT/queen-bench" ./cmd/queen-bench
# POOLER=transaction puts the broker behind a PgBouncer in transaction mode (Debian's pgbouncer,
# started here on port 16791 with POOLER_SIZE server connections, default 10); queen-bench's
# baseline still talks to PostgreSQL directly. bench/pooler.sh compares the two.
BROKER_DSN="$DSN"
if [ "${POOLER:-}" = transaction ]; then
	mkdir -p "$OUT/pgbouncer"
	cat >"$OUT/pgbouncer/pgbouncer.ini" <<INI
[databases]
$DB = host=127.0.0.1 port=5432 dbname=$DB
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = 16791
unix_socket_dir =
auth_type = trust
auth_file = $OUT/pgbouncer/users.txt
pool_mode = transaction
default_pool_size = ${POOLER_SIZE:-10}
max_client_conn = 1000
ignore_startup_parameters = extra_float_digits
pidfile = $OUT/pgbouncer/pgbouncer.pid
logfile = $OUT/pgbouncer/pgbouncer.log
INI
	echo '"postgres" ""' >"$OUT/pgbouncer/users.txt"
	as=()
	if [ "$(id -u)" = 0 ]; then chmod 755 "$OUT"; chown -R postgres "$OUT/pgbouncer"; as=(runuser -u postgres --); fi
	"${as[@]}" pgbouncer -d "$OUT/pgbouncer/pgbouncer.ini"
	trap 'kill "$(cat "$OUT/pgbouncer/pgbouncer.pid")" 2>/dev/null || true' EXIT
	BROKER_DSN="postgres://postgres@127.0.0.1:16791/$DB?sslmode=disable"
	export DATABASE_POOLER=transaction
fi

run_one() { # name, then queen-bench arguments
	local name="$1"; shift
	psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" >/dev/null 2>&1
	# a fresh spool per run: a spool left by an earlier run makes the broker spool every push
	rm -rf "$OUT/spool"
	FILE_BUFFER_DIR="$OUT/spool" DATABASE_URL="$BROKER_DSN" PORT=$PORT LOG_LEVEL=warn "$OUT/queen" >"$OUT/queen.log" 2>&1 &
	local pid=$!
	for _ in $(seq 1 50); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.1; done
	"$OUT/queen-bench" -server "http://127.0.0.1:$PORT" -db "$DSN" -pid "$pid" -quiet -json "$@" >"$OUT/$name.json"
	kill "$pid"; wait "$pid" 2>/dev/null || true
	python3 - "$OUT/$name.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
b = r.get("baseline") or {}
c, bc = r.get("cpu") or {}, b.get("cpu") or {}
cpu = f'{c.get("brokerUs", 0):.1f} / {c.get("databaseUs", 0):.1f} / {c.get("generatorUs", 0):.1f} / {c.get("machineUs", 0):.1f}'
pc = r.get("requestsPerCall") or {}
calls = " ".join(f'{k} {pc[k]:.1f}' for k in ("pop", "ack", "transaction") if k in pc) or "-"
print(f'{r["scenario"]}\t{r["msgsPerSec"]:.0f}\t{r["p99Ns"]/1e6:.1f}\t{b.get("rowsPerSec", 0):.0f}\t{r.get("ratio", 0)*100:.0f}\t{r.get("brokerPeakRssBytes", 0)/2**20:.0f}\t{cpu}\t{bc.get("generatorUs", 0):.1f} / {bc.get("machineUs", 0):.1f}\t{calls}\t{r["p50Ns"]/1e6:.1f}')
PY
}

median() { sort -t$'\t' -k5 -n | awk -v n="$RUNS" 'NR==int((n+1)/2)'; }

echo "| scenario | params | msgs/s | p50 / p99 ms | baseline rows/s | ratio % | peak RSS MB | CPU µs/msg: broker / PostgreSQL / load generator / machine | baseline µs/row: load generator / machine | requests per call |"
echo "|---|---|---|---|---|---|---|---|---|---|"
while IFS='|' read -r name args; do
	if [ -n "${ONLY:-}" ] && [[ ",$ONLY," != *",$name,"* ]]; then continue; fi
	for i in $(seq 1 "$RUNS"); do run_one "$name-$i" $args -duration 10s; done | tee -a "$OUT/runs.tsv" | median |
		awk -F'\t' -v a="$args" '{printf "| %s | `%s` | %s | %s / %s | %s | %s | %s | %s | %s | %s |\n", $1, a, $2, $10, $3, $4, $5, $6, $7, $8, $9}'
done <<'SCENARIOS'
push100|-scenario push -batch 100 -conns 50 -partitions 10
push100x500|-scenario push -batch 100 -conns 50 -partitions 500
push100spread|-scenario push -batch 100 -conns 50 -partitions 500 -spread 100
push1x200|-scenario push -batch 1 -conns 200 -partitions 10
push1x50|-scenario push -batch 1 -conns 50 -partitions 10
popack100|-scenario popack -batch 100 -conns 20 -partitions 20 -ack batch
popack1|-scenario popack -batch 1 -conns 50 -partitions 50 -ack ack -messages 30000 -baseline-conns 16
popack1auto|-scenario popack -batch 1 -conns 50 -partitions 50 -ack auto -messages 30000 -baseline-conns 16
txn|-scenario txn -conns 50 -partitions 50 -messages 10000 -baseline-conns 16
autoack100|-scenario popack -batch 100 -conns 20 -partitions 20 -ack auto
autoack100k|-scenario popack -batch 100 -conns 25 -partitions 500 -ack auto -messages 100000
autoack1m|-scenario popack -batch 100 -conns 25 -partitions 500 -ack auto -messages 1000000
partitions|-scenario partitions -batch 10 -conns 20
sweep|-scenario sweep -sweep 10,1000,10000,100000
SCENARIOS
psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
echo "Every run (scenario, msgs/s, p99 ms, baseline, ratio %, RSS MB, CPU, baseline CPU, requests per call, p50 ms):" >&2
cat "$OUT/runs.tsv" >&2
