package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// HoldSnapshot pins the database's snapshot horizon the way a forgotten session does: on conn
// it begins a REPEATABLE READ transaction whose first statement, query ("SELECT 1" when
// empty), takes the snapshot, and leaves it open. It returns conn's backend pid and the
// transaction, which the test may commit or roll back; it is rolled back when the test ends.
func HoldSnapshot(t testing.TB, conn *pgx.Conn, query string) (pid int, tx pgx.Tx) {
	t.Helper()
	ctx := context.Background()
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		CheckConn(t, err)
		t.Fatal(err)
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	if query == "" {
		query = "SELECT 1"
	}
	if _, err := tx.Exec(ctx, query); err != nil {
		t.Fatal(err)
	}
	return pid, tx
}
