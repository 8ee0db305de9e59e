package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// An outage is logged once when it begins and once when it ends, with the number of requests
// answered 503/500 meanwhile; repeated failures, client cancellations and requests the database
// did not fail add no line.
func TestOutageIsLoggedOnceWithItsCount(t *testing.T) {
	var buf bytes.Buffer
	tr := newOutageTracker(slog.New(slog.NewTextHandler(&buf, nil)))
	now := time.Unix(0, 0)
	tr.now = func() time.Time { return now }
	s := &Store{outage: tr}
	down := fmt.Errorf("%w: dial tcp: i/o timeout", mq.ErrUnavailable)

	tr.observe(context.Background(), nil) // healthy: nothing to say
	for range 5 {
		ctx := Request(context.Background())
		tr.observe(ctx, down)
		s.Answered(ctx)
	}
	ok := Request(context.Background())
	tr.observe(ok, context.Canceled) // a client that went away says nothing about the database
	s.Answered(ok)                   // and was not failed by it
	now = now.Add(12 * time.Second)
	tr.observe(context.Background(), errors.New("ERROR: relation does not exist")) // the database answered
	tr.observe(context.Background(), nil)

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d log lines, want 2:\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[0], "database unavailable") || !strings.Contains(lines[0], "i/o timeout") {
		t.Errorf("begin line: %s", lines[0])
	}
	if !strings.Contains(lines[1], "database available again") || !strings.Contains(lines[1], "outage=12s") ||
		!strings.Contains(lines[1], "requests_failed=5") {
		t.Errorf("end line: %s", lines[1])
	}

	// A second outage counts from zero.
	buf.Reset()
	ctx := Request(context.Background())
	tr.observe(ctx, down)
	s.Answered(ctx)
	tr.observe(context.Background(), nil)
	if !strings.Contains(buf.String(), "requests_failed=1") {
		t.Errorf("second outage:\n%s", buf.String())
	}
}

// A request's waits share DB_CONNECTION_TIMEOUT from when it first waits, and its calls share
// DB_REQUEST_TIMEOUT from its first statement; waits after that end with the work deadline.
func TestBudgetSharesDeadlinesAcrossCalls(t *testing.T) {
	s := &Store{timeout: time.Second, requestTimeout: 10 * time.Second, bulkTimeout: 30 * time.Second}
	ctx := Request(context.Background())
	first := s.WaitDeadline(ctx)
	time.Sleep(10 * time.Millisecond)
	if again := s.WaitDeadline(ctx); !again.Equal(first) {
		t.Errorf("second wait ends %v, want the first's %v", again, first)
	}
	wctx, cancel := s.workContext(ctx)
	defer cancel()
	work, _ := wctx.Deadline()
	if d := time.Until(work); d < 9*time.Second || d > 10*time.Second {
		t.Errorf("work deadline in %v, want about 10s", d)
	}
	w2, cancel2 := s.workContext(ctx)
	defer cancel2()
	if d, _ := w2.Deadline(); !d.Equal(work) {
		t.Errorf("second call's work deadline %v, want the first's %v", d, work)
	}
	if d := time.Until(s.WaitDeadline(ctx)); d > time.Second {
		t.Errorf("a wait after the work started may last %v, want at most the connection timeout", d)
	}
	bctx, cancel3 := s.workContext(Bulk(context.Background()))
	defer cancel3()
	if d, _ := bctx.Deadline(); time.Until(d) < 29*time.Second {
		t.Errorf("bulk work deadline in %v, want about 30s", time.Until(d))
	}
}
