package store

import (
	"context"
	"strings"
	"testing"
)

// The broker's sessions run without JIT unless the connection string asks for it.
func TestSessionsRunWithoutJIT(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ dsn, want string }{{testDSN, "off"}, {withParam(testDSN, "jit=on"), "on"}} {
		s, err := Open(ctx, Options{DSN: c.dsn, Schema: "jit_check", MaxConns: 1})
		if err != nil {
			t.Fatal(err)
		}
		var jit string
		err = s.pool.QueryRow(ctx, "SHOW jit").Scan(&jit)
		s.Close()
		if err != nil || jit != c.want {
			t.Fatalf("%s: jit = %q, %v; want %q", c.dsn, jit, err, c.want)
		}
	}
}

// withParam appends a query parameter to a URL-style DSN.
func withParam(dsn, kv string) string {
	if strings.Contains(dsn, "?") {
		return dsn + "&" + kv
	}
	return dsn + "?" + kv
}
