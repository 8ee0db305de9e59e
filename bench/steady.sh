#!/usr/bin/env bash
# The steady-state benchmark (bench/steady.md): starts a private PostgreSQL 15 cluster with the
# server's default settings (autovacuum on), a broker on it with its own spool and the default
# RETENTION_INTERVAL, runs queen-bench -scenario steady with the flags given, prints its windows,
# and stops and removes everything it started. Loopback only.
# Usage: bench/steady.sh [queen-bench flags]
#   bench/steady.sh                                   # 20 minutes at 2,000 msgs/s, windows of 60 s
#   bench/steady.sh -duration 60s -window 30s -rate 500   # a short run
#   bench/steady.sh -groups 3                         # the fan-out variant
# Environment: PGBIN (default /usr/lib/postgresql/15/bin), STEADY_PGPORT (16794), STEADY_PORT
# (16795); broker settings (RETENTION_INTERVAL, RETENTION_BATCH_SIZE…) pass through.
set -euo pipefail
cd "$(dirname "$0")/.."
PGPORT="${STEADY_PGPORT:-16794}"
PORT="${STEADY_PORT:-16795}"
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
"$OUT/queen-bench" -server "http://127.0.0.1:$PORT" -db "$DSN" -pid "$pid" -scenario steady "$@"
if grep -qiE 'error|panic' "$OUT/queen.log"; then echo "--- broker log (errors):" >&2; grep -iE 'error|panic' "$OUT/queen.log" | tail -20 >&2; fi
