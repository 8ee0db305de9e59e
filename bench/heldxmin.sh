#!/usr/bin/env bash
# Runs queen-bench -scenario heldxmin (issue "Steady under a pinned horizon") against a fresh
# database and a freshly started broker, and prints its windows and the row versions of the hot
# tables. Loopback only. Usage: bench/heldxmin.sh [queen-bench flags]   (e.g. -hold-from 0 for
# the control run). Needs PostgreSQL on 127.0.0.1:5432 (trust auth, user postgres) and Go.
set -euo pipefail
cd "$(dirname "$0")/.."
DB=queen_bench_heldxmin
DSN="postgres://postgres@127.0.0.1:5432/$DB?sslmode=disable"
PORT=16791
export DB_CONNECTION_TIMEOUT="${DB_CONNECTION_TIMEOUT:-30000}"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
go build -o "$OUT/queen" ./cmd/queen
go build -o "$OUT/queen-bench" ./cmd/queen-bench
psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null 2>&1
psql -h 127.0.0.1 -U postgres -d "$DB" -qc "CREATE EXTENSION IF NOT EXISTS pgstattuple" >/dev/null 2>&1 || true
FILE_BUFFER_DIR="$OUT/spool" DATABASE_URL="$DSN" PORT=$PORT LOG_LEVEL=warn "$OUT/queen" >"$OUT/queen.log" 2>&1 &
pid=$!
for _ in $(seq 1 50); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.1; done
"$OUT/queen-bench" -server "http://127.0.0.1:$PORT" -db "$DSN" -pid "$pid" -scenario heldxmin "$@"
kill "$pid"; wait "$pid" 2>/dev/null || true
psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1
