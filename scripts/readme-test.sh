#!/usr/bin/env bash
# Runs the blocks of README.md that a newcomer copies, as written, against a fresh broker, so
# that the README cannot silently rot; and those of the manuals it links to, docs/client.md (the
# Go client) and docs/queenctl.md (the CLI), after it, in that order, under the same rules.
# `make readme-test` runs it, and .ci/run after `make test`.
#
# Which blocks. A fenced block is selected by a marker comment on the line just before its fence:
#
#   <!-- readme-test -->                 run it
#   <!-- readme-test needs-broker -->    run it while a broker started by this script listens
#   <!-- readme-test [needs-broker]      the same, and its output (stdout and stderr together)
#   expect: TEXT                         must contain each TEXT, in this order
#   -->
#   <!-- readme-test skip: WHY -->       do not run it, and say why
#
# Every ```sh block must carry a marker: an unmarked shell block fails the test, so a new block
# is either tested or says why it is not. The kinds of shell block skipped, and why:
#   - blocks that need outside resources, such as DATABASE_URL=postgres://user:pass@db.example…:
#     nothing in CI (or on a newcomer's machine) answers at a placeholder host;
#   - `go get github.com/queen-go/queen/client@latest`: it edits the go.mod of a module of the
#     reader's own and downloads the published client, not this checkout's; the Go programs are
#     built against this checkout's client instead (below).
# ```go blocks: every complete program (one with `package main`) is vetted and built in a
# temporary module that uses this checkout's client through a replace directive, marked or not;
# a marked one is also run (with a time limit). Fragments (no `package main`, such as the
# transaction example meant to replace part of main) are not programs and are skipped.
# Other fences (``` with no language: diagrams) are not code.
#
# How. The working tree (tracked and untracked files that are not ignored: no bin/, no
# queen-data/) is copied to a temporary directory, which stands for a fresh clone. Each block
# runs there in document order with `bash -e -o pipefail`, in a process group of its own, with a
# time limit, so every command's exit status counts. A block without needs-broker runs with no
# broker of this script's running (the "Try it" block starts and stops its own) and must leave
# none behind; for needs-broker blocks the script starts bin/queen of the copy (built with
# `make build` if no earlier block built it) and stops it before the next plain block and at the
# end. The blocks talk to localhost:6632: if something already listens there the script stops at
# once rather than test another broker.
#
# Database. When PostgreSQL answers on 127.0.0.1:5432 as user postgres (CI: .ci/run starts it),
# the script creates a fresh database there and exports DATABASE_URL, which every broker of the
# blocks uses; it is dropped at the end. That is faster and sturdier in CI than initialising the
# embedded server from scratch (as root it runs as the postgres system user). Without such a
# server, or with README_TEST_EMBEDDED=1, DATABASE_URL stays unset as on a newcomer's machine and
# the broker starts its embedded PostgreSQL in the copy's ./queen-data.
#
# Cleanup, on success, failure or interrupt: the broker, whatever a block left running (its
# process group), the temporary copy and the database.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
# The documents whose blocks are run, in this order (paths from the root of the tree).
documents=(README.md docs/client.md docs/queenctl.md)
block_limit=300 # seconds a block may take (the first `make build` on an empty cache compiles)
start_limit=120 # seconds a broker may take to answer /health

work=""
db=""
pg_base="${README_TEST_PG_URL:-postgres://postgres@127.0.0.1:5432}"
broker_pid=""
group=""

log() { printf 'readme-test: %s\n' "$*"; }
die() {
	printf 'readme-test: FAIL: %s\n' "$*" >&2
	exit 1
}

cleanup() {
	local rc=$?
	set +e
	if [ -n "$group" ]; then kill -TERM -- "-$group" 2>/dev/null; fi
	if [ -n "$broker_pid" ]; then
		kill -TERM "$broker_pid" 2>/dev/null
		wait "$broker_pid" 2>/dev/null
	fi
	if [ -n "$group" ]; then
		sleep 2
		kill -KILL -- "-$group" 2>/dev/null
	fi
	if [ -n "$db" ]; then
		psql "$pg_base/postgres?sslmode=disable" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null ||
			echo "readme-test: could not drop database $db" >&2
	fi
	if [ -n "$work" ]; then rm -rf "$work"; fi
	if [ "$rc" -ne 0 ]; then echo "readme-test: FAILED (exit $rc) after ${SECONDS}s" >&2; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# listening reports whether anything accepts connections on localhost:6632 (curl exit 7: no).
listening() {
	local rc=0
	curl -s -o /dev/null --max-time 5 http://localhost:6632/health || rc=$?
	[ "$rc" -ne 7 ]
}

healthy() { curl -fs -o /dev/null --max-time 5 http://localhost:6632/health; }

command -v curl >/dev/null || die "curl is needed"
command -v go >/dev/null || die "go is needed"
if listening; then
	die "something already listens on localhost:6632; the README's blocks talk to that port, so stop it first"
fi

# A fresh environment: nothing of the caller's broker, client or database settings leaks in.
unset PORT HOST DATABASE_URL PG_HOST PG_PORT PG_DB PG_USER PG_PASSWORD QUEEN_DATA_DIR PG_BIN_DIR \
	DB_SCHEMA JWT_ENABLED QUEEN_SERVER QUEEN_TOKEN QUEENCTL_CONFIG GOFLAGS

work="$(mktemp -d /tmp/readme-test.XXXXXX)"
chmod 755 "$work" # as root the embedded PostgreSQL runs as postgres and must reach ./queen-data
copy="$work/queen-go"
mkdir -p "$copy" "$work/blocks" "$work/config" "$work/tmp"
mkdir -p "$work/tmp"
GOENV="$(go env GOENV)" # go's own settings file stays the caller's
export GOENV
export XDG_CONFIG_HOME="$work/config" # queenctl's default contexts file: a fresh one
export TMPDIR="$work/tmp"             # the blocks' mktemp files go with the copy

if [ "${README_TEST_EMBEDDED:-}" != 1 ] && command -v psql >/dev/null &&
	PGCONNECT_TIMEOUT=5 psql "$pg_base/postgres?sslmode=disable" -Atqc 'SELECT 1' >/dev/null 2>&1; then
	db="queen_readme_$$_$RANDOM"
	psql "$pg_base/postgres?sslmode=disable" -v ON_ERROR_STOP=1 -qc "CREATE DATABASE $db" >/dev/null
	export DATABASE_URL="$pg_base/$db?sslmode=disable"
	log "database: fresh database $db on 127.0.0.1:5432 (DATABASE_URL is set for the blocks)"
else
	log "database: the embedded PostgreSQL in the copy's ./queen-data (DATABASE_URL unset)"
fi

# The fresh clone: what git would check out, plus the uncommitted changes of this working tree.
(
	cd "$root"
	git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
		tar -cf - --null -T - | tar -xf - -C "$copy"
)
log "copied the working tree to $copy"

# Split each document into its fenced blocks: NNN.meta (document, line, language, mode,
# needs-broker, why), NNN.expect (the expected texts) and NNN.body, numbered across the documents
# in the order they run.
n=0
for doc in "${documents[@]}"; do
awk -v dir="$work/blocks" -v doc="$doc" -v n="$n" '
function fail(msg) { printf "%s:%d: %s\n", doc, NR, msg > "/dev/stderr"; bad = 1; exit 1 }
inblock {
	if ($0 ~ /^```[ \t]*$/) { inblock = 0; close(body); next }
	print > body; next
}
inmarker {
	if ($0 ~ /^-->[ \t]*$/) { inmarker = 0; ready = NR; next }
	if ($0 ~ /^expect: /) { exps = exps substr($0, 9) "\n"; next }
	fail("a readme-test marker holds only \"expect: TEXT\" lines before its closing -->")
}
/^<!-- readme-test/ {
	if (ready) fail("two readme-test markers in a row")
	attrs = substr($0, length("<!-- readme-test") + 1)
	single = sub(/[ \t]*-->[ \t]*$/, "", attrs)
	sub(/^[ \t]+/, "", attrs)
	mode = "run"; why = ""; broker = 0; exps = ""
	if (attrs ~ /^skip:/) {
		mode = "skip"; why = attrs; sub(/^skip:[ \t]*/, "", why)
		if (why == "") fail("readme-test skip: needs a reason")
	} else if (attrs == "needs-broker") broker = 1
	else if (attrs != "") fail("unknown readme-test marker: " attrs)
	if (single) ready = NR; else inmarker = 1
	next
}
/^```/ {
	n++; id = sprintf("%03d", n)
	lang = substr($0, 4); gsub(/[ \t]/, "", lang)
	m = ready ? mode : "none"
	printf "%s\t%d\t%s\t%s\t%d\t%s\n", doc, NR, lang, m, (ready ? broker : 0), (ready ? why : "") > (dir "/" id ".meta")
	close(dir "/" id ".meta")
	printf "%s", (ready ? exps : "") > (dir "/" id ".expect")
	close(dir "/" id ".expect")
	body = dir "/" id ".body"; printf "" > body
	inblock = 1; ready = 0; exps = ""
	next
}
ready { fail("a readme-test marker must be on the line just before a fence") }
END {
	if (bad) exit 1
	if (inblock) { print doc ": a fence is not closed" > "/dev/stderr"; exit 1 }
	if (inmarker || ready) { print doc ": a readme-test marker is followed by no fence" > "/dev/stderr"; exit 1 }
}' "$root/$doc" || die "$doc: malformed readme-test markers (above)"
	n="$(find "$work/blocks" -name '*.meta' | wc -l)"
done

summary=()
note() { summary+=("$(printf '%-5s %-22s %-3s %s' "$1" "$2" "$3" "$4")"); }

start_broker() {
	[ -z "$broker_pid" ] || return 0
	! listening || die "localhost:6632 is taken before the script starts its broker (did a block leave one running?)"
	if [ ! -x "$copy/bin/queen" ]; then
		log "make build (no earlier block built bin/queen)"
		(cd "$copy" && make build)
	fi
	(cd "$copy" && exec bin/queen) >"$work/broker.log" 2>&1 &
	broker_pid=$!
	local i
	for ((i = 0; i < start_limit; i++)); do
		healthy && break
		kill -0 "$broker_pid" 2>/dev/null || break
		sleep 1
	done
	if ! healthy; then
		cat "$work/broker.log" >&2
		die "the broker did not answer /health within ${start_limit}s (its log is above)"
	fi
	log "broker started (pid $broker_pid)"
}

stop_broker() {
	[ -n "$broker_pid" ] || return 0
	local rc=0
	kill -TERM "$broker_pid"
	wait "$broker_pid" || rc=$?
	broker_pid=""
	if [ "$rc" -ne 0 ]; then
		cat "$work/broker.log" >&2
		die "the broker exited with status $rc on SIGTERM (its log is above)"
	fi
	log "broker stopped"
}

# check_expects LOG EXPECT: each line of EXPECT occurs in LOG, after the previous one.
check_expects() {
	local rest e
	rest="$(cat "$1")"
	while IFS= read -r e; do
		[ -n "$e" ] || continue
		case "$rest" in
		*"$e"*) rest="${rest#*"$e"}" ;;
		*) return 1 ;;
		esac
	done <"$2"
}

# run_logged NAME DIR COMMAND...: runs COMMAND in DIR in a process group of its own (timeout
# makes one) with the time limit, output to $work/NAME.log, printed indented; its status is
# returned. Whatever the command left running in its group is ended afterwards.
run_logged() {
	local name=$1 dir=$2 rc=0
	shift 2
	(cd "$dir" && exec timeout --kill-after=10 "$block_limit" "$@") >"$work/$name.log" 2>&1 </dev/null &
	group=$!
	wait "$group" || rc=$?
	if kill -TERM -- "-$group" 2>/dev/null; then
		sleep 2
		kill -KILL -- "-$group" 2>/dev/null || true
	fi
	group=""
	sed 's/^/    | /' "$work/$name.log"
	[ "$rc" -ne 124 ] || echo "    (timed out after ${block_limit}s)"
	return "$rc"
}

go_directive="$(sed -n 's/^go //p' "$copy/client/go.mod")"

for meta in "$work"/blocks/*.meta; do
	id="$(basename "$meta" .meta)"
	body="$work/blocks/$id.body"
	expect="$work/blocks/$id.expect"
	IFS=$'\t' read -r doc line lang mode broker why <"$meta"
	at="$doc:$line"
	# The block's label in the summary: its first line that is no comment and builds nothing.
	first="$(grep -v -e '^[[:space:]]*\(#.*\)\?$' -e '^go build ' -e '^make build' "$body" | head -1 || true)"
	case "$lang" in
	sh | bash | shell) ;;
	go)
		if ! grep -q '^package main' "$body"; then
			note skip "$at" go "a fragment, not a complete program: $first"
			continue
		fi
		# A module of its own that uses this checkout's client, as a reader's program would.
		dir="$work/go-$id"
		mkdir -p "$dir"
		cp "$body" "$dir/main.go"
		cp "$copy/client/go.sum" "$dir/go.sum"
		cat >"$dir/go.mod" <<-EOF
			module readme.example/block$id

			go $go_directive

			require github.com/queen-go/queen/client v0.0.0

			replace github.com/queen-go/queen/client => $copy/client
		EOF
		log "$at: go vet and go build of the program"
		rc=0
		run_logged "go-$id-build" "$dir" env GOWORK=off GOFLAGS=-mod=mod \
			sh -c 'go vet . && go build -o program .' || rc=$?
		[ "$rc" -eq 0 ] || die "$at: the Go program does not build (exit $rc)"
		if [ "$mode" != run ]; then
			note built "$at" go "$first"
			continue
		fi
		if [ "$broker" = 1 ]; then start_broker; else stop_broker; fi
		log "$at: running the Go program"
		rc=0
		run_logged "go-$id-run" "$dir" ./program || rc=$?
		[ "$rc" -eq 0 ] || die "$at: the Go program failed (exit $rc)"
		check_expects "$work/go-$id-run.log" "$expect" ||
			die "$at: the Go program's output lacks, in order: $(tr '\n' '|' <"$expect")"
		note ran "$at" go "built and run: $first"
		continue
		;;
	*) continue ;; # not code (diagrams, tables in fences)
	esac

	case "$mode" in
	none) die "$at: shell block without a marker; put <!-- readme-test --> or <!-- readme-test skip: WHY --> on the line before its fence" ;;
	skip)
		note skip "$at" sh "$why"
		continue
		;;
	esac
	if [ "$broker" = 1 ]; then
		start_broker
	else
		stop_broker
		! listening || die "localhost:6632 is taken before the block at $at"
	fi
	log "$at: running the block (bash -e -o pipefail)"
	cp "$body" "$work/block-$id.sh"
	rc=0
	run_logged "block-$id" "$copy" bash -e -o pipefail "$work/block-$id.sh" || rc=$?
	[ "$rc" -eq 0 ] || die "$at: the block failed (exit $rc)"
	check_expects "$work/block-$id.log" "$expect" ||
		die "$at: the block's output lacks, in order: $(tr '\n' '|' <"$expect")"
	if [ "$broker" != 1 ] && listening; then
		die "$at: the block left something listening on localhost:6632"
	fi
	note ran "$at" sh "$first"
done
stop_broker

log "summary:"
printf '  %s\n' "${summary[@]}"
log "passed in ${SECONDS}s"
