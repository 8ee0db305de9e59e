package app_test

import (
	"bufio"
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
	a := startApp(t, cfg, app.WithoutMigration(), app.WithLogger(quietLogger()))
	fmt.Printf("URL %s\n", a.URL())
	select {} // until SIGKILL
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
	time.Sleep(1500 * time.Millisecond)
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
