package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// busyData is a data path whose every call is answered as load (mq.ErrBusy); the methods it
// does not override are never called by the routes under test.
type busyData struct{ DataPath }

var errBusy = errors.New("wrapped: " + mq.ErrBusy.Error())

func busy() error { return errors.Join(mq.ErrBusy, errBusy) }

func (busyData) Pop(context.Context, mq.PopRequest) (mq.PopResult, error) {
	return mq.PopResult{}, busy()
}
func (busyData) Ack(context.Context, []mq.AckItem) ([]mq.AckResult, error) { return nil, busy() }
func (busyData) Ping(context.Context) error                                { return busy() }
func (busyData) Transaction(context.Context, []mq.TxnEntry, []string, *string) (mq.TxnOutcome, error) {
	return mq.TxnOutcome{ID: "019a0000-0000-7000-8000-000000000001"}, busy()
}

// countingMetrics records the overload counter; the rest does nothing.
type countingMetrics struct {
	mu       sync.Mutex
	overload map[string]int
}

func (m *countingMetrics) Request()                                          {}
func (m *countingMetrics) ObserveRequest(string, string, int, time.Duration) {}
func (m *countingMetrics) Snapshot() mq.InstanceMetrics                      { return mq.InstanceMetrics{} }
func (m *countingMetrics) Handler() http.Handler                             { return http.NotFoundHandler() }
func (m *countingMetrics) Flush(context.Context) error                       { return nil }
func (m *countingMetrics) Overload(route string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.overload[route]++
}

// Load is not an outage on the wire (docs/api/operations.md §9.7): a call answered mq.ErrBusy
// gets 503 {"error":"Server busy"} with Retry-After: 1, the transaction route 500 with
// "Request timed out", /health stays 200; each such request counts once in the overload
// counter under its route's pattern, and a request the store did not mark is not counted.
func TestBusyAnswersAreLoadNotOutage(t *testing.T) {
	m := &countingMetrics{overload: map[string]int{}}
	marked := func(ctx context.Context) bool { return ctx.Value(markKey{}) != nil }
	h := New(busyData{}, nil, Config{Metrics: m, Overloaded: marked}, slog.New(slog.DiscardHandler))
	mark := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), markKey{}, true)))
		})
	}
	srv := httptest.NewServer(mark(h))
	defer srv.Close()
	send := func(method, path, body string) (*http.Response, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp, out
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/api/v1/pop/queue/q?wait=false", ""},
		{"POST", "/api/v1/ack", `{"transactionId":"t","partitionId":"00000000-0000-0000-0000-000000000000","leaseId":"l","status":"completed"}`},
	} {
		resp, body := send(c.method, c.path, c.body)
		if resp.StatusCode != 503 || body["error"] != "Server busy" || resp.Header.Get("Retry-After") != "1" {
			t.Errorf("%s %s: %d %v Retry-After %q, want 503 Server busy with Retry-After 1", c.method, c.path,
				resp.StatusCode, body, resp.Header.Get("Retry-After"))
		}
	}
	resp, body := send("POST", "/api/v1/transaction", `{"operations":[{"type":"push","items":[{"queue":"q","payload":{}}]}]}`)
	if resp.StatusCode != 500 || body["error"] != "Request timed out" || body["transactionId"] == nil {
		t.Errorf("transaction: %d %v, want 500 Request timed out with its transactionId", resp.StatusCode, body)
	}
	if resp, body := send("GET", "/health", ""); resp.StatusCode != 200 || body["status"] != "healthy" {
		t.Errorf("/health of a busy broker: %d %v, want 200 healthy", resp.StatusCode, body)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, route := range []string{"/api/v1/pop/queue/:queue", "/api/v1/ack", "/api/v1/transaction"} {
		if m.overload[route] != 1 {
			t.Errorf("overload counted %d times for %s, want once (counts %v)", m.overload[route], route, m.overload)
		}
	}
}

type markKey struct{}
