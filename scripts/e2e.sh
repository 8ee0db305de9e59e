#!/usr/bin/env bash
# `make e2e`: the dashboard's end-to-end tests (docs/api/dashboard.md §5). Builds the broker, starts
# four on random ports over one fresh database (A: auth off; B: HS256 authentication on; C: auth
# off, for the "broker stopped" test, which kills it with SIGKILL; D: auth off, with
# CORS_ALLOWED_ORIGINS listing the origin of the "another origin" test's page), and runs
# web/e2e/run.mjs, which seeds data through the HTTP API and drives headless Chromium (Debian's
# chromium, installed here with apt when missing) through playwright-core from web/'s lockfile.
# Screenshots go to $E2E_OUT (default e2e-artifacts/screenshots, ignored by git); the path is
# printed at the end. Without Chromium (and no way to install it) it says "skipped" and exits 0.
#
# Database: PostgreSQL on 127.0.0.1:5432 as user postgres (as in CI), or E2E_PG_URL.
#
# Timing: the scale test prints each page's time to first data (taken in the page, from the
# navigation's start to the DOM mutation that brings the data) and warns about a page later than
# 1 s (dashboard.md §4.5; E2E_FIRST_DATA_MS changes the bound). E2E_STRICT_TIMING=1 makes such a
# miss fail the run (for a quiet machine; tests make no timed assertions by default). Answer sizes
# and DOM rows always fail.
# E2E_ONLY=<name|name…> runs only the tests whose names contain one of the words.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
pg_base="${E2E_PG_URL:-postgres://postgres@127.0.0.1:5432}"
out="${E2E_OUT:-$root/e2e-artifacts/screenshots}"
chromium="${CHROMIUM:-/usr/bin/chromium}"
log() { printf 'e2e: %s\n' "$*"; }

if [ ! -x "$chromium" ] && command -v apt-get >/dev/null; then
	log "installing Debian chromium with apt"
	if [ "$(id -u)" = 0 ]; then
		apt-get install -y chromium >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y chromium >/dev/null; } || true
	elif command -v sudo >/dev/null; then
		sudo apt-get install -y chromium >/dev/null 2>&1 || { sudo apt-get update >/dev/null && sudo apt-get install -y chromium >/dev/null; } || true
	fi
fi
if [ ! -x "$chromium" ]; then
	log "skipped: no Chromium at $chromium (install Debian's chromium package)"
	exit 0
fi

# playwright-core and axe-core, pinned by web/package-lock.json.
if [ ! -f web/node_modules/.package-lock.json ] || ! cmp -s web/package-lock.json web/node_modules/.e2e-lock; then
	log "npm ci in web/"
	(cd web && npm ci --no-audit --no-fund --loglevel=error && cp package-lock.json node_modules/.e2e-lock)
fi

work="$(mktemp -d)"
db="queen_e2e_$$"
pids=()
cleanup() {
	set +e
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	psql "$pg_base/postgres?sslmode=disable" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

go build -o "$work/queen" ./cmd/queen
psql "$pg_base/postgres?sslmode=disable" -qc "CREATE DATABASE $db" >/dev/null

free_port() {
	if command -v python3 >/dev/null; then
		python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
	else
		shuf -i 20000-60000 -n 1
	fi
}
secret="e2e-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
# The brokers run their background jobs at the production intervals (STATS_INTERVAL_MS 10 s,
# METRICS_AGGREGATE_INTERVAL_S 60 s): tests that read counters call POST /api/v1/stats/refresh
# first (which flushes the metrics too). Shorter ones (1 s and 5 s) made the stats job (seconds per
# run at the scale test's 20,000 partitions) run back to back, and each of the three brokers write
# its per-queue metrics for 10,000 queues (about 0.8 s of database time) every 5 s: both cores were
# busy while the scale test timed its pages, which cost up to 1 s more time to first data. The
# stats interval holds across the three brokers (operations.md §5): one run per 10 s, not three.
start() { # name port extra-env...
	local name=$1 port=$2
	shift 2
	env DATABASE_URL="$pg_base/$db?sslmode=disable" HOST=127.0.0.1 PORT="$port" WORKER_ID="e2e-$name" DB_POOL_SIZE=5 \
		DB_REQUEST_TIMEOUT=120000 FILE_BUFFER_DIR="$work/spool-$name" QUEEN_DATA_DIR="$work/data-$name" \
		"$@" "$work/queen" >"$work/$name.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 1 120); do
		curl -sf "http://127.0.0.1:$port/health" >/dev/null && return 0
		sleep 0.5
	done
	log "broker $name did not start:"
	tail -20 "$work/$name.log" >&2
	exit 1
}
pa="$(free_port)"
start a "$pa" XMIN_WARN_SECONDS=3 # the held-snapshot test
pb="$(free_port)"
start b "$pb" JWT_ENABLED=true JWT_ALGORITHM=HS256 JWT_SECRET="$secret"
pc="$(free_port)"
start c "$pc"
pid_c="${pids[-1]}" # env execs the broker: this is the broker's own pid
disown "$pid_c"      # run.mjs kills it on purpose: no "Killed" job notice (cleanup still TERMs it by pid)
pf="$(free_port)" # the "another origin" test's page; broker D lists that origin
pd="$(free_port)"
start d "$pd" CORS_ALLOWED_ORIGINS="http://127.0.0.1:$pf"

rm -rf "$out"
mkdir -p "$out"
set +e
E2E_URL="http://127.0.0.1:$pa" E2E_AUTH_URL="http://127.0.0.1:$pb" E2E_STOP_URL="http://127.0.0.1:$pc" E2E_STOP_PID="$pid_c" E2E_CORS_URL="http://127.0.0.1:$pd" E2E_FOREIGN_PORT="$pf" E2E_SECRET="$secret" E2E_OUT="$out" E2E_DB_URL="$pg_base/$db?sslmode=disable" CHROMIUM="$chromium" \
	timeout 900 node web/e2e/run.mjs
rc=$?
set -e
log "screenshots: $out"
if [ $rc -ne 0 ]; then
	log "FAIL (broker logs follow)"
	tail -n 30 "$work/a.log" "$work/b.log" >&2
fi
exit $rc
