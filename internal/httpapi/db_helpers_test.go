package httpapi_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

var (
	stateOnce sync.Once
	statePool *pgxpool.Pool
	stateErr  error
)

// stateDB is a small pool on the package database, in the broker's schema, for tests that look
// at what was (or was not) written.
func stateDB(t testing.TB) *pgxpool.Pool {
	t.Helper()
	stateOnce.Do(func() {
		cfg, err := pgxpool.ParseConfig(testDSN)
		if err != nil {
			stateErr = err
			return
		}
		cfg.MaxConns = 2 // within the package's connection budget (pgtest.PerPackage)
		cfg.ConnConfig.RuntimeParams["search_path"] = "queen_go"
		statePool, stateErr = pgxpool.NewWithConfig(context.Background(), cfg)
	})
	if stateErr != nil {
		t.Fatalf("db pool: %v", stateErr)
	}
	return statePool
}

// stateExec runs one statement on stateDB, failing the test on error.
func stateExec(t testing.TB, sql string, args ...any) {
	t.Helper()
	if _, err := stateDB(t).Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
