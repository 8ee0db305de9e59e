package app_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/app"
)

// buffers reads GET /api/v1/status/buffers with a client that gives up after 20 s: far beyond
// an answer from memory on a loaded machine, far below the minute a database ping would wait.
func buffers(t *testing.T, base string) map[string]any {
	t.Helper()
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Get(base + "/api/v1/status/buffers")
	if err != nil {
		t.Fatalf("status/buffers: %v (the route must not wait for the database)", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &out) != nil {
		t.Fatalf("status/buffers: %d %s", resp.StatusCode, b)
	}
	return out
}

// GET /api/v1/status/buffers answers without the database (docs/api/admin-api.md §5,
// operations.md §4.3): dbHealthy is the last known state, not a ping, so a frozen database
// (which a ping would wait on for its deadlines, here a minute each) does not hold it.
func TestStatusBuffersAnswersFromMemoryWhileTheDatabaseIsFrozen(t *testing.T) {
	target, through := proxied(t, testDSN)
	p := newProxy(t, target)
	cfg := frozenConfig(t, through(p.ln.Addr()), freshSchema("buffers_frozen"))
	cfg.DBConnectionTimeout, cfg.DBRequestTimeout = time.Minute, time.Minute
	a := startApp(t, cfg, app.WithLogger(quietLogger()))
	t.Cleanup(p.thaw) // before the app stops

	if b := buffers(t, a.URL()); b["dbHealthy"] != true {
		t.Fatalf("healthy: %v", b)
	}
	p.freeze()
	// No call has failed yet: the last known state is healthy, answered at once.
	if b := buffers(t, a.URL()); b["dbHealthy"] != true || b["pending"] != float64(0) {
		t.Fatalf("frozen, nothing failed yet: %v", b)
	}
}

// Once a call found the database unavailable, dbHealthy says so, still without asking it.
func TestStatusBuffersReportsTheLastKnownOutage(t *testing.T) {
	h := newBlackHole(t)
	dsn := fmt.Sprintf("postgres://queen@%s/queen?sslmode=disable", h.ln.Addr())
	a := startApp(t, frozenConfig(t, dsn, "frozen"), app.WithoutMigration(), app.WithLogger(quietLogger()))
	if r := call(a.URL(), "GET", "/api/v1/pop/queue/frozen?wait=false", nil); r.code != http.StatusServiceUnavailable {
		t.Fatalf("pop: %d %s", r.code, r.body)
	}
	if b := buffers(t, a.URL()); b["dbHealthy"] != false {
		t.Fatalf("after a failed call: %v", b)
	}
}
