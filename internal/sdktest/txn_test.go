package sdktest

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	queen "github.com/queen-go/queen/client"
)

// dropFirstAnswer forwards every request but loses the answer of the first transaction
// commit after the broker processed it: the outcome a retried commit has to cope with.
type dropFirstAnswer struct{ dropped atomic.Bool }

func (d *dropFirstAnswer) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && r.URL.Path == "/api/v1/transaction" && d.dropped.CompareAndSwap(false, true) {
		resp.Body.Close()
		return nil, errors.New("connection reset (simulated)")
	}
	return resp, err
}

func TestTransactionPipelineWithDerivedIDs(t *testing.T) {
	t.Parallel()
	drop := &dropFirstAnswer{}
	c := newClient(t, queen.WithHTTPClient(&http.Client{Transport: drop}), fastRetry)
	in := createQueue(t, c)
	out := createQueue(t, c)
	mustPush(t, in.Partition("customer-42"), numbered(5)...)

	var statuses [2]atomic.Int32
	ctx := testCtx(t)
	// The stage: each input is acked and its output pushed in one transaction, keyed by the
	// input so that any retry is harmless.
	err := in.Consume(ctx, func(ctx context.Context, m *queen.Message) error {
		n := payloadOf(t, m)
		res, err := c.Transaction().
			Ack(m, queen.AckCompleted).
			Queue(out.Name()).Partition(m.Partition).Push(queen.Item{
			Payload:       map[string]int{"n": n * 10},
			TransactionID: queen.DerivedTransactionID(m, "x10"),
		}).
			Commit(ctx)
		if err != nil {
			return err
		}
		statuses[res.Status].Add(1)
		return nil
	}, queen.ConsumeOptions{BatchSize: 5, Limit: 5, ManualAck: true, OnError: failOnError(t)})
	if err != nil {
		t.Fatal(err)
	}
	// The first commit's answer was lost; the client's retry met QDUP: already committed.
	if !drop.dropped.Load() || statuses[queen.TxnAlreadyCommitted].Load() != 1 || statuses[queen.TxnCommitted].Load() != 4 {
		t.Fatalf("committed %d, already committed %d", statuses[0].Load(), statuses[1].Load())
	}
	b, err := out.Pop(ctx, queen.PopOptions{Batch: 10, Wait: wait})
	if err != nil || len(b.Messages) != 5 {
		t.Fatalf("outputs: %v %+v", err, b)
	}
	for i, m := range b.Messages {
		if payloadOf(t, m) != i*10 || m.Partition != "customer-42" {
			t.Fatalf("output %d: %s in %s", i, m.Data, m.Partition)
		}
	}
	if left, _ := in.Pop(ctx, queen.PopOptions{}); !left.Empty() {
		t.Fatalf("inputs not acked by the transactions: %+v", left.Messages)
	}
}

func TestTransactionResultsAndRetryIsAlreadyCommitted(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := testCtx(t)
	in := createQueue(t, c)
	out := c.Queue(queueName(t))
	mustPush(t, in, map[string]int{"n": 1})
	b, _ := in.Pop(ctx, queen.PopOptions{Wait: wait})
	m := b.Messages[0]
	trace := "0198f2c1-0000-7000-8000-000000000001"
	tx := c.Transaction().
		Ack(m, queen.AckCompleted).
		Queue(out.Name()).Push(queen.Item{Payload: "a", TransactionID: queen.DerivedTransactionID(m, "a"), TraceID: trace}).
		Queue(out.Name()).Partition("p").Push("b", "c")
	res, err := tx.Commit(ctx)
	if err != nil || res.Status != queen.TxnCommitted || len(res.Results) != 4 || res.TransactionID == "" {
		t.Fatalf("commit: %v %+v", err, res)
	}
	if r := res.Results[0]; r.Type != "ack" || r.TransactionID != m.TransactionID || r.AlreadyCommitted {
		t.Fatalf("ack result %+v", r)
	}
	if r := res.Results[1]; r.Type != "push" || r.MessageID == "" || r.Queue != out.Name() ||
		r.TransactionID != queen.DerivedTransactionID(m, "a") {
		t.Fatalf("push result %+v", r)
	}
	// The same transaction again (a retry by the caller) is recognised, not rolled back.
	again, err := tx.Commit(ctx)
	if err != nil || again.Status != queen.TxnAlreadyCommitted || len(again.Results) != 0 || again.Reason == "" {
		t.Fatalf("retried commit: %v %+v", err, again)
	}
	got, _ := out.Partition("Default").Pop(ctx, queen.PopOptions{Batch: 10, Wait: wait})
	if len(got.Messages) != 1 || got.Messages[0].TraceID != trace {
		t.Fatalf("traceId not stored: %+v", got.Messages)
	}
	if queen.DerivedTransactionID(m, "a") == queen.DerivedTransactionID(m, "b") ||
		queen.DerivedTransactionID(m, "a") != queen.DerivedTransactionID(&queen.Message{
			PartitionID: m.PartitionID, TransactionID: m.TransactionID}, "a") {
		t.Fatal("derived ids must depend on the labels and only on the input's identity")
	}
}

func TestTransactionRollbacksAreTyped(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := testCtx(t)
	q := createQueue(t, c, queen.LeaseTime(time.Second))
	full := createQueue(t, c, queen.MaxSize(1))
	mustPush(t, full, 1)
	pushed := mustPush(t, q, numbered(3)...)
	b, _ := q.Pop(ctx, queen.PopOptions{Batch: 1, Wait: wait})
	m := b.Messages[0]

	check := func(name string, tx *queen.Transaction, want error, code string, retryable bool) {
		t.Helper()
		_, err := tx.Commit(ctx)
		var te *queen.TxnError
		if !errors.As(err, &te) || !errors.Is(err, want) || te.Code != code || te.Retryable() != retryable {
			t.Fatalf("%s: err = %v, want %s", name, err, code)
		}
	}
	unknown := *m
	unknown.TransactionID = "no-such-message"
	check("unknown message", c.Transaction().Ack(&unknown, queen.AckCompleted), queen.ErrUnknownMessage, "QTXN", false)
	check("full queue", c.Transaction().Queue(full.Name()).Push(2), queen.ErrQueueFull, "QFULL", true)
	// Message 2 was never delivered: it lies beyond the leased batch.
	beyond := *m
	beyond.TransactionID = pushed[2].TransactionID
	check("beyond batch", c.Transaction().Ack(&beyond, queen.AckCompleted), queen.ErrBeyondBatch, "QBATCH", false)
	time.Sleep(1200 * time.Millisecond) // real elapsed time, not an ordering: the 1 s lease runs out
	check("expired lease", c.Transaction().Ack(m, queen.AckCompleted), queen.ErrLeaseLost, "QLEASE", false)

	if _, err := c.Transaction().Commit(ctx); err == nil {
		t.Fatal("empty transaction accepted")
	}
	if _, err := c.Transaction().Ack(nil, queen.AckCompleted).Commit(ctx); err == nil {
		t.Fatal("nil message accepted")
	}
	if _, err := c.Transaction().Queue("").Push(1).Commit(ctx); err == nil {
		t.Fatal("push without queue accepted")
	}
	var he *queen.HTTPError
	_, err := c.Transaction().Queue(q.Name()).Push(queen.Item{Payload: 1, TraceID: "not-a-uuid"}).Commit(ctx)
	if !errors.As(err, &he) || he.StatusCode != 400 || he.Message != "TraceId must be a valid UUID" {
		t.Fatalf("invalid trace id: %v", err)
	}
}
