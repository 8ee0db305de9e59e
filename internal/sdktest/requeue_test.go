package sdktest

import (
	"testing"

	queen "github.com/queen-go/queen/client"
)

// Client.RequeueDLQ and Client.RetryMessage against a real broker (docs/api/admin-api.md §2.4, §3.2).
func TestRequeueAndRetry(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := testCtx(t)
	q := createQueue(t, c)
	mustPush(t, q, numbered(2)...)
	deadLetter := func() *queen.Message {
		t.Helper()
		b, err := q.Pop(ctx, queen.PopOptions{ConsumerGroup: "billing", Wait: wait})
		if err != nil || b.Empty() {
			t.Fatalf("pop: %v %+v", err, b)
		}
		m := b.Messages[0]
		if r, err := c.Ack(ctx, m.Ack(queen.AckDLQ)); err != nil || !r.DLQ {
			t.Fatalf("ack dlq: %v %+v", err, r)
		}
		return m
	}
	first := deadLetter()
	page, err := q.DLQ(ctx, queen.DLQQuery{})
	if err != nil || len(page.Messages) != 1 || page.Messages[0].DLQID == "" {
		t.Fatalf("dlq: %v %+v", err, page)
	}
	res, err := c.RequeueDLQ(ctx, queen.DLQRequeue{DLQSelection: queen.DLQSelection{IDs: []string{page.Messages[0].DLQID, "junk"}}})
	skipIfUnsupported(t, err, "POST /api/v1/dlq/requeue")
	if err != nil || res.Mode != "redeliver" || res.Requeued != 1 || len(res.Skipped) != 1 {
		t.Fatalf("requeue: %v %+v", err, res)
	}
	// Redelivered to billing before the next message.
	again := deadLetter()
	if again.TransactionID != first.TransactionID {
		t.Fatalf("redelivered %s, want %s", again.TransactionID, first.TransactionID)
	}
	r, err := c.RetryMessage(ctx, again.PartitionID, again.TransactionID, "")
	if err != nil || !r.Success || len(r.ConsumerGroups) != 1 || r.ConsumerGroups[0].Action != "requeued" {
		t.Fatalf("retry: %v %+v", err, r)
	}
	// Copy by filter into another queue.
	deadLetter()
	target := q.Name() + "-copy"
	res, err = c.RequeueDLQ(ctx, queen.DLQRequeue{DLQSelection: queen.DLQSelection{Queue: q.Name()}, ToQueue: target})
	if err != nil || res.Mode != "copy" || res.Requeued != 1 || len(res.Copies) != 1 || res.Copies[0].QueueName != target {
		t.Fatalf("copy: %v %+v", err, res)
	}
	if b, err := c.Queue(target).Pop(ctx, queen.PopOptions{Wait: wait}); err != nil || len(b.Messages) != 1 {
		t.Fatalf("pop copy: %v %+v", err, b)
	}
}
