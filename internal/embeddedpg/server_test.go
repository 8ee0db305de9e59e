package embeddedpg

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// newDataDir returns a not yet existing $QUEEN_DATA_DIR. The directory above it is searchable
// by everyone because, when the tests run as root, the server runs as the postgres user.
func newDataDir(t *testing.T) string {
	t.Helper()
	parent, err := os.MkdirTemp("", "embeddedpg-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o711); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(parent, "data")
}

func binDir(t *testing.T) string {
	t.Helper()
	dir, err := FindBinaries("")
	if err != nil {
		t.Skipf("no PostgreSQL binaries: %v", err)
	}
	return dir
}

func start(t *testing.T, dataDir string) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Start(ctx, Options{DataDir: dataDir, BinDir: binDir(t), Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

// queryText runs a one-value query and returns its result as text.
func queryText(t *testing.T, dsn, sql string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var out string
	if err := conn.QueryRow(ctx, sql).Scan(&out); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

func execSQL(t *testing.T, dsn, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func TestStartStopRestart(t *testing.T) {
	dataDir := newDataDir(t)
	s := start(t, dataDir)
	if got := queryText(t, s.DSN(), "SELECT 1::text"); got != "1" {
		t.Fatalf("SELECT 1 = %q", got)
	}
	if got := queryText(t, s.DSN(), "SHOW listen_addresses"); got != "" {
		t.Fatalf("listen_addresses = %q; want no TCP listener", got)
	}
	if got := queryText(t, s.DSN(), "SHOW server_encoding"); got != "UTF8" {
		t.Fatalf("server_encoding = %q", got)
	}
	execSQL(t, s.DSN(), "CREATE TABLE kept AS SELECT 'still here'::text AS v")
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	default:
		t.Fatal("Done not closed after Stop")
	}
	if _, err := os.Stat(filepath.Join(dataDir, "postgres.log")); err != nil {
		t.Fatal(err)
	}

	s = start(t, dataDir)
	if got := queryText(t, s.DSN(), "SELECT v FROM kept"); got != "still here" {
		t.Fatalf("data not kept across restarts: %q", got)
	}
	if s.DSN() != SocketDSN(dataDir) {
		t.Fatalf("DSN %q != SocketDSN %q", s.DSN(), SocketDSN(dataDir))
	}
}

func TestDataDirInUse(t *testing.T) {
	dataDir := newDataDir(t)
	s := start(t, dataDir)
	_, err := Start(context.Background(), Options{DataDir: dataDir, BinDir: binDir(t)})
	if err == nil || !strings.Contains(err.Error(), "in use by a running server") {
		t.Fatalf("second Start: err = %v; want in-use error", err)
	}
	queryText(t, s.DSN(), "SELECT 1::text") // the first server is untouched
}

func TestStaleLockAfterCrash(t *testing.T) {
	dataDir := newDataDir(t)
	s := start(t, dataDir)
	if err := s.proc.Kill(); err != nil {
		t.Fatal(err)
	}
	<-s.Done()
	pidFile := filepath.Join(dataDir, "postgres", "postmaster.pid")
	lock, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("crash left no lock file: %v", err)
	}
	// Make the lock point at a live process that is not PostgreSQL, as after a reboot that
	// handed the crashed server's PID to someone else; PostgreSQL alone would refuse to start.
	// It runs as the server's user: PostgreSQL takes a PID it may not signal for a stale one.
	a, err := serverAccount(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	other := exec.Command("sleep", "60")
	other.SysProcAttr = sysProcAttr(a, false, false)
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	_, rest, _ := strings.Cut(string(lock), "\n")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(other.Process.Pid)+"\n"+rest), 0o600); err != nil {
		t.Fatal(err)
	}
	s = start(t, dataDir)
	queryText(t, s.DSN(), "SELECT 1::text")
}

func TestUntraversableParent(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root hands the server to the postgres user")
	}
	parent := t.TempDir() // mode 0700, owned by root
	_, err := Start(context.Background(), Options{DataDir: filepath.Join(parent, "data"), BinDir: binDir(t)})
	if err == nil || !strings.Contains(err.Error(), "cannot enter "+filepath.Dir(parent)) {
		t.Fatalf("err = %v; want it to name %s", err, filepath.Dir(parent))
	}
}
