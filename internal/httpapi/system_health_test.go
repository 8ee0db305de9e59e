package httpapi_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/testkit"
	"github.com/queen-go/queen/internal/testserver"
)

// /health is public and carries status fields only; GET /api/v1/system/health is the admin's
// detailed form (docs/api/admin-api.md §10.1, §10.2, docs/api/operations.md §9.6).

// shClosedPort is a local TCP port nothing listens on.
func shClosedPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

// Distinctive names, so any leak of them into a body is unmistakable.
const (
	shUser = "shsecretuser"
	shDB   = "shsecretdb"
	shPass = "shsecretpass"
)

// shDownServer starts a broker whose DATABASE_URL points at a closed port, with a failed stats
// run behind it (so the jobs carry the driver's error text too).
func shDownServer(t *testing.T, o testserver.Options) (*testserver.Server, int) {
	t.Helper()
	port := shClosedPort(t)
	dsn := fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/%s?connect_timeout=1", shUser, shPass, port, shDB)
	srv := testserver.Start(t, dsn, o)
	if _, err := srv.Jobs.RunOnce(context.Background(), mq.JobStats); err == nil {
		t.Fatal("a stats run without a database succeeded")
	}
	return srv, port
}

func TestHealthRevealsNothingWhileDatabaseDown(t *testing.T) {
	t.Parallel()
	srv, port := shDownServer(t, testserver.Options{})
	code, body := doURL(t, "GET", srv.URL+"/health", nil)
	if code != http.StatusServiceUnavailable {
		t.Fatalf("/health: %d %s, want 503", code, body)
	}
	text := strings.ToLower(string(body))
	for _, secret := range []string{shUser, shDB, shPass, strconv.Itoa(port), "127.0.0.1", "localhost",
		"dial", "failed to connect", "connection", "refused", "pgx", "sqlstate", "error", "failed to", "postgres"} {
		if strings.Contains(text, secret) {
			t.Errorf("/health body contains %q: %s", secret, body)
		}
	}
	out := decode[obj](t, body)
	admShape(t, out, "status", "database", "server", "version", "worker_id", "maintenanceMode",
		"popMaintenanceMode", "fileBuffer", "jobs")
	if out["status"] != "unhealthy" || out["database"] != "disconnected" {
		t.Errorf("/health %v", out)
	}
	// The failed run shows as state "failed" and nothing else.
	stats := admShape(t, admShape(t, out["jobs"], mq.JobNames...)[mq.JobStats], "state", "leader", "lastRunAt", "lastDurationMs", "runs")
	if stats["state"] != mq.JobFailed {
		t.Errorf("stats job %v, want state failed", stats)
	}
}

func TestSystemHealthDetailsWhileDatabaseDown(t *testing.T) {
	t.Parallel()
	srv, port := shDownServer(t, testserver.Options{})
	code, body := doURL(t, "GET", srv.URL+"/api/v1/system/health", nil)
	if code != http.StatusOK {
		t.Fatalf("system health: %d %s, want 200 (a diagnostic answers without the database)", code, body)
	}
	out := admShape(t, decode[obj](t, body), "status", "database", "server", "version", "worker_id",
		"maintenanceMode", "popMaintenanceMode", "fileBuffer", "databaseDetail", "jobs")
	if out["status"] != "unhealthy" || out["database"] != "disconnected" {
		t.Errorf("system health %v", out)
	}
	d := admShape(t, out["databaseDetail"], "target", "user", "schema", "embedded", "tls", "pool", "listener",
		"lastOkAt", "unavailableSince", "lastError", "lastErrorAt")
	if want := fmt.Sprintf("127.0.0.1:%d/%s", port, shDB); d["target"] != want || d["user"] != shUser ||
		d["schema"] != "queen_go" || d["embedded"] != false || d["listener"] != mq.ListenerReconnecting {
		t.Errorf("databaseDetail %v, want target %s", d, want)
	}
	admShape(t, d["pool"], "size", "active", "idle", "waiting")
	if d["lastOkAt"] != nil || d["unavailableSince"] == nil || d["lastErrorAt"] == nil {
		t.Errorf("outage times %v", d)
	}
	if e, _ := d["lastError"].(string); !strings.Contains(e, strconv.Itoa(port)) {
		t.Errorf("lastError %q: want the driver's text", e)
	}
	if strings.Contains(string(body), shPass) {
		t.Errorf("the password is in the body: %s", body)
	}
	stats := admShape(t, admShape(t, out["jobs"], mq.JobNames...)[mq.JobStats], "state", "leader", "lastRunAt",
		"lastDurationMs", "runs", "lastError")
	if e, _ := stats["lastError"].(string); stats["state"] != mq.JobFailed || e == "" {
		t.Errorf("stats job %v, want failed with its error text", stats)
	}
}

func TestSystemHealthWithDatabase(t *testing.T) {
	b := setup(t, testserver.Options{})
	var out, d obj
	// The listener connects on its own connection after the broker starts: wait for it.
	testkit.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		out = admShape(t, stGet[obj](b, "/api/v1/system/health", http.StatusOK), "status", "database", "server", "version",
			"worker_id", "maintenanceMode", "popMaintenanceMode", "fileBuffer", "databaseDetail", "jobs")
		d = admShape(t, out["databaseDetail"], "target", "user", "schema", "embedded", "tls", "pool", "listener",
			"lastOkAt", "unavailableSince", "lastError", "lastErrorAt")
		want := mq.ListenerConnected
		if !testserver.Listens() {
			want = mq.ListenerPolling // by configuration: behind a pooler without a session URL
		}
		if d["listener"] != want {
			return fmt.Errorf("listener %v", d["listener"])
		}
		return nil
	})
	if out["status"] != "healthy" || d["lastOkAt"] == nil || d["unavailableSince"] != nil {
		t.Errorf("system health %v", out)
	}
	if p := admShape(t, d["pool"], "size", "active", "idle", "waiting"); p["size"] != float64(testserver.PoolSize) {
		t.Errorf("pool %v, want size %d", p, testserver.PoolSize)
	}
	// /health itself has no databaseDetail and no error texts.
	admShape(t, stGet[obj](b, "/health", http.StatusOK), "status", "database", "server", "version", "worker_id",
		"maintenanceMode", "popMaintenanceMode", "fileBuffer", "jobs")
}

func TestSystemHealthAccessLevels(t *testing.T) {
	b := authSetup(t, testserver.Options{})
	route := b.srv.URL + "/api/v1/system/health"
	resp, body := authSend(t, "GET", route, nil, nil)
	authWant(t, resp, body, 401, "Authentication required")
	for _, role := range []string{"read-only", "read-write"} {
		resp, body := authSend(t, "GET", route, bearer(authRole(t, "u", role)), nil)
		authWant(t, resp, body, 403, "Insufficient permissions")
	}
	resp, body = authSend(t, "GET", route, bearer(authRole(t, "root", "admin")), nil)
	authWant(t, resp, body, 200, "")
	// /health stays public.
	resp, body = authSend(t, "GET", b.srv.URL+"/health", nil, nil)
	authWant(t, resp, body, 200, "")
}
