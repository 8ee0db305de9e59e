package httpapi_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testserver"
)

// stIsolated is setup on a schema of the test's own. The background jobs and the stats and
// metrics tables see every queue of their schema, so tests that run jobs, or that check
// cluster-wide totals, must not share a schema with parallel tests.
func stIsolated(t *testing.T, o testserver.Options) *bundle {
	t.Helper()
	t.Parallel()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	o.Schema = "st_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := testserver.Migrate(ctx, testDSN, o.Schema); err != nil {
		t.Fatalf("migrate %s: %v", o.Schema, err)
	}
	srv := testserver.Start(t, testDSN, o)
	if srv.Clock != nil {
		// Metrics are bucketed by minute: start 5 s into a minute, so that what a test does
		// within a few (fake) seconds lands in one bucket instead of straddling two.
		now := srv.Clock.Now()
		srv.Clock.Advance(now.Truncate(time.Minute).Add(time.Minute + 5*time.Second).Sub(now))
	}
	return &bundle{t: t, srv: srv, queue: testQueueName(t)}
}

// stRun runs one background job now and requires that this instance led it.
func (b *bundle) stRun(job string) {
	b.t.Helper()
	ran, err := b.srv.Jobs.RunOnce(context.Background(), job)
	if err != nil || !ran {
		b.t.Fatalf("run %s: ran=%v err=%v", job, ran, err)
	}
}

// stGet fetches path, requiring want, and decodes the body.
func stGet[T any](b *bundle, path string, want int) T {
	b.t.Helper()
	code, body := b.do("GET", path, nil)
	if code != want {
		b.t.Fatalf("GET %s: %d %s, want %d", path, code, body, want)
	}
	return decode[T](b.t, body)
}

// stStored lists the transactionIds of the test queue's stored messages, newest first.
func (b *bundle) stStored() []string {
	b.t.Helper()
	msgs := stGet[[]struct {
		TransactionID string `json:"transactionId"`
	}](b, "/api/v1/status/queues/"+b.queue+"/messages", http.StatusOK)
	out := []string{}
	for _, m := range msgs {
		out = append(out, m.TransactionID)
	}
	return out
}

// stRetention is one entry of GET /api/v1/analytics/retention.
type stRetention struct {
	Queue        string `json:"queue"`
	Partition    string `json:"partition"`
	Type         string `json:"type"`
	Removed      int64  `json:"removed"`
	Unconsumed   int64  `json:"unconsumed"`
	DeadLettered int64  `json:"deadLettered"`
}

// stHistory reads the test queue's retention history over the last two hours.
func (b *bundle) stHistory() []stRetention {
	b.t.Helper()
	from := b.srv.Clock.Now().Add(-2 * time.Hour).UTC().Format(time.RFC3339)
	out := stGet[struct {
		Runs []stRetention `json:"runs"`
	}](b, "/api/v1/analytics/retention?queue="+b.queue+"&from="+from, http.StatusOK)
	return out.Runs
}

// configure sets the test queue's options, requiring 200.
func (b *bundle) configure(opts obj) {
	b.t.Helper()
	if code, body := b.do("POST", "/api/v1/configure", obj{"queue": b.queue, "options": opts}); code != http.StatusOK {
		b.t.Fatalf("configure: %d %s", code, body)
	}
}
