package sdktest

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	queen "github.com/queen-go/queen/client"
)

// fastRetry keeps retry tests quick while still exercising the backoff path. fastRetry and
// flaky are copies of the helpers of the client module's own transport tests.
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

func TestFailoverAcrossURLs(t *testing.T) {
	t.Parallel()
	down, downHits := flaky(t, 1000, http.StatusServiceUnavailable)
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close() // connection refused
	c, err := queen.New(dead.URL, queen.WithURLs(down.URL, brokerURL), queen.WithRetry(queen.RetryPolicy{}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	// Retries are off, yet each URL gets its try: failing over is not retrying.
	q := c.Queue(queueName(t))
	mustPush(t, q, map[string]int{"n": 1})
	if downHits.Load() != 1 {
		t.Fatalf("the 503 instance was tried %d times, want 1", downHits.Load())
	}
	// The working instance is preferred from now on: the others are not probed again.
	b, err := q.Pop(ctx, queen.PopOptions{Wait: wait})
	if err != nil || len(b.Messages) != 1 {
		t.Fatalf("Pop after failover: %v %+v", err, b)
	}
	if downHits.Load() != 1 {
		t.Fatalf("a failed-over client went back to the 503 instance")
	}
	if got := c.URLs(); len(got) != 3 || got[2] != brokerURL {
		t.Fatalf("URLs = %v", got)
	}
}
