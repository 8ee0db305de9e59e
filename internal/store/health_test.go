package store

import (
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// The health route names every server a multi-host DATABASE_URL lets the broker use, once
// each, so an operator sees where a failover may take it.
func TestTargetNamesEveryHost(t *testing.T) {
	for _, tc := range []struct{ dsn, want string }{
		{"postgres://u@db:5432/queen?sslmode=disable", "db:5432/queen"},
		{"postgres://u@h1:5432,h2:5433/queen?target_session_attrs=read-write", "h1:5432,h2:5433/queen"},
		// sslmode=prefer tries each host with and without TLS.
		{"postgres://u@h1,h2/queen?sslmode=prefer", "h1:5432,h2:5432/queen"},
		{"host=h1,h2 port=5432,6432 dbname=queen target_session_attrs=read-write sslmode=disable", "h1:5432,h2:6432/queen"},
	} {
		cfg, err := pgconn.ParseConfig(tc.dsn)
		if err != nil {
			t.Fatal(err)
		}
		if got := target(cfg); got != tc.want {
			t.Errorf("target(%s) = %q, want %q", tc.dsn, got, tc.want)
		}
	}
}
