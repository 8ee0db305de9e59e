package sdktest

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	queen "github.com/queen-go/queen/client"
)

// ackRecorder records both ack routes.
type ackRecorder struct {
	single, batch recorder
}

func (a *ackRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path == a.batch.path {
		return a.batch.RoundTrip(r)
	}
	return a.single.RoundTrip(r)
}

func TestGracefulStopMidBatchLosesNothingAndAcksOnce(t *testing.T) {
	t.Parallel()
	rec := &ackRecorder{single: recorder{path: "/api/v1/ack"}, batch: recorder{path: "/api/v1/ack/batch"}}
	c := newClient(t, queen.WithHTTPClient(&http.Client{Transport: rec}))
	q := createQueue(t, c) // default 300 s lease: a redelivery now can only come from the release
	mustPush(t, q, numbered(6)...)

	ctx, stop := context.WithCancel(testCtx(t))
	var first seen
	start := time.Now()
	err := q.Consume(ctx, func(hctx context.Context, m *queen.Message) error {
		if first.add(t, m) == 2 {
			stop() // the operator hits Ctrl-C while message 2 is in hand
			// Real elapsed time, not an ordering: the handler keeps working after the stop.
			time.Sleep(200 * time.Millisecond)
			if hctx.Err() != nil {
				t.Error("the handler's context was cancelled by the stop request")
			}
		}
		return nil
	}, queen.ConsumeOptions{BatchSize: 6, OnError: failOnError(t)})
	if err != nil {
		t.Fatalf("Consume after stop: %v", err)
	}
	if got := first.list(); !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("first consumer handled %v, want the messages up to the one in hand", got)
	}

	// The rest is delivered again at once (released, not left to expire) to the next consumer.
	var second seen
	err = q.Consume(testCtx(t), func(ctx context.Context, m *queen.Message) error {
		second.add(t, m)
		return nil
	}, queen.ConsumeOptions{BatchSize: 6, IdleTimeout: 500 * time.Millisecond, OnError: failOnError(t)})
	if err != nil {
		t.Fatal(err)
	}
	if got := second.list(); !slices.Equal(got, []int{3, 4, 5}) {
		t.Fatalf("second consumer handled %v, want 3 4 5", got)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatal("the rest came back by lease expiry, not by release")
	}

	// Each message got exactly one completed ack; the only other ack is the release (retry)
	// of message 3, sent once.
	completed := map[string]int{}
	for _, a := range rec.single.acks(t) {
		if a["status"] != "completed" {
			t.Fatalf("unexpected single ack %v", a)
		}
		completed[a["transactionId"].(string)]++
	}
	for _, m := range append(first.msgs, second.msgs...) {
		if completed[m.TransactionID] != 1 {
			t.Fatalf("message %d acked completed %d times", payloadOf(t, m), completed[m.TransactionID])
		}
	}
	batches := rec.batch.acks(t)
	if len(batches) != 1 {
		t.Fatalf("release requests: %v", batches)
	}
	rel := batches[0]["acknowledgments"].([]any)
	if len(rel) != 1 || rel[0].(map[string]any)["status"] != "retry" ||
		rel[0].(map[string]any)["transactionId"] != second.msgs[0].TransactionID {
		t.Fatalf("release: %v", rel)
	}
}

func TestConsumeIdleTimeout(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	start := time.Now()
	err := c.Queue(queueName(t)).Consume(testCtx(t), func(context.Context, *queen.Message) error {
		t.Error("handler called on an empty queue")
		return nil
	}, queen.ConsumeOptions{IdleTimeout: 300 * time.Millisecond, Concurrency: 3})
	if err != nil || time.Since(start) > 3*time.Second {
		t.Fatalf("idle consumer: %v after %s", err, time.Since(start))
	}
}

func TestConsumeConcurrencyKeepsPartitionOrder(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	q := createQueue(t, c)
	for p := range 4 {
		payloads := make([]any, 5)
		for i := range payloads {
			payloads[i] = map[string]int{"n": p*100 + i}
		}
		mustPush(t, q.Partition(string(rune('a'+p))), payloads...)
	}
	var s seen
	var running, peak atomic.Int32
	err := q.Consume(testCtx(t), func(ctx context.Context, m *queen.Message) error {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		s.add(t, m)
		time.Sleep(30 * time.Millisecond) // a handler's work, so handlers overlap; not an ordering
		running.Add(-1)
		return nil
	}, queen.ConsumeOptions{Concurrency: 4, BatchSize: 2, Limit: 20, OnError: failOnError(t)})
	if err != nil {
		t.Fatal(err)
	}
	got := s.list()
	if len(got) != 20 {
		t.Fatalf("handled %d messages: %v", len(got), got)
	}
	last := map[int]int{}
	for _, n := range got {
		p := n / 100
		if prev, ok := last[p]; ok && n <= prev {
			t.Fatalf("partition %d out of order: %v", p, got)
		}
		last[p] = n
	}
	if peak.Load() < 2 {
		t.Fatalf("never more than %d handler at a time", peak.Load())
	}
}

func TestConsumeLimitAndAutoAck(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	q := createQueue(t, c)
	mustPush(t, q, numbered(5)...)
	var s seen
	h := func(ctx context.Context, m *queen.Message) error {
		s.add(t, m)
		return errors.New("reported, not acked")
	}
	var reported atomic.Int32
	err := q.Consume(testCtx(t), h, queen.ConsumeOptions{AutoAck: true, BatchSize: 10, Limit: 3,
		OnError: func(error) { reported.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	// The limit is reserved before popping: exactly 3 were delivered, and consumed by autoAck.
	if got := s.list(); !slices.Equal(got, []int{0, 1, 2}) || reported.Load() != 3 {
		t.Fatalf("handled %v, reported %d", got, reported.Load())
	}
	b, _ := q.Pop(testCtx(t), queen.PopOptions{Batch: 10, Wait: wait})
	if len(b.Messages) != 2 || payloadOf(t, b.Messages[0]) != 3 {
		t.Fatalf("left: %+v", b.Messages)
	}
}

func TestConsumeStopsOnClientErrors(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	err := c.Queue(queueName(t)).Consume(testCtx(t), func(context.Context, *queen.Message) error { return nil },
		queen.ConsumeOptions{ConsumerGroup: "g", SubscriptionMode: "sideways"})
	var he *queen.HTTPError
	if !errors.As(err, &he) || he.StatusCode != 400 {
		t.Fatalf("Consume with a bad option: %v", err)
	}
	if err := c.Queue("").Consume(testCtx(t), nil, queen.ConsumeOptions{}); err == nil {
		t.Fatal("Consume without queue and handler accepted")
	}
}
