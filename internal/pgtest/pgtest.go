// Package pgtest gives each test package a fresh, empty PostgreSQL database of its own, so
// packages run in parallel (as `go test ./...` does) without seeing each other's rows.
//
// The database lives on the server named by QUEEN_TEST_DATABASE_URL, else on a local server at
// 127.0.0.1:5432, else on an embedded server (package embeddedpg) that all test processes of
// the machine share. Schema migrations are the caller's job: the store package owns the schema.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/internal/embeddedpg"
)

// EnvAdminURL names the variable holding the connection string of the server to create test
// databases on. When it is set, that server must be reachable: no fallback hides a typo.
const EnvAdminURL = "QUEEN_TEST_DATABASE_URL"

// defaultAdminURL is the local server most development machines and CI images run.
const defaultAdminURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// sharedDirName is the $QUEEN_DATA_DIR of the embedded server under os.TempDir(). It is
// deliberately fixed, so test processes find and reuse one server; it is left running.
const sharedDirName = "queen-go-test-pg"

// Main is a TestMain body: it creates the package's database, calls run with its connection
// string (run normally migrates, then returns m.Run()), drops the database and exits with
// run's result. A nil run just runs the tests. Without any usable server it exits with status 1.
func Main(m *testing.M, run func(dsn string) int) {
	dsn, cleanup, err := Setup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		os.Exit(1)
	}
	var code int
	if run == nil {
		code = m.Run()
	} else {
		code = run(dsn)
	}
	cleanup()
	os.Exit(code)
}

// Setup creates a database named queen_test_<random hex> and returns its connection string
// and a cleanup function that drops it, even while connections remain open.
func Setup() (dsn string, cleanup func(), err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := adminDSN(ctx)
	if err != nil {
		return "", nil, budgetError(err)
	}
	dsn, cleanup, err = createDatabase(ctx, admin)
	return dsn, cleanup, budgetError(err)
}

// adminDSN picks the server to create databases on.
func adminDSN(ctx context.Context) (string, error) {
	if dsn := os.Getenv(EnvAdminURL); dsn != "" {
		if err := ping(ctx, dsn); err != nil {
			return "", fmt.Errorf("%s is set but unusable: %w", EnvAdminURL, err)
		}
		return dsn, nil
	}
	localErr := ping(ctx, defaultAdminURL)
	if localErr == nil {
		return defaultAdminURL, nil
	}
	dsn, _, err := sharedServer(ctx, filepath.Join(os.TempDir(), sharedDirName))
	if err != nil {
		return "", fmt.Errorf("no test database: %s (%v) is unreachable and the embedded fallback failed: %w",
			defaultAdminURL, localErr, err)
	}
	return dsn, nil
}

// sharedServer returns the embedded server on dir, starting it unless another process already
// has. A file lock makes concurrent test processes wait for the one that starts it. The
// returned *embeddedpg.Server is nil when the server was already running; it is detached, so it
// keeps serving the other processes after this one exits.
func sharedServer(ctx context.Context, dir string) (string, *embeddedpg.Server, error) {
	// 0o711: when tests run as root the server runs as the postgres user, who must pass through.
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return "", nil, err
	}
	unlock, err := lockFile(filepath.Join(dir, "start.lock"))
	if err != nil {
		return "", nil, err
	}
	defer unlock()
	dsn := embeddedpg.SocketDSN(dir)
	if ping(ctx, dsn) == nil {
		return dsn, nil, nil
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("pkg", "pgtest")
	srv, err := embeddedpg.Start(ctx, embeddedpg.Options{DataDir: dir, Detached: true, Logger: logger})
	if err != nil {
		return "", nil, err
	}
	return srv.DSN(), srv, nil
}

// lockFile takes an exclusive lock, waiting for its holder. The descriptor is close-on-exec,
// so the server started while holding it does not inherit the lock.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil // closing releases the lock
}

// createDatabase creates a uniquely named database on the admin server.
func createDatabase(ctx context.Context, admin string) (string, func(), error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", nil, err
	}
	name := "queen_test_" + hex.EncodeToString(b[:])
	if err := adminExec(ctx, admin, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", nil, fmt.Errorf("create test database: %w", err)
	}
	var once sync.Once
	cleanup := func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// FORCE ends connections a test left open (pools not closed, a failed test).
			err := adminExec(ctx, admin, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
			if err != nil {
				fmt.Fprintf(os.Stderr, "pgtest: drop test database %s: %v\n", name, err)
			}
		})
	}
	dsn, err := withDatabase(admin, name)
	if err != nil {
		cleanup()
		return "", nil, err
	}
	return dsn, cleanup, nil
}

// withDatabase returns the admin connection string pointed at another database; it accepts
// both the URL and the key/value forms.
func withDatabase(dsn, name string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", err
		}
		u.Path, u.RawPath = "/"+name, ""
		return u.String(), nil
	}
	if strings.Contains(dsn, "://") {
		return "", errors.New("unsupported connection string scheme")
	}
	return dsn + " dbname=" + name, nil // a later keyword overrides an earlier one
}

func ping(ctx context.Context, dsn string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.Ping(ctx)
}

func adminExec(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

var (
	rawMu    sync.Mutex
	rawPools = map[string]*pgxpool.Pool{}
)

// RawPool is a small pool (2 connections) on dsn in the broker's default schema, shared by the
// tests of one package that read or write rows directly (what was stored, a state to set up).
// It lives as long as the test process.
func RawPool(t testing.TB, dsn string) *pgxpool.Pool {
	t.Helper()
	rawMu.Lock()
	defer rawMu.Unlock()
	if p := rawPools[dsn]; p != nil {
		return p
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("db pool: %v", err)
	}
	cfg.MaxConns = 2
	cfg.ConnConfig.RuntimeParams["search_path"] = "queen_go"
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("db pool: %v", err)
	}
	rawPools[dsn] = p
	return p
}
