#!/usr/bin/env bash
# The programs the tests start besides the Go toolchain: PostgreSQL's server binaries (initdb,
# pg_ctl, pg_basebackup: standbys and private clusters) and PgBouncer (the transaction-pooler
# suites). Installs Debian's packages when they are missing and this runs as root with apt-get;
# otherwise names what to install and fails. Run by `make test` and CI.
set -euo pipefail
missing=()
command -v pgbouncer >/dev/null || [ -x /usr/sbin/pgbouncer ] || missing+=(pgbouncer)
ls /usr/lib/postgresql/*/bin/pg_basebackup >/dev/null 2>&1 || command -v pg_basebackup >/dev/null || missing+=(postgresql)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
	echo "installing ${missing[*]} (Debian packages the tests start)"
	# no service may start during the install: the tests start their own servers
	policy=/usr/sbin/policy-rc.d
	added=""
	if [ ! -e "$policy" ]; then printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod +x "$policy"; added=1; fi
	rc=0
	{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; } || rc=$?
	[ -n "$added" ] && rm -f "$policy"
	exit $rc
fi
echo "the tests need the Debian packages: ${missing[*]} (apt-get install ${missing[*]})" >&2
exit 1
