package httpapi_test

import (
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/internal/testserver"
)

// refusedDSN points at a port nobody listens on: every connection attempt is refused at once.
const refusedDSN = "postgres://postgres@127.0.0.1:1/x?connect_timeout=1&sslmode=disable"

// TestUnavailableDatabase checks docs/api/README.md §2.6 and docs/api/operations.md §4.3: with no database every
// data route answers 503 {"error":"Database unavailable"} promptly (valClient's timeout bounds
// each request), and /health answers 503 unhealthy. Validation still comes first. Two ways of
// being unavailable: the connection is refused, or it is accepted but the server never speaks,
// so only the connection timeout ends the wait.
func TestUnavailableDatabase(t *testing.T) {
	t.Run("refused", func(t *testing.T) { checkUnavailable(t, refusedDSN) })
	t.Run("silent", func(t *testing.T) { checkUnavailable(t, silentServerDSN(t)) })
}

// silentServerDSN starts a TCP listener that accepts connections and never answers, and
// returns a DSN pointing at it. Everything is closed when the test ends.
func silentServerDSN(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "postgres://postgres@" + ln.Addr().String() + "/x?sslmode=disable"
}

// checkUnavailable starts a broker over dsn and checks every route against it. The requests
// go out together, so that a database that only times out costs one connection timeout, not
// one per route.
func checkUnavailable(t *testing.T, dsn string) {
	t.Parallel()
	// The production deadlines: what this test is about (test servers default to generous ones).
	srv := testserver.Start(t, dsn, testserver.Options{DBConnectionTimeout: 2 * time.Second, DBRequestTimeout: 10 * time.Second})
	b := &bundle{t: t, srv: srv, queue: "q-unavailable"}
	pid, lease := uuid.NewString(), uuid.Must(uuid.NewV7()).String()
	ack := obj{"transactionId": "k", "partitionId": pid, "leaseId": lease}
	cases := []struct {
		name, method, path string
		body               any
	}{
		{"configure", "POST", "/api/v1/configure", obj{"queue": b.queue, "options": obj{"leaseTime": 5}}},
		// Spooled (docs/api/operations.md §4.1): 201 with buffered items.
		{"push", "POST", "/api/v1/push", obj{"items": []obj{{"queue": b.queue, "payload": 1}}}},
		{"pop queue", "GET", "/api/v1/pop/queue/" + b.queue, nil},
		{"pop partition", "GET", "/api/v1/pop/queue/" + b.queue + "/partition/p", nil},
		{"pop namespace", "GET", "/api/v1/pop?namespace=" + b.queue, nil},
		{"pop waiting", "GET", "/api/v1/pop/queue/" + b.queue + "?wait=true&timeout=60000", nil},
		{"ack", "POST", "/api/v1/ack", ack},
		{"ack not a uuid", "POST", "/api/v1/ack", obj{"transactionId": "k", "partitionId": "nope"}},
		{"ack batch", "POST", "/api/v1/ack/batch", obj{"consumerGroup": "g", "acknowledgments": []obj{ack, ack}}},
		{"lease extend", "POST", "/api/v1/lease/" + lease + "/extend", obj{"seconds": 30}},
		{"lease extend no body", "POST", "/api/v1/lease/" + lease + "/extend", nil},
		{"health", "GET", "/health", nil},
	}
	type answer struct {
		r   valResp
		err error
	}
	answers := make([]answer, len(cases))
	var wg sync.WaitGroup
	for i, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := valRoundTrip(c.method, b.srv.URL+c.path, c.body)
			answers[i] = answer{r, err}
		}()
	}
	wg.Wait()

	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := answers[i].r, answers[i].err
			if err != nil {
				t.Fatalf("%s %s: %v", c.method, c.path, err)
			}
			if c.name == "push" {
				items := decode[[]map[string]any](t, r.body)
				if r.code != http.StatusCreated || len(items) != 1 || items[0]["status"] != "buffered" ||
					items[0]["queue"] != b.queue || items[0]["partition"] != "Default" || items[0]["transactionId"] == "" {
					t.Fatalf("push: %d %s, want 201 buffered", r.code, r.body)
				}
				return
			}
			if c.name != "health" {
				valWantError(t, r, http.StatusServiceUnavailable, "Database unavailable")
				return
			}
			if r.code != http.StatusServiceUnavailable {
				t.Fatalf("health: %d %s", r.code, r.body)
			}
			h := decode[map[string]any](t, r.body)
			if h["status"] != "unhealthy" || h["database"] != "disconnected" {
				t.Fatalf("health body %s", r.body)
			}
		})
	}

	// Requests that fail validation never reach the database: their 400 stands, and the
	// empty batches answer without it.
	t.Run("validation first", func(t *testing.T) {
		valWantError(t, valSend(t, "POST", b.srv.URL+"/api/v1/push", obj{"items": []obj{{"queue": 1}}}),
			http.StatusBadRequest, "Queue must be a string")
		valWantError(t, valSend(t, "POST", b.srv.URL+"/api/v1/configure", obj{}),
			http.StatusBadRequest, "queue is required")
		valWantError(t, valSend(t, "GET", b.srv.URL+"/api/v1/pop/queue/q?subscriptionMode=x", nil),
			http.StatusBadRequest, "Invalid subscriptionMode: x")
		valWantError(t, valSend(t, "POST", b.srv.URL+"/api/v1/lease/"+lease+"/extend", `{"seconds":0}`),
			http.StatusBadRequest, "seconds must be a positive integer")
		r := valSend(t, "POST", b.srv.URL+"/api/v1/push", `{"items":[]}`)
		if r.code != http.StatusCreated || string(r.body) != "[]" {
			t.Fatalf("empty push: %d %s", r.code, r.body)
		}
		r = valSend(t, "POST", b.srv.URL+"/api/v1/ack/batch", `{"acknowledgments":[]}`)
		if r.code != http.StatusOK || string(r.body) != "[]" {
			t.Fatalf("empty ack batch: %d %s", r.code, r.body)
		}
	})
}
