package queen_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	queen "github.com/queen-go/queen/client"
)

// fastRetry keeps retry tests quick while still exercising the backoff path.
var fastRetry = queen.WithRetry(queen.RetryPolicy{MaxRetries: 3, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond})

// flaky answers status for the first fails requests, then a valid health body.
func flaky(t *testing.T, fails int, status int) (*httptest.Server, *atomic.Int32) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if int(hits.Add(1)) <= fails {
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"error":"boom"}`))
			return
		}
		_, _ = w.Write([]byte(`{"status":"healthy","database":"connected"}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// queuesCall is an ordinary retried call against a fake server.
func queuesCall(c *queen.Client) error {
	_, err := c.Queues(context.Background())
	return err
}

// wantSuccessAfter checks that a call succeeds, after exactly attempts requests.
func wantSuccessAfter(t *testing.T, c *queen.Client, hits *atomic.Int32, attempts int32) {
	t.Helper()
	if err := queuesCall(c); err != nil {
		t.Fatalf("call: %v", err)
	}
	if got := hits.Load(); got != attempts {
		t.Fatalf("attempts = %d, want %d", got, attempts)
	}
}

func TestRetriesOn5xxUntilSuccess(t *testing.T) {
	t.Parallel()
	srv, hits := flaky(t, 2, http.StatusServiceUnavailable)
	c, _ := queen.New(srv.URL, fastRetry)
	wantSuccessAfter(t, c, hits, 3)
}

func TestRetriesGiveUpWithTheLastAnswer(t *testing.T) {
	t.Parallel()
	srv, hits := flaky(t, 100, http.StatusInternalServerError)
	c, _ := queen.New(srv.URL, fastRetry)
	err := queuesCall(c)
	var he *queen.HTTPError
	if !errors.As(err, &he) || he.StatusCode != 500 || he.Message != "boom" || !he.Temporary() {
		t.Fatalf("err = %v, want the 500 HTTPError", err)
	}
	if got := hits.Load(); got != 4 {
		t.Fatalf("attempts = %d, want 1 + 3 retries", got)
	}
}

func TestNeverRetries4xx(t *testing.T) {
	t.Parallel()
	for _, status := range []int{400, 401, 403, 404, 409, 413, 429} {
		srv, hits := flaky(t, 100, status)
		c, _ := queen.New(srv.URL, fastRetry)
		err := queuesCall(c)
		var he *queen.HTTPError
		if !errors.As(err, &he) || he.StatusCode != status {
			t.Fatalf("status %d: err = %v", status, err)
		}
		if got := hits.Load(); got != 1 {
			t.Fatalf("status %d: attempts = %d, want 1", status, got)
		}
	}
}

func TestSentinelsMatchStatus(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status int
		body   string
		want   error
		not    error
	}{
		{404, `{"error":"Not found"}`, queen.ErrUnsupported, nil},
		{404, `{"error":"Queue not found"}`, queen.ErrNotFound, queen.ErrUnsupported},
		{401, `{"error":"Authentication required"}`, queen.ErrUnauthorized, nil},
		{403, `{"error":"Insufficient permissions"}`, queen.ErrForbidden, nil},
	}
	for _, tc := range cases {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(tc.status)
			_, _ = w.Write([]byte(tc.body))
		}))
		c, _ := queen.New(srv.URL)
		err := queuesCall(c)
		srv.Close()
		if !errors.Is(err, tc.want) || (tc.not != nil && errors.Is(err, tc.not)) {
			t.Errorf("%d %s: err = %v, want %v and not %v", tc.status, tc.body, err, tc.want, tc.not)
		}
	}
}

func TestRetriesNetworkErrors(t *testing.T) {
	t.Parallel()
	// A server that hangs up without answering the first two requests.
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) <= 2 {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		_, _ = w.Write([]byte(`{"queues":[]}`))
	}))
	t.Cleanup(srv.Close)
	c, _ := queen.New(srv.URL, fastRetry)
	wantSuccessAfter(t, c, &hits, 3)
}

func TestPerAttemptTimeoutIsRetried(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			<-r.Context().Done() // never answers the first attempt
			return
		}
		_, _ = w.Write([]byte(`{"queues":[]}`))
	}))
	t.Cleanup(srv.Close)
	c, _ := queen.New(srv.URL, fastRetry, queen.WithTimeout(100*time.Millisecond))
	if err := queuesCall(c); err != nil {
		t.Fatalf("call: %v", err)
	}
}

func TestContextCancelStopsRetrying(t *testing.T) {
	t.Parallel()
	srv, hits := flaky(t, 100, http.StatusServiceUnavailable)
	c, _ := queen.New(srv.URL, queen.WithRetry(queen.RetryPolicy{MaxRetries: 50, BaseDelay: 50 * time.Millisecond, MaxDelay: time.Second}))
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Millisecond)
	defer cancel()
	_, err := c.Queues(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context's", err)
	}
	if hits.Load() > 5 {
		t.Fatalf("kept retrying after the context ended: %d attempts", hits.Load())
	}
}

func TestCommaSeparatedURLsAndHeaders(t *testing.T) {
	t.Parallel()
	var auth, custom atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		custom.Store(r.Header.Get("X-Tenant"))
		_, _ = w.Write([]byte(`{"queues":[]}`))
	}))
	t.Cleanup(srv.Close)
	c, err := queen.New(srv.URL+"/, "+srv.URL, queen.WithBearerToken("tok"), queen.WithHeader("X-Tenant", "acme"),
		queen.WithHTTPClient(&http.Client{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := queuesCall(c); err != nil {
		t.Fatal(err)
	}
	if auth.Load() != "Bearer tok" || custom.Load() != "acme" {
		t.Fatalf("headers: Authorization=%v X-Tenant=%v", auth.Load(), custom.Load())
	}
	if len(c.URLs()) != 2 {
		t.Fatalf("URLs = %v", c.URLs())
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "localhost:6632", "ftp://x", "http://"} {
		if _, err := queen.New(u); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
	if _, err := queen.New("http://x", queen.WithRetry(queen.RetryPolicy{MaxRetries: -1})); err == nil {
		t.Error("negative retry policy accepted")
	}
	if _, err := queen.New("http://x", queen.WithHTTPClient(nil)); err == nil {
		t.Error("nil http client accepted")
	}
}
