package queen_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	queen "github.com/queen-go/queen/client"
)

// offlineClient is a client of a server that fails the test on any request: for calls the
// client must reject before sending anything.
func offlineClient(t *testing.T) *queen.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("unexpected request %s %s: the client should have rejected the call", r.Method, r.URL.Path)
		w.WriteHeader(http.StatusTeapot)
	}))
	t.Cleanup(srv.Close)
	c, err := queen.New(srv.URL)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func TestQueueOptionValidation(t *testing.T) {
	t.Parallel()
	c := offlineClient(t)
	ctx := context.Background()
	for _, o := range []queen.QueueOption{queen.LeaseTime(-time.Second), queen.RetryLimit(-1), queen.RetryDelay(-1)} {
		if _, err := c.Queue("x").Configure(ctx, o); err == nil {
			t.Error("negative option accepted")
		}
	}
	if _, err := c.Queue("").Create(ctx); err == nil {
		t.Error("empty queue name accepted")
	}
}
