package httpapi_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queen-go/queen/internal/pgtest"
)

// stateDB is a small pool on the package database, in the broker's schema, for tests that look
// at what was (or was not) written.
func stateDB(t testing.TB) *pgxpool.Pool { return pgtest.RawPool(t, testDSN) }

// stateExec runs one statement on stateDB, failing the test on error.
func stateExec(t testing.TB, sql string, args ...any) {
	t.Helper()
	if _, err := stateDB(t).Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
