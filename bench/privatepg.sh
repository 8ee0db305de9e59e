# Sourced by the benchmarks of growth and steady state (sweep.sh, steady.sh): starts a private
# PostgreSQL 15 cluster with the server's default settings — autovacuum on, so tables are
# analyzed as they grow, unlike the shared test server's — in "$OUT/pg" on port $PGPORT, as the
# postgres user when run as root, and creates database queen. private_pg_cleanup, the scripts'
# EXIT trap, stops the broker ($pid, when set) and the cluster and removes $OUT.
# Needs OUT and PGPORT set; PGBIN (default /usr/lib/postgresql/15/bin) names the binaries.
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"
as=()
private_pg_start() {
	if [ "$(id -u)" = 0 ]; then chmod 755 "$OUT"; mkdir -p "$OUT/pg"; chown postgres "$OUT/pg"; as=(runuser -u postgres --); else mkdir -p "$OUT/pg"; fi
	"${as[@]}" "$PGBIN/initdb" -D "$OUT/pg/data" -U postgres --auth=trust -E UTF8 >"$OUT/initdb.log" 2>&1
	"${as[@]}" "$PGBIN/pg_ctl" -D "$OUT/pg/data" -l "$OUT/pg/server.log" -w \
		-o "-p $PGPORT -c listen_addresses=127.0.0.1 -k $OUT/pg" start >/dev/null
	"$PGBIN/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -qc "CREATE DATABASE queen" >/dev/null
}
private_pg_stop() {
	if [ -f "$OUT/pg/data/postmaster.pid" ]; then "${as[@]}" "$PGBIN/pg_ctl" -D "$OUT/pg/data" -m fast -w stop >/dev/null 2>&1 || true; fi
}
pid=
private_pg_cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	private_pg_stop
	rm -rf "$OUT"
}
