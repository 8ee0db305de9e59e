package sdktest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	queen "github.com/queen-go/queen/client"
	"github.com/queen-go/queen/internal/testkit"
)

// wait is the long poll of test pops that expect messages: a pop may come back empty when a
// partition is momentarily locked (claims skip contested rows), and a long poll retries.
const wait = 5 * time.Second

// newClient returns a client of the shared broker.
func newClient(t testing.TB, opts ...queen.Option) *queen.Client {
	t.Helper()
	c, err := queen.New(brokerURL, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9]+`)

// queueName is a queue name no other test uses.
func queueName(t testing.TB) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return strings.ToLower(unsafeName.ReplaceAllString(t.Name(), "-")) + "-" + hex.EncodeToString(b[:])
}

// testCtx is bounded, so a hung broker fails the test instead of the whole run.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// createQueue configures a fresh queue and returns it.
func createQueue(t testing.TB, c *queen.Client, opts ...queen.QueueOption) queen.Queue {
	t.Helper()
	q := c.Queue(queueName(t))
	if _, err := q.Create(testCtx(t), opts...); err != nil {
		t.Fatalf("Create: %v", err)
	}
	return q
}

// mustPush pushes payloads and fails unless every item was queued.
func mustPush(t testing.TB, q queen.Queue, payloads ...any) queen.PushResults {
	t.Helper()
	res, err := q.Push(testCtx(t), payloads...)
	if err != nil {
		t.Fatalf("Push: %v", err)
	}
	if n := res.Count(queen.PushQueued); n != len(payloads) {
		t.Fatalf("Push: %d of %d queued: %+v", n, len(payloads), res)
	}
	return res
}

// skipIfUnsupported skips a test of a route the broker does not have yet (spec: an unbuilt
// route answers 404 Not found).
func skipIfUnsupported(t *testing.T, err error, route string) {
	t.Helper()
	if errors.Is(err, queen.ErrUnsupported) {
		t.Skipf("%s answers 404 Not found: the route is not on this broker yet (admin API issue)", route)
	}
}

// recorder is an http.RoundTripper that keeps the body of every request to one path.
type recorder struct {
	path string
	mu   sync.Mutex
	reqs [][]byte
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Path == r.path && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		r.mu.Lock()
		r.reqs = append(r.reqs, body)
		r.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(req)
}

// acks decodes the recorded /api/v1/ack bodies.
func (r *recorder) acks(t testing.TB) []map[string]any {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]map[string]any, 0, len(r.reqs))
	for _, b := range r.reqs {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("recorded ack: %v", err)
		}
		out = append(out, m)
	}
	return out
}

// payloadOf decodes the {"n": …} test payload.
func payloadOf(t testing.TB, m *queen.Message) int {
	t.Helper()
	var p struct{ N int }
	if err := m.Decode(&p); err != nil {
		t.Fatalf("decode %s: %v", m.Data, err)
	}
	return p.N
}

// numbered returns the payloads {"n":0} … {"n":count-1}.
func numbered(count int) []any {
	out := make([]any, count)
	for i := range out {
		out[i] = map[string]int{"n": i}
	}
	return out
}

// proxy forwards one request to target, for fake servers that misbehave only sometimes.
func proxy(w http.ResponseWriter, r *http.Request, target string) {
	u, _ := url.Parse(target)
	httputil.NewSingleHostReverseProxy(u).ServeHTTP(w, r)
}

// refreshStats recomputes the counters through the admin route (the queue detail's counters
// come from the stats job, docs/api/admin-api.md "Freshness"), retrying while a parallel
// test's refresh holds the lock.
func refreshStats(t testing.TB) {
	t.Helper()
	testkit.Eventually(t, time.Minute, 20*time.Millisecond, func() error {
		resp, err := http.Post(brokerURL+"/api/v1/stats/refresh", "application/json", nil)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || bytes.Contains(body, []byte("skipped")) {
			return fmt.Errorf("stats refresh: %d %s", resp.StatusCode, body)
		}
		return nil
	})
}
