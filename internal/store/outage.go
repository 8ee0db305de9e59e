package store

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// outageTracker logs a database outage once when it begins and once when it ends, with the
// number of requests answered 503 (500 on the transaction route) meanwhile
// (docs/api/operations.md §9.1). During an outage every request fails the same way; a line
// per request would bury everything else in the log, and the driver's text of the first
// failure says all there is to say.
type outageTracker struct {
	log *slog.Logger
	now func() time.Time // runtime clock; tests replace it

	mu       sync.Mutex
	down     bool
	since    time.Time
	answered int64 // requests answered 503/500 since the outage began
	// What GET /api/v1/system/health reports: the public /health says only connected or
	// disconnected, so the driver's text is kept here for operators (docs/api/admin-api.md §10.2).
	lastOK, lastErrAt time.Time
	lastErr           string
}

func newOutageTracker(log *slog.Logger) *outageTracker {
	if log == nil {
		log = slog.Default()
	}
	return &outageTracker{log: log.With("component", "store"), now: time.Now}
}

// observe records the outcome of one database call: ErrUnavailable begins an outage (and
// marks the request as failed by it); any answer from the database, an error included, ends
// one. A call the client abandoned (context.Canceled) says nothing about the database.
func (t *outageTracker) observe(ctx context.Context, err error) {
	switch {
	case errors.Is(err, mq.ErrUnavailable):
		markUnavailable(ctx)
		t.failed(err)
	case err == nil || !errors.Is(err, context.Canceled):
		t.succeeded()
	}
}

// failed notes an unavailable database; the first failure of an outage is logged.
func (t *outageTracker) failed(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lastErr, t.lastErrAt = err.Error(), t.now()
	if t.down {
		return
	}
	t.down, t.since, t.answered = true, t.lastErrAt, 0
	t.log.Error("database unavailable: answering 503 (500 on transactions) until it is back", "err", err)
}

func (t *outageTracker) succeeded() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lastOK = t.now()
	if !t.down {
		return
	}
	t.down = false
	t.log.Info("database available again", "outage", t.now().Sub(t.since).Round(time.Millisecond),
		"requests_failed", t.answered)
}

// answeredOne counts one request answered 503/500 because of the database.
func (t *outageTracker) answeredOne() {
	t.mu.Lock()
	t.answered++
	t.mu.Unlock()
}

// Answered is called once a request is done: when one of its calls found the database
// unavailable (so it answered 503, or 500 on the transaction route), it counts towards the
// outage's summary line. ctx is the context given to Request.
func (s *Store) Answered(ctx context.Context) {
	if wasUnavailable(ctx) {
		s.outage.answeredOne()
	}
}
