#!/usr/bin/env bash
# Runs queen-bench -scenario sweep (push b10 × 50 and pop + ack b10 × 20 over 10, 1,000, 10,000
# and 100,000 partitions, each step on fresh queues) against a fresh database and a freshly
# started broker, and prints the steps and the ratios. Loopback only; see bench/steady.md.
# Usage: bench/sweep.sh [queen-bench flags]   (e.g. -sweep 10,1000 -duration 5s, or -json)
# Needs PostgreSQL on 127.0.0.1:5432 (trust auth, user postgres) and Go.
set -euo pipefail
cd "$(dirname "$0")/.."
DB=queen_bench_sweep
DSN="postgres://postgres@127.0.0.1:5432/$DB?sslmode=disable"
PORT=16793
export DB_CONNECTION_TIMEOUT="${DB_CONNECTION_TIMEOUT:-30000}"
OUT="$(mktemp -d)"
go build -o "$OUT/queen" ./cmd/queen
go build -o "$OUT/queen-bench" ./cmd/queen-bench
psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null 2>&1
FILE_BUFFER_DIR="$OUT/spool" DATABASE_URL="$DSN" PORT=$PORT LOG_LEVEL=warn "$OUT/queen" >"$OUT/queen.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true; rm -rf "$OUT"' EXIT
for _ in $(seq 1 50); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.1; done
"$OUT/queen-bench" -server "http://127.0.0.1:$PORT" -pid "$pid" -scenario sweep "$@"
