package httpapi_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testkit"
	"github.com/queen-go/queen/internal/testserver"
)

// The maintenance routes (docs/api/admin-api.md §9) and what the modes do on the wire. The
// modes are shared by every broker of a schema, so each test runs its brokers in a schema of
// its own: a mode turned on here reaches no other test.

// maintSchema is a new, migrated schema for one test's brokers.
func maintSchema(t *testing.T) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	schema := "mt_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := testserver.Migrate(ctx, testDSN, schema); err != nil {
		t.Fatalf("migrate %s: %v", schema, err)
	}
	return schema
}

const (
	maintPath    = "/api/v1/system/maintenance"
	popMaintPath = "/api/v1/system/maintenance/pop"
)

// maintExpect requires a 200 answer whose body is exactly want (as JSON).
func maintExpect(t *testing.T, srv *testserver.Server, method, path string, body any, want string) {
	t.Helper()
	code, out := doURL(t, method, srv.URL+path, body)
	if code != http.StatusOK || !admSameJSON(out, []byte(want)) {
		t.Fatalf("%s %s: %d %s\nwant 200 %s", method, path, code, out, want)
	}
}

// maintExpectPushOff turns push maintenance off through srv and checks the answer. The
// spooled count it reports depends on how far the drain, which starts at once, has got.
func maintExpectPushOff(t *testing.T, srv *testserver.Server) {
	t.Helper()
	code, out := doURL(t, "POST", srv.URL+maintPath, obj{"enabled": false})
	a := decode[struct {
		Mode     bool   `json:"maintenanceMode"`
		Buffered *int   `json:"bufferedMessages"`
		Healthy  bool   `json:"bufferHealthy"`
		Message  string `json:"message"`
	}](t, out)
	if code != http.StatusOK || a.Mode || a.Buffered == nil || !a.Healthy || a.Message != pushOffMessage {
		t.Fatalf("POST %s off: %d %s", maintPath, code, out)
	}
}

// healthFlags reads the maintenance flags of an instance's /health.
func healthFlags(t testing.TB, srv *testserver.Server) (push, pop bool) {
	t.Helper()
	code, out := doURL(t, "GET", srv.URL+"/health", nil)
	h := decode[struct {
		Push bool `json:"maintenanceMode"`
		Pop  bool `json:"popMaintenanceMode"`
	}](t, out)
	if code != http.StatusOK {
		t.Fatalf("/health: %d %s", code, out)
	}
	return h.Push, h.Pop
}

// promGauge requires the Prometheus exposition to carry family with value v.
func promGauge(t *testing.T, srv *testserver.Server, family string, v int) {
	t.Helper()
	_, out := doURL(t, "GET", srv.URL+"/metrics/prometheus", nil)
	if want := fmt.Sprintf("\n%s %d\n", family, v); !strings.Contains(string(out), want) {
		t.Fatalf("/metrics/prometheus has no %q:\n%s", strings.TrimSpace(want), out)
	}
}

const (
	maintOffJSON = `{"maintenanceMode":false,"popMaintenanceMode":false,"bufferedMessages":0,"bufferHealthy":true,
		"bufferStats":{"pendingCount":0,"failedCount":0,"dbHealthy":true,
		"failedFiles":{"count":0,"totalBytes":0,"totalMB":0,"failoverCount":0,"qos0Count":0}}}`
	maintPushOnJSON = `{"maintenanceMode":true,"popMaintenanceMode":false,"bufferedMessages":0,"bufferHealthy":true,
		"bufferStats":{"pendingCount":0,"failedCount":0,"dbHealthy":true,
		"failedFiles":{"count":0,"totalBytes":0,"totalMB":0,"failoverCount":0,"qos0Count":0}}}`
	pushOnAnswer   = `{"maintenanceMode":true,"bufferedMessages":0,"bufferHealthy":true,"message":"Maintenance mode ENABLED. All PUSHes routing to file buffer."}`
	pushOffMessage = "Maintenance mode DISABLED. Background processor will drain buffer to DB."
)

// Push maintenance: the routes' exact answers, /health and the Prometheus gauge follow the
// flag, pushes are spooled (201 buffered) while transactions still write, and once it is off
// the spool drains into the queue.
func TestPushMaintenanceRoutes(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, testDSN, testserver.Options{Schema: maintSchema(t)})
	q := testQueueName(t)
	maintExpect(t, srv, "GET", maintPath, nil, maintOffJSON)
	promGauge(t, srv, "queen_maintenance_mode_enabled", 0)

	maintExpect(t, srv, "POST", maintPath, obj{"enabled": true}, pushOnAnswer)
	maintExpect(t, srv, "GET", maintPath, nil, maintPushOnJSON)
	if push, pop := healthFlags(t, srv); !push || pop {
		t.Fatalf("/health during push maintenance: maintenanceMode %v, popMaintenanceMode %v", push, pop)
	}
	promGauge(t, srv, "queen_maintenance_mode_enabled", 1)
	promGauge(t, srv, "queen_pop_maintenance_mode_enabled", 0)

	push := obj{"items": []obj{{"queue": q, "payload": 1, "transactionId": "during"}}}
	if code, out := doURL(t, "POST", srv.URL+"/api/v1/push", push); code != http.StatusCreated ||
		!strings.Contains(string(out), `"status":"buffered"`) {
		t.Fatalf("push during push maintenance: %d %s, want 201 buffered", code, out)
	}
	if code, out := doURL(t, "POST", srv.URL+"/api/v1/push", obj{"items": []obj{{"payload": 1}}}); code != http.StatusBadRequest {
		t.Fatalf("invalid push during push maintenance: %d %s, want 400 (validation first)", code, out)
	}
	if code, out := doURL(t, "POST", srv.URL+"/api/v1/push", obj{"items": []obj{}}); code != http.StatusCreated || strings.TrimSpace(string(out)) != "[]" {
		t.Fatalf("empty push during push maintenance: %d %s", code, out)
	}
	txn := obj{"operations": []obj{{"type": "push", "items": []obj{{"queue": q, "payload": 2, "transactionId": "txn"}}}}}
	if code, out := doURL(t, "POST", srv.URL+"/api/v1/transaction", txn); code != http.StatusOK {
		t.Fatalf("transaction during push maintenance: %d %s", code, out)
	}

	maintExpectPushOff(t, srv)
	// Turning it off drains the spool into the queue.
	testkit.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		code, out := doURL(t, "GET", srv.URL+"/api/v1/pop/queue/"+q+"?batch=10&autoAck=true", nil)
		if code != http.StatusOK || !strings.Contains(string(out), `"transactionId":"during"`) {
			return fmt.Errorf("pop after push maintenance: %d %s", code, out)
		}
		return nil
	})
	// The drain commits the spooled item before it counts it written, so a pop can see the
	// message while the spool still reports it pending for a moment.
	testkit.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		if code, out := doURL(t, "GET", srv.URL+maintPath, nil); code != http.StatusOK || !admSameJSON(out, []byte(maintOffJSON)) {
			return fmt.Errorf("GET %s: %d %s\nwant 200 %s", maintPath, code, out, maintOffJSON)
		}
		return nil
	})
	promGauge(t, srv, "queen_maintenance_mode_enabled", 0)
	if code, out := doURL(t, "POST", srv.URL+"/api/v1/push", push); code != http.StatusCreated {
		t.Fatalf("push after push maintenance: %d %s", code, out)
	}
}

// Pop maintenance: the routes' exact answers, /health and the gauge follow the flag, and every
// pop answers 204 at once — a long poll too — while a message waits; once off it is delivered.
func TestPopMaintenanceRoutes(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, testDSN, testserver.Options{Schema: maintSchema(t)})
	q := testQueueName(t)
	maintExpect(t, srv, "GET", popMaintPath, nil, `{"popMaintenanceMode":false,"message":"Pop maintenance mode is OFF. Normal operation."}`)
	maintExpect(t, srv, "POST", popMaintPath, obj{"enabled": true},
		`{"popMaintenanceMode":true,"message":"Pop maintenance mode ENABLED. All POP operations will return empty arrays."}`)
	maintExpect(t, srv, "GET", popMaintPath, nil, `{"popMaintenanceMode":true,"message":"Pop maintenance mode is ON. All POP operations return empty arrays."}`)
	if push, pop := healthFlags(t, srv); push || !pop {
		t.Fatalf("/health during pop maintenance: maintenanceMode %v, popMaintenanceMode %v", push, pop)
	}
	promGauge(t, srv, "queen_pop_maintenance_mode_enabled", 1)
	promGauge(t, srv, "queen_maintenance_mode_enabled", 0)

	if code, out := doURL(t, "POST", srv.URL+"/api/v1/push", obj{"items": []obj{{"queue": q, "payload": 1, "transactionId": "k"}}}); code != http.StatusCreated {
		t.Fatalf("push during pop maintenance: %d %s", code, out)
	}
	for _, path := range []string{"/api/v1/pop/queue/" + q, "/api/v1/pop/queue/" + q + "?wait=true&timeout=60000",
		"/api/v1/pop/queue/" + q + "/partition/Default", "/api/v1/pop?namespace=x&wait=true&timeout=60000"} {
		if code, out := doURL(t, "GET", srv.URL+path, nil); code != http.StatusNoContent || len(out) != 0 {
			t.Fatalf("GET %s during pop maintenance: %d %s, want 204", path, code, out)
		}
	}

	maintExpect(t, srv, "POST", popMaintPath, obj{"enabled": false},
		`{"popMaintenanceMode":false,"message":"Pop maintenance mode DISABLED. Normal operation resumed."}`)
	promGauge(t, srv, "queen_pop_maintenance_mode_enabled", 0)
	if code, out := doURL(t, "GET", srv.URL+"/api/v1/pop/queue/"+q, nil); code != http.StatusOK {
		t.Fatalf("pop after pop maintenance: %d %s", code, out)
	}
}

// A POST needs a boolean enabled; anything else is 400 and changes nothing.
func TestMaintenanceRequiresEnabled(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, testDSN, testserver.Options{Schema: maintSchema(t)})
	for _, path := range []string{maintPath, popMaintPath} {
		for _, body := range []any{`{}`, `{"enabled":"true"}`, `{"enabled":1}`, `{"enabled":null}`, `[]`, `true`, `{"Enabled":true}`} {
			code, out := doURL(t, "POST", srv.URL+path, body)
			if code != http.StatusBadRequest || strings.TrimSpace(string(out)) != `{"error":"enabled (boolean) is required"}` {
				t.Errorf("POST %s %s: %d %s", path, body, code, out)
			}
		}
		if code, out := doURL(t, "POST", srv.URL+path, `{"enabled":`); code != http.StatusBadRequest || !strings.Contains(string(out), "Invalid JSON") {
			t.Errorf("POST %s with broken JSON: %d %s", path, code, out)
		}
		if code, out := doURL(t, "POST", srv.URL+path, nil); code != http.StatusBadRequest || !strings.Contains(string(out), "Empty request body") {
			t.Errorf("POST %s without a body: %d %s", path, code, out)
		}
	}
	maintExpect(t, srv, "GET", maintPath, nil, maintOffJSON)
}

// With authentication on, the four routes are admin level, and a change records the token's sub.
func TestMaintenanceRoutesAreAdminLevel(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, testDSN, testserver.Options{Schema: maintSchema(t), JWTSecret: authSecret})
	routes := []struct {
		method, path string
		body         any
	}{{"GET", maintPath, nil}, {"POST", maintPath, obj{"enabled": false}}, {"GET", popMaintPath, nil}, {"POST", popMaintPath, obj{"enabled": false}}}
	for _, rt := range routes {
		resp, out := authSend(t, rt.method, srv.URL+rt.path, nil, rt.body)
		authWant(t, resp, out, http.StatusUnauthorized, "")
		for _, role := range []string{"read-only", "read-write"} {
			resp, out := authSend(t, rt.method, srv.URL+rt.path, bearer(authRole(t, "u-"+role, role)), rt.body)
			authWant(t, resp, out, http.StatusForbidden, "Insufficient permissions")
		}
		resp, out = authSend(t, rt.method, srv.URL+rt.path, bearer(authRole(t, "the-admin", "admin")), rt.body)
		authWant(t, resp, out, http.StatusOK, "")
	}
	m, err := srv.Store.MaintenanceModes(context.Background())
	if err != nil || m.ChangedBy == nil || *m.ChangedBy != "the-admin" || m.ChangedOn != "test" || m.Version != 2 {
		t.Fatalf("stored change: %+v, %v; want by the-admin on test, version 2", m, err)
	}
}

// Without a database the GET routes answer 200 with the last known values (dbHealthy false)
// and the POST routes 503 (docs/api/operations.md §4.3).
func TestMaintenanceWithoutDatabase(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, refusedDSN, testserver.Options{})
	maintExpect(t, srv, "GET", maintPath, nil, strings.Replace(maintOffJSON, `"dbHealthy":true`, `"dbHealthy":false`, 1))
	maintExpect(t, srv, "GET", popMaintPath, nil, `{"popMaintenanceMode":false,"message":"Pop maintenance mode is OFF. Normal operation."}`)
	for _, path := range []string{maintPath, popMaintPath} {
		code, out := doURL(t, "POST", srv.URL+path, obj{"enabled": true})
		if code != http.StatusServiceUnavailable || strings.TrimSpace(string(out)) != `{"error":"Database unavailable"}` {
			t.Errorf("POST %s without a database: %d %s", path, code, out)
		}
	}
}

// Two instances on one database: a change made on one reaches the other within the
// reference's 1 s (the bound below leaves room for a loaded machine), and pop maintenance
// answers a pop parked on the OTHER instance, whose own fallback poll is an hour away.
func TestMaintenanceReachesOtherInstance(t *testing.T) {
	t.Parallel()
	schema := maintSchema(t)
	a := testserver.Start(t, testDSN, testserver.Options{Schema: schema})
	b := testserver.Start(t, testDSN, testserver.Options{Schema: schema, PollInitial: time.Hour, PollMax: time.Hour})
	q := testQueueName(t)
	const bound = 3 * time.Second

	parked := make(chan int, 1)
	go func() {
		resp, _, err := roundTrip(context.Background(), http.DefaultClient, "GET", b.URL+"/api/v1/pop/queue/"+q+"?wait=true&timeout=60000", nil, nil)
		if err != nil {
			parked <- -1
			return
		}
		parked <- resp.StatusCode
	}()
	testkit.Eventually(t, time.Minute, 5*time.Millisecond, func() error {
		if n := b.Broker.Hub().Parked(); n != 1 {
			return fmt.Errorf("%d parked pops on b", n)
		}
		return nil
	})
	maintExpect(t, a, "POST", popMaintPath, obj{"enabled": true},
		`{"popMaintenanceMode":true,"message":"Pop maintenance mode ENABLED. All POP operations will return empty arrays."}`)
	testkit.Eventually(t, bound, 5*time.Millisecond, func() error {
		select {
		case code := <-parked:
			if code != http.StatusNoContent {
				t.Fatalf("the parked pop on b answered %d, want 204", code)
			}
			return nil
		default:
			return errors.New("the pop parked on b is still parked")
		}
	})
	if _, pop := healthFlags(t, b); !pop {
		t.Fatal("b's /health does not show pop maintenance")
	}

	maintExpect(t, a, "POST", maintPath, obj{"enabled": true}, pushOnAnswer)
	testkit.Eventually(t, bound, 5*time.Millisecond, func() error {
		if push, _ := healthFlags(t, b); !push {
			return errors.New("b does not know push maintenance is on")
		}
		return nil
	})
	if code, out := doURL(t, "POST", b.URL+"/api/v1/push", obj{"items": []obj{{"queue": q, "payload": 1}}}); code != http.StatusCreated ||
		!strings.Contains(string(out), `"status":"buffered"`) {
		t.Fatalf("push on b during push maintenance: %d %s, want 201 buffered", code, out)
	}

	maintExpectPushOff(t, b)
	maintExpect(t, b, "POST", popMaintPath, obj{"enabled": false},
		`{"popMaintenanceMode":false,"message":"Pop maintenance mode DISABLED. Normal operation resumed."}`)
	testkit.Eventually(t, bound, 5*time.Millisecond, func() error {
		if push, pop := healthFlags(t, a); push || pop {
			return fmt.Errorf("a still knows push %v, pop %v", push, pop)
		}
		return nil
	})
}
