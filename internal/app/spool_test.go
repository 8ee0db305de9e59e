package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/queen-go/queen/internal/app"
)

// A second instance pointed at a spool directory in use refuses to start, with an error that
// says why (docs/api/operations.md §4.2); once the first stops, the directory is free again.
func TestSecondInstanceOnTheSameSpoolDirRefusesToStart(t *testing.T) {
	cfg := productionConfig(t, testDSN, freshSchema("spool_lock"))
	first, err := app.New(context.Background(), cfg, app.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	_, err = app.New(context.Background(), cfg, app.WithLogger(quietLogger()))
	if err == nil || !strings.Contains(err.Error(), "in use by another queen-go instance") {
		t.Fatalf("second instance on %s: %v", cfg.FileBufferDir, err)
	}
	first.Stop()
	again, err := app.New(context.Background(), cfg, app.WithLogger(quietLogger()))
	if err != nil {
		t.Fatalf("after the first stopped: %v", err)
	}
	again.Stop()
}

// Disk full (docs/api/operations.md §4.1): a push that must be spooled and does not fit answers
// 503 with "File buffer write failed" per item and keeps nothing; the broker stays up and
// spools the next push that fits. The spool is a 64 KiB tmpfs, which needs root.
func TestSpoolDiskFullAnswers503PerItem(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		t.Skipf("a 64 KiB tmpfs cannot be mounted here: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, 0) })

	h := newBlackHole(t) // the database never answers: every push is spooled
	cfg := frozenConfig(t, fmt.Sprintf("postgres://queen@%s/queen?sslmode=disable", h.ln.Addr()), "spool_full")
	cfg.FileBufferDir = dir
	a := startApp(t, cfg, app.WithoutMigration(), app.WithLogger(quietLogger()))

	big := strings.Repeat("x", 40<<10)
	items := []any{
		map[string]any{"queue": "full", "partition": "p", "payload": big},
		map[string]any{"queue": "full", "payload": big},
	}
	r := call(a.URL(), "POST", "/api/v1/push", map[string]any{"items": items})
	var got []map[string]any
	if r.code != 503 || json.Unmarshal([]byte(r.body), &got) != nil || len(got) != 2 {
		t.Fatalf("push that does not fit: %d %s", r.code, r.body)
	}
	for i, part := range []string{"p", "Default"} {
		want := map[string]any{"index": float64(i), "status": "failed", "queue": "full", "partition": part,
			"error": "File buffer write failed"}
		if fmt.Sprint(got[i]) != fmt.Sprint(want) {
			t.Errorf("item %d: %v, want %v", i, got[i], want)
		}
	}
	if n := a.Spool().Pending(); n != 0 {
		t.Errorf("%d records kept of a failed spool write", n)
	}

	// Still up: a push that fits is spooled, and the figures count it.
	r = call(a.URL(), "POST", "/api/v1/push", map[string]any{"items": []any{map[string]any{"queue": "full", "payload": 1}}})
	if r.code != 201 || !strings.Contains(r.body, `"status":"buffered"`) {
		t.Fatalf("push after the full one: %d %s", r.code, r.body)
	}
	if b := bufferFigures(t, a.URL()); b["pending"] != 1.0 || b["failed"] != 0.0 {
		t.Errorf("status/buffers: %v", b)
	}
}
