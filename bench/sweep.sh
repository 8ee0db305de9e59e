#!/usr/bin/env bash
# Runs queen-bench -scenario sweep (push b10 × 50 and pop + ack b10 × 20 over 10, 1,000, 10,000
# and 100,000 partitions, each step on fresh queues) against a fresh database and a freshly
# started broker, and prints the steps and the ratios. Loopback only; see bench/steady.md.
# Usage: bench/sweep.sh [queen-bench flags]   (e.g. -sweep 10,1000 -duration 5s, or -json)
# Environment: PGBIN (default /usr/lib/postgresql/15/bin), SWEEP_PGPORT (16796).
# Starts its own PostgreSQL cluster with the server's defaults (bench/privatepg.sh): a run of
# growing tables on the shared test server, whose autovacuum is off, is never analyzed, and the
# plans cached at the small steps then served the large ones (pushes at 100,000 partitions fell
# to a tenth of their rate). Needs PostgreSQL 15's server binaries and Go.
set -euo pipefail
cd "$(dirname "$0")/.."
PGPORT="${SWEEP_PGPORT:-16796}"
PORT=16793
DSN="postgres://postgres@127.0.0.1:$PGPORT/queen?sslmode=disable"
export DB_CONNECTION_TIMEOUT="${DB_CONNECTION_TIMEOUT:-30000}"
OUT="$(mktemp -d)"
. bench/privatepg.sh
trap private_pg_cleanup EXIT
go build -o "$OUT/queen" ./cmd/queen
go build -o "$OUT/queen-bench" ./cmd/queen-bench
private_pg_start
FILE_BUFFER_DIR="$OUT/spool" DATABASE_URL="$DSN" PORT=$PORT LOG_LEVEL=warn "$OUT/queen" >"$OUT/queen.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.1; done
"$OUT/queen-bench" -server "http://127.0.0.1:$PORT" -db "$DSN" -pid "$pid" -scenario sweep "$@"
