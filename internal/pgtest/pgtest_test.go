package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

var testDSN string

func TestMain(m *testing.M) {
	Main(m, func(dsn string) int {
		testDSN = dsn
		return m.Run()
	})
}

func queryText(t *testing.T, dsn, sql string, args ...any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var out string
	if err := conn.QueryRow(ctx, sql, args...).Scan(&out); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

func TestMainGivesFreshDatabase(t *testing.T) {
	if got := queryText(t, testDSN, "SELECT current_database()::text"); !strings.HasPrefix(got, "queen_test_") {
		t.Fatalf("current_database() = %q", got)
	}
	if got := queryText(t, testDSN, "SELECT count(*)::text FROM pg_tables WHERE schemaname = 'public'"); got != "0" {
		t.Fatalf("fresh database has %s tables", got)
	}
}

func TestCleanupDropsDatabase(t *testing.T) {
	dsn, cleanup, err := Setup()
	if err != nil {
		t.Fatal(err)
	}
	name := queryText(t, dsn, "SELECT current_database()::text")
	// An open connection must not keep the database alive.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	cleanup()
	cleanup() // idempotent
	if got := queryText(t, testDSN, "SELECT count(*)::text FROM pg_database WHERE datname = $1", name); got != "0" {
		t.Fatalf("database %s still exists after cleanup", name)
	}
}

func TestWithDatabase(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:p@h:5432/postgres?sslmode=disable": "postgres://u:p@h:5432/other?sslmode=disable",
		"postgresql://h/":                       "postgresql://h/other",
		"host=/tmp/x port=5432 dbname=postgres": "host=/tmp/x port=5432 dbname=postgres dbname=other",
	} {
		got, err := withDatabase(in, "other")
		if err != nil || got != want {
			t.Errorf("withDatabase(%q) = %q, %v; want %q", in, got, err, want)
		}
		if _, err := pgx.ParseConfig(got); err != nil {
			t.Errorf("pgx cannot parse %q: %v", got, err)
		}
	}
}

// TestSharedEmbeddedServer exercises the fallback used when no server runs on 127.0.0.1:5432,
// in a private directory so it does not disturb the machine-wide shared server.
func TestSharedEmbeddedServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o711); err != nil { // the postgres user must pass through as root
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn, srv, err := sharedServer(ctx, dir+"/shared")
	if err != nil {
		t.Fatal(err)
	}
	if srv == nil {
		t.Fatal("first call did not start the server")
	}
	t.Cleanup(func() { _ = srv.Stop() })

	again, srv2, err := sharedServer(ctx, dir+"/shared")
	if err != nil || srv2 != nil || again != dsn {
		t.Fatalf("second call = %q, %v, %v; want the running server reused", again, srv2, err)
	}
	dbDSN, cleanup, err := createDatabase(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	if got := queryText(t, dbDSN, "SELECT current_database()::text"); !strings.HasPrefix(got, "queen_test_") {
		t.Fatalf("current_database() = %q", got)
	}
}

func TestTooManyClientsNamesTheBudget(t *testing.T) {
	// What pgx reports when the server is full, wrapped as the store wraps it.
	refused := errors.New(`database unavailable: failed to connect to ` + "`user=postgres database=x`" +
		`: 127.0.0.1:5432 (127.0.0.1): server error: FATAL: sorry, too many clients already (SQLSTATE 53300)`)
	if !TooManyClients(refused) || !TooManyClients(&pgconn.PgError{Code: "53300"}) {
		t.Fatal("a 53300 refusal is not recognised")
	}
	if TooManyClients(errors.New("connection refused")) || TooManyClients(nil) {
		t.Fatal("another error is taken for a 53300 refusal")
	}
	msg := BudgetMessage(refused)
	for _, want := range []string{"SQLSTATE 53300", fmt.Sprintf("budget is %d connections", Budget), "-p 2", "README.md"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q: %s", want, msg)
		}
	}
	if err := budgetError(refused); !strings.Contains(err.Error(), "budget is") || !errors.Is(err, refused) {
		t.Errorf("setup error %v", err)
	}
	if err := budgetError(errors.New("other")); err.Error() != "other" {
		t.Errorf("other setup error rewritten: %v", err)
	}
}

func TestTooManyClientsFromTheServer(t *testing.T) {
	// A role's CONNECTION LIMIT is refused with the same SQLSTATE 53300 as a full server ("too
	// many connections for role"), so the server's real answer is checked without exhausting a
	// server other people share.
	role := "pgtest_budget_" + strings.ReplaceAll(strings.TrimPrefix(queryText(t, testDSN, "SELECT current_database()::text"), "queen_test_"), "-", "")
	exec := func(sql string) {
		t.Helper()
		conn, err := pgx.Connect(context.Background(), testDSN)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), sql); err != nil {
			t.Skipf("cannot manage roles here (%v)", err)
		}
	}
	exec("CREATE ROLE " + role + " LOGIN CONNECTION LIMIT 0")
	defer exec("DROP ROLE " + role)
	cfg, err := pgx.ParseConfig(testDSN)
	if err != nil {
		t.Fatal(err)
	}
	cfg.User = role
	_, err = pgx.ConnectConfig(context.Background(), cfg)
	if !TooManyClients(err) {
		t.Fatalf("connecting over the role's limit: %v, want SQLSTATE 53300", err)
	}
}
