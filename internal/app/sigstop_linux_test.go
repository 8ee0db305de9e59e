package app_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/app"
	"github.com/queen-go/queen/internal/embeddedpg"
	"github.com/queen-go/queen/internal/testkit"
)

// The measured case of docs/api/operations.md §9.1: every PostgreSQL process stopped with
// SIGSTOP under load, so the server accepts connections and never answers. A private embedded
// server is stopped mid-request; every route answers within its bound (pushes 201, written or
// spooled, and each spooled one stored exactly once after SIGCONT), a pop parked across the
// freeze answers 204 at its deadline, and after SIGCONT the broker serves again.
func TestPostgresStoppedMidRequest(t *testing.T) {
	srv, dataDir := startStoppableServer(t)
	schema := freshSchema("sigstop")
	a := startApp(t, frozenConfig(t, srv.DSN(), schema), app.WithLogger(testLogger(t)))
	t.Cleanup(func() { signalServer(t, dataDir, syscall.SIGCONT) }) // before the App and the server stop
	base := a.URL()
	pushEventually(t, base, "healthy")
	// A pop parked before the freeze on a queue nobody writes, whose deadline passes during
	// the freeze: 204 at its deadline.
	if r := call(base, "POST", "/api/v1/configure", map[string]any{"queue": "sigstop-parked"}); r.code != 200 {
		t.Fatalf("configure: %d %s", r.code, r.body)
	}
	const popTimeout = 2 * time.Second
	parked := make(chan answer, 1)
	go func() {
		parked <- call(base, "GET", fmt.Sprintf("/api/v1/pop/queue/sigstop-parked?wait=true&timeout=%d", popTimeout.Milliseconds()), nil)
	}()
	testkit.Eventually(t, 10*time.Second, time.Millisecond, func() error {
		if a.Hub().Idle() != 1 {
			return errors.New("the pop has not parked after an empty first attempt")
		}
		return nil
	})

	pushLoop := startPushLoop(base, "s")
	time.Sleep(200 * time.Millisecond) // real elapsed time, not an ordering: the freeze meets pushes in flight
	signalServer(t, dataDir, syscall.SIGSTOP)
	stoppedAt := time.Now()
	for _, rc := range frozenRoutes() {
		checkUnavailable(t, rc, call(base, rc.method, rc.path, rc.body))
	}
	p := <-parked
	if bound := popTimeout + routeBound(frozenRequestTimeout); p.code != 204 || p.took > popTimeout+3*routeBound(frozenRequestTimeout) {
		t.Errorf("pop parked across the freeze: %d %s after %v, want 204 within %v", p.code, p.body, p.took, bound)
	}
	pushes := pushLoop()
	signalServer(t, dataDir, syscall.SIGCONT)
	t.Logf("PostgreSQL stopped for %v; %d pushes", time.Since(stoppedAt).Round(time.Millisecond), len(pushes))

	checkPushesAcrossOutage(t, base, srv.DSN(), schema, pushes, "while PostgreSQL was stopped")
}

// startStoppableServer starts a private embedded PostgreSQL server that a test may stop with
// SIGSTOP (signalServer), and stops it when the test ends; it skips the test under -short or
// without PostgreSQL binaries.
func startStoppableServer(t *testing.T) (*embeddedpg.Server, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a PostgreSQL server of its own")
	}
	bin, err := embeddedpg.FindBinaries("")
	if err != nil {
		t.Skipf("no PostgreSQL binaries: %v", err)
	}
	dataDir := embeddedDataDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := embeddedpg.Start(ctx, embeddedpg.Options{DataDir: dataDir, BinDir: bin, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	return srv, dataDir
}

// embeddedDataDir returns a not yet existing data directory under a temporary one that every
// user can traverse: run as root, the server runs as the postgres user.
func embeddedDataDir(t *testing.T) string {
	t.Helper()
	parent, err := os.MkdirTemp("", "queen-sigstop-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o711); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(parent, "data")
}

// signalServer sends sig to every process of the embedded server on dataDir: the postmaster
// first (so it forks no new child meanwhile), then each of its children. Backends make
// themselves process-group leaders, so signalling the postmaster's group would miss them.
func signalServer(t *testing.T, dataDir string, sig syscall.Signal) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "postgres", "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatalf("signal postmaster %d: %v", pid, err)
	}
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			_ = syscall.Kill(child, sig) // a child that just exited is no concern
			n++
		}
	}
	t.Logf("sent %v to the postmaster %d and %d children", sig, pid, n)
}
