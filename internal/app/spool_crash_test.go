package app_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/queen-go/queen/internal/app"
	"github.com/queen-go/queen/internal/config"
	"github.com/queen-go/queen/internal/testkit"
)

// The child of TestSpoolSurvivesKill: a broker whose database never answers, so that every
// push is spooled, serving until it is killed. It prints its URL.
func TestSpoolCrashChild(t *testing.T) {
	dir, dsn := os.Getenv("QUEEN_SPOOL_CRASH_DIR"), os.Getenv("QUEEN_SPOOL_CRASH_DSN")
	if dir == "" {
		t.Skip("the child of TestSpoolSurvivesKill")
	}
	cfg := frozenConfig(t, dsn, "spool_crash_child")
	cfg.FileBufferDir = dir
	serveUntilKilled(t, cfg)
}

// kill -9 of a broker while pushes are being spooled (docs/api/operations.md §4.2): after a
// restart over the same FILE_BUFFER_DIR, every item that was answered 201 buffered is stored
// exactly once, and nothing is stored that was not sent — at most the pushes in flight at the
// kill, whose write may have become durable before their answer was lost.
func TestSpoolSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker in a subprocess")
	}
	dir := t.TempDir()
	h := newBlackHole(t)
	cmd, base := startChild(t, "TestSpoolCrashChild", "QUEEN_SPOOL_CRASH_DIR="+dir,
		"QUEEN_SPOOL_CRASH_DSN="+fmt.Sprintf("postgres://queen@%s/queen?sslmode=disable", h.ln.Addr()))

	const workers = 4
	var mu sync.Mutex
	var sent, acked []string
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := 0; ; i++ {
				key := fmt.Sprintf("k%d-%d-%s", w, i, uuid.NewString())
				mu.Lock()
				sent = append(sent, key)
				mu.Unlock()
				r := call(base, "POST", "/api/v1/push", pushBody(key, 3))
				if r.err != nil {
					return // killed
				}
				if r.code != 201 || !strings.Contains(r.body, `"status":"buffered"`) {
					t.Errorf("push %s: %d %s", key, r.code, r.body)
					return
				}
				mu.Lock()
				acked = append(acked, key)
				mu.Unlock()
			}
		})
	}
	testkit.Eventually(t, time.Minute, 5*time.Millisecond, func() error { // some are spooled
		mu.Lock()
		defer mu.Unlock()
		if len(acked) < 50 {
			return fmt.Errorf("%d pushes answered buffered", len(acked))
		}
		return nil
	})
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()
	wg.Wait()
	t.Logf("%d pushes answered buffered before the kill", len(acked))
	if len(acked) == 0 {
		t.Fatal("nothing was spooled before the kill")
	}

	// Restart over the same directory, now with the database.
	schema := freshSchema("spool_crash")
	cfg := productionConfig(t, testDSN, schema)
	cfg.FileBufferDir = dir
	a := startApp(t, cfg, app.WithLogger(quietLogger()))
	waitDrained(t, a.URL())
	checkStoredOnce(t, testDSN, schema, acked, 3)

	conn, err := pgx.Connect(t.Context(), testDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	rows, err := conn.Query(t.Context(), fmt.Sprintf(`SELECT transaction_id FROM %s.messages`, pgx.Identifier{schema}.Sanitize()))
	if err != nil {
		t.Fatal(err)
	}
	stored, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	isSent, isAcked := map[string]bool{}, map[string]bool{}
	for _, k := range sent {
		isSent[k] = true
	}
	for _, k := range acked {
		isAcked[k] = true
	}
	unanswered := map[string]bool{}
	for _, id := range stored {
		key := id[:strings.LastIndex(id, "-")]
		switch {
		case !isSent[key]:
			t.Errorf("stored %s, never sent", id)
		case !isAcked[key]:
			unanswered[key] = true
		}
	}
	if len(unanswered) > workers {
		t.Errorf("%d pushes stored that were never answered; at most %d were in flight", len(unanswered), workers)
	}
	t.Logf("%d items stored; %d pushes in flight at the kill were durable before their answer", len(stored), len(unanswered))
}

// startChild runs the test function child of this test binary in a subprocess with env added
// (a broker it starts there), and returns the process and the base URL the child printed on a
// line "URL <url>". The process is killed when the test ends.
func startChild(t *testing.T, child string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.count=1")
	// The child is killed, so its own t.TempDir cleanups never run: its temporary directories
	// go inside one of this test's, which is removed after the child is killed (cleanups run in
	// reverse order of registration).
	cmd.Env = append(os.Environ(), append([]string{"TMPDIR=" + t.TempDir()}, env...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	var base string
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "URL "); ok {
			base = u
			break
		}
	}
	if base == "" {
		t.Fatal("the child printed no URL")
	}
	go func() { // keep the pipe drained
		for sc.Scan() {
		}
	}()
	return cmd, base
}

// serveUntilKilled is the body of a crash test's child: it starts a broker with cfg over a
// schema its parent migrated, prints its URL for startChild and serves until it is killed.
func serveUntilKilled(t *testing.T, cfg config.Config) {
	a := startApp(t, cfg, app.WithoutMigration(), app.WithLogger(quietLogger()))
	fmt.Printf("URL %s\n", a.URL())
	select {} // until SIGKILL
}

// childSchemaConfig is the production configuration of a crash test's child over its
// parent's database and schema, passed as QUEEN_<env>_DSN and QUEEN_<env>_SCHEMA
// (startSchemaChild); without them the test is skipped, as it runs only as parent's child.
func childSchemaConfig(t *testing.T, env, parent string) config.Config {
	dsn, schema := os.Getenv("QUEEN_"+env+"_DSN"), os.Getenv("QUEEN_"+env+"_SCHEMA")
	if dsn == "" {
		t.Skip("the child of " + parent)
	}
	return productionConfig(t, dsn, schema)
}

// startSchemaChild starts the child test over schema of the test database (childSchemaConfig).
func startSchemaChild(t *testing.T, child, env, schema string) (*exec.Cmd, string) {
	return startChild(t, child, "QUEEN_"+env+"_DSN="+testDSN, "QUEEN_"+env+"_SCHEMA="+schema)
}

// crashConns opens the two connections a crash test inspects the database with: db, in the
// test's schema, for the test's own locks and checks; watch, outside any transaction, for
// pg_stat_activity (inside a transaction it is a snapshot).
func crashConns(t *testing.T, schema string) (db, watch *pgx.Conn) {
	ctx := context.Background()
	db, err := pgx.Connect(ctx, testDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	if _, err := db.Exec(ctx, "SET search_path TO "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	if watch, err = pgx.Connect(ctx, testDSN); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { watch.Close(context.Background()) })
	return db, watch
}

// endAfterKill ends what a killed broker left waiting behind the test's holder transaction:
// with terminate, PostgreSQL ends the sessions matching where (a condition on
// pg_stat_activity, with args) as a server restart would; then the holder rolls back, and the
// test waits until no such session remains (an orphaned one runs to its end first).
func endAfterKill(t *testing.T, watch *pgx.Conn, holder pgx.Tx, terminate bool, where string, args ...any) {
	t.Helper()
	ctx := context.Background()
	if terminate {
		if _, err := watch.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "+where, args...); err != nil {
			t.Fatal(err)
		}
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, time.Minute, 20*time.Millisecond, func() error {
		var n int
		if err := watch.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE "+where, args...).Scan(&n); err != nil || n > 0 {
			return fmt.Errorf("%d sessions of the killed broker still run (%v)", n, err)
		}
		return nil
	})
}
