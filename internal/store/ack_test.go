package store

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queen-go/queen/internal/mq"
)

// An item without a partition (a NULL in the arrays; the HTTP routes refuse it earlier) is
// "Message not found" even when its key is in the batch that the other items acknowledge:
// the set-based path for whole-batch acks must not let a NULL slip through its checks.
func TestAckItemWithoutPartitionIsNotFound(t *testing.T) {
	ctx := context.Background()
	s := migratedSchema(t, "ack_nulls")
	if _, err := s.Push(ctx, []PushRow{
		{Queue: "acks", Partition: "Default", Key: "k1", ID: uuid.NewString(), Payload: []byte(`1`)},
		{Queue: "acks", Partition: "Default", Key: "k2", ID: uuid.NewString(), Payload: []byte(`2`)},
	}); err != nil {
		t.Fatal(err)
	}
	lease := uuid.NewString()
	msgs, err := s.Pop(ctx, PopRequest{Queue: "acks", Group: "__QUEUE_MODE__", Batch: 2, Partitions: 1, LeaseID: lease, SubscriptionMode: "all"})
	if err != nil || len(msgs) != 2 {
		t.Fatalf("pop: %v, %d messages", err, len(msgs))
	}
	res, err := s.Ack(ctx, []mq.AckItem{
		{PartitionID: msgs[0].PartitionID, TransactionID: "k1", Group: "__QUEUE_MODE__", Status: "completed", LeaseID: lease},
		{TransactionID: "k2", Group: "__QUEUE_MODE__", Status: "completed", LeaseID: lease},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Success || res[1].Success || res[1].Error == nil || *res[1].Error != "Message not found" {
		t.Fatalf("results: %+v, %+v (%v)", res[0], res[1], res[1].Error)
	}
}

// The rules of qg_ack_items below (evaluation, retries, the DLQ; docs/api/concepts.md §8.2, §9) moved
// from internal/httpapi/retry_test.go.

func TestAckCompletedConsumesEarlierMessages(t *testing.T) {
	b := setup(t)
	b.pushKeys("pA", "a1", "a2", "a3", "a4")
	p := b.mustPop(PopRequest{Batch: 3}, "a1", "a2", "a3")
	if r := b.mustAck(ackOf(p, 0, mq.AckCompleted)); r.LeaseReleased || r.DLQ || r.AlreadyCommitted ||
		str(r.Queue) != b.queue || str(r.Partition) != "pA" {
		t.Fatalf("ack a1 %+v", r)
	}
	if st := b.state(b.queue, "pA", mq.QueueMode); st.Cursor != 1 || st.LeaseID == nil {
		t.Fatalf("state after a1 %+v", st)
	}
	// Acking a3 consumes a2 and completes the batch.
	if r := b.mustAck(ackOf(p, 2, mq.AckCompleted)); !r.LeaseReleased {
		t.Fatalf("ack a3 %+v", r)
	}
	st := b.state(b.queue, "pA", mq.QueueMode)
	if st.Cursor != 3 || st.LeaseID != nil || st.BatchEnd != nil {
		t.Fatalf("state after a3 %+v", st)
	}
	// Already committed (at or before the cursor): success without effect, lease not checked.
	other := ackOf(p, 0, mq.AckCompleted)
	other.LeaseID = uuid.NewString()
	for _, a := range []mq.AckItem{ackOf(p, 2, mq.AckCompleted), ackOf(p, 1, mq.AckFailed), other} {
		if r := b.mustAck(a); !r.AlreadyCommitted || !r.LeaseReleased || r.DLQ {
			t.Fatalf("ack again %+v", r)
		}
	}
	if st := b.state(b.queue, "pA", mq.QueueMode); st.Cursor != 3 || st.RetryCount != 0 {
		t.Fatalf("state after acking again %+v", st)
	}
	rejected(t, b.ack(mq.AckItem{TransactionID: "nope", PartitionID: p.Messages[0].PartitionID, Group: mq.QueueMode, Status: mq.AckCompleted})[0], "Message not found")
	b.mustPop(PopRequest{Batch: 3}, "a4")
}

func TestAckFailedRedeliversAfterRetryDelay(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.RetryDelay = 5000 })
	b.pushKeys("Default", "a1", "a2")
	p := b.mustPop(PopRequest{Batch: 2}, "a1", "a2")
	if p.Messages[0].RetryCount != 0 {
		t.Fatalf("first delivery retryCount %d", p.Messages[0].RetryCount)
	}
	if r := b.mustAck(ackOf(p, 0, mq.AckFailed)); !r.LeaseReleased || r.DLQ {
		t.Fatalf("failed ack %+v", r)
	}
	st := b.state(b.queue, "Default", mq.QueueMode)
	if st.Cursor != 0 || st.RetryCount != 1 || st.LeaseID != nil || st.BatchEnd != nil || st.RetryNotBefore == nil {
		t.Fatalf("state after failed %+v", st)
	}
	b.noPop(PopRequest{Batch: 2})
	b.clock.Advance(4900 * time.Millisecond)
	b.noPop(PopRequest{Batch: 2})
	b.clock.Advance(200 * time.Millisecond)
	p = b.mustPop(PopRequest{Batch: 2}, "a1", "a2")
	for _, m := range p.Messages {
		if m.RetryCount != 1 {
			t.Fatalf("redelivery retryCount %d, want 1", m.RetryCount)
		}
	}
	// The batch completes: the counter resets.
	b.mustAck(ackOf(p, 1, mq.AckCompleted))
	if st := b.state(b.queue, "Default", mq.QueueMode); st.RetryCount != 0 || st.Cursor != 2 {
		t.Fatalf("state after completion %+v", st)
	}
}

func TestAckRetryIsImmediateAndUncounted(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.RetryDelay = 60000 })
	b.pushKeys("Default", "a1", "a2")
	p := b.mustPop(PopRequest{Batch: 2}, "a1", "a2")
	if r := b.mustAck(ackOf(p, 1, mq.AckRetry)); !r.LeaseReleased {
		t.Fatalf("retry ack %+v", r)
	}
	p = b.mustPop(PopRequest{Batch: 2}, "a1", "a2")
	if p.Messages[0].RetryCount != 0 {
		t.Fatalf("retryCount after retry %d", p.Messages[0].RetryCount)
	}
	b.mustAck(ackOf(p, 0, mq.AckFailed))
	b.clock.Advance(time.Minute)
	p = b.mustPop(PopRequest{Batch: 2}, "a1", "a2")
	b.mustAck(ackOf(p, 0, mq.AckRetry))
	p = b.mustPop(PopRequest{Batch: 2}, "a1", "a2") // no delay after retry
	if p.Messages[0].RetryCount != 1 {
		t.Fatalf("retryCount after failed+retry %d, want 1", p.Messages[0].RetryCount)
	}
}

func TestAckDLQMovesCursor(t *testing.T) {
	b := setup(t)
	b.pushKeys("pA", "a1", "a2", "a3")
	p := b.mustPop(PopRequest{Batch: 3, Group: "g"}, "a1", "a2", "a3")
	a := ackOf(p, 0, mq.AckDLQ)
	a.Error = "poison"
	if r := b.mustAck(a); !r.DLQ || r.LeaseReleased {
		t.Fatalf("dlq ack %+v", r)
	}
	if r := b.mustAck(ackOf(p, 1, mq.AckDLQ)); !r.DLQ {
		t.Fatalf("dlq ack %+v", r)
	}
	got := b.dlq(b.queue)
	want := []dlqRow{{"a1", "g", "poison", p.Messages[0].ID, 0}, {"a2", "g", "Moved to DLQ", p.Messages[1].ID, 0}}
	if !slices.Equal(got, want) {
		t.Fatalf("dlq %+v, want %+v", got, want)
	}
	if st := b.state(b.queue, "pA", "g"); st.Cursor != 2 || st.LeaseID == nil {
		t.Fatalf("state after dlq %+v", st)
	}
	b.mustAck(ackOf(p, 2, mq.AckCompleted))
	// Dead-lettering affects only the group that did it.
	b.mustPop(PopRequest{Batch: 3}, "a1", "a2", "a3")
}

func TestAckRetriesExhausted(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.RetryLimit, o.RetryDelay = 2, 0 })
	b.pushKeys("Default", "a1", "a2")
	for r := range 3 {
		p := b.mustPop(PopRequest{}, "a1")
		if p.Messages[0].RetryCount != r {
			t.Fatalf("delivery %d retryCount %d", r, p.Messages[0].RetryCount)
		}
		if res := b.mustAck(ackOf(p, 0, mq.AckFailed)); res.DLQ != (r == 2) {
			t.Fatalf("failure %d: %+v", r, res)
		}
	}
	if got := b.dlq(b.queue); len(got) != 1 || got[0].Error != "Retries exhausted" || got[0].RetryCount != 2 ||
		got[0].TransactionID != "a1" {
		t.Fatalf("dlq %+v", got)
	}
	if st := b.state(b.queue, "Default", mq.QueueMode); st.Cursor != 1 || st.RetryCount != 0 {
		t.Fatalf("state after exhaustion %+v", st)
	}
	if p := b.mustPop(PopRequest{}, "a2"); p.Messages[0].RetryCount != 0 {
		t.Fatalf("next message retryCount %d", p.Messages[0].RetryCount)
	}
}

func TestAckRetryLimitZero(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.RetryLimit = 0 })
	b.pushKeys("Default", "a1", "a2", "a3")
	p := b.mustPop(PopRequest{Batch: 3}, "a1", "a2", "a3")
	first := ackOf(p, 0, mq.AckFailed)
	first.Error = "boom"
	// Once retries are exhausted every failed item of the call is dead-lettered.
	res := b.ack(first, ackOf(p, 1, mq.AckFailed))
	if !res[0].DLQ || !res[1].DLQ || res[1].LeaseReleased {
		t.Fatalf("ack batch %+v", res)
	}
	got := b.dlq(b.queue)
	slices.SortFunc(got, func(x, y dlqRow) int { return strings.Compare(x.TransactionID, y.TransactionID) })
	if len(got) != 2 || got[0].Error != "boom" || got[1].Error != "Retries exhausted" || got[0].RetryCount != 0 {
		t.Fatalf("dlq %+v", got)
	}
	b.mustAck(ackOf(p, 2, mq.AckCompleted))
	b.noPop(PopRequest{})
}

func TestAckLeaseChecks(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.LeaseTime = 10 })
	b.pushKeys("Default", "a1", "a2", "a3")
	p := b.mustPop(PopRequest{}, "a1")
	pid := p.Messages[0].PartitionID

	// (A lease id that is no UUID is the broker's to map: mq.LeaseRef.)
	for _, lease := range []string{uuid.NewString(), mq.LeaseRef("not-a-uuid")} {
		a := ackOf(p, 0, mq.AckCompleted)
		a.LeaseID = lease
		r := b.ack(a)[0]
		rejected(t, r, "Invalid or expired lease")
		if r.LeaseReleased {
			t.Fatal("leaseReleased with a live lease")
		}
	}
	// Beyond the leased batch, with and without the lease.
	a2 := mq.AckItem{TransactionID: "a2", PartitionID: pid, Group: mq.QueueMode, Status: mq.AckCompleted}
	rejected(t, b.ack(a2)[0], "Message is beyond the leased batch")
	a2.LeaseID = p.LeaseID
	rejected(t, b.ack(a2)[0], "Message is beyond the leased batch")
	if st := b.state(b.queue, "Default", mq.QueueMode); st.Cursor != 0 || st.LeaseID == nil {
		t.Fatalf("rejected acks changed state %+v", st)
	}

	// After expiry the lease no longer acks.
	b.clock.Advance(11 * time.Second)
	r := b.ack(ackOf(p, 0, mq.AckCompleted))[0]
	rejected(t, r, "Invalid or expired lease")
	if !r.LeaseReleased {
		t.Fatal("leaseReleased false after expiry")
	}
	q := b.mustPop(PopRequest{}, "a1")
	rejected(t, b.ack(ackOf(p, 0, mq.AckCompleted))[0], "Invalid or expired lease") // replaced
	b.mustAck(ackOf(q, 0, mq.AckCompleted))
	// No batch outstanding.
	a2.LeaseID = ""
	rejected(t, b.ack(a2)[0], "Message is beyond the leased batch")
}

func TestAckLeaselessActsOnOutstandingBatch(t *testing.T) {
	b := setup(t)
	b.pushKeys("pA", "a1", "a2", "a3")
	p := b.mustPop(PopRequest{Batch: 2, Group: "g"}, "a1", "a2")
	pid := p.Messages[0].PartitionID
	if r := b.mustAck(mq.AckItem{TransactionID: "a1", PartitionID: pid, Group: "g", Status: mq.AckCompleted}); r.LeaseReleased {
		t.Fatalf("lease-less ack of a1 %+v", r)
	}
	if r := b.mustAck(mq.AckItem{TransactionID: "a2", PartitionID: pid, Group: "g", Status: mq.AckCompleted}); !r.LeaseReleased {
		t.Fatalf("lease-less ack of a2 %+v", r)
	}
	if st := b.state(b.queue, "pA", "g"); st.Cursor != 2 || st.LeaseID != nil {
		t.Fatalf("state %+v", st)
	}
	// Queue mode has no batch on the pair: the same ack in queue mode is beyond it.
	rejected(t, b.ack(mq.AckItem{TransactionID: "a3", PartitionID: pid, Group: mq.QueueMode, Status: mq.AckCompleted})[0],
		"Message is beyond the leased batch")
}

func TestAckCompletedAndFailedInOneRequest(t *testing.T) {
	for _, name := range []string{"request-order", "reversed"} {
		t.Run(name, func(t *testing.T) {
			b := setup(t)
			b.pushKeys("Default", "a1", "a2", "a3")
			p := b.mustPop(PopRequest{Batch: 3}, "a1", "a2", "a3")
			items := []mq.AckItem{ackOf(p, 0, mq.AckCompleted), ackOf(p, 1, mq.AckFailed), ackOf(p, 2, mq.AckCompleted)}
			if name == "reversed" {
				slices.Reverse(items)
			}
			for _, r := range b.ack(items...) {
				// a3 lies after the release point: success, no effect.
				if !r.Success || r.DLQ || r.AlreadyCommitted || !r.LeaseReleased {
					t.Fatalf("ack batch item %+v", r)
				}
			}
			st := b.state(b.queue, "Default", mq.QueueMode)
			if st.Cursor != 1 || st.RetryCount != 1 || st.LeaseID != nil {
				t.Fatalf("state %+v, want cursor 1 and one retry", st)
			}
			b.clock.Advance(time.Second) // default retryDelay
			if q := b.mustPop(PopRequest{Batch: 3}, "a2", "a3"); q.Messages[0].RetryCount != 1 {
				t.Fatalf("redelivery retryCount %d", q.Messages[0].RetryCount)
			}
		})
	}
}

func TestAckCursorNeverMovesBackwards(t *testing.T) {
	b := setup(t)
	b.pushKeys("Default", "a1", "a2", "a3", "a4")
	p := b.mustPop(PopRequest{Batch: 4}, "a1", "a2", "a3", "a4")
	b.mustAck(ackOf(p, 2, mq.AckCompleted))
	// An earlier message is already committed: a failure of it counts nothing, moves nothing.
	for _, r := range b.ack(ackOf(p, 0, mq.AckFailed), ackOf(p, 1, mq.AckRetry)) {
		if !r.Success || !r.AlreadyCommitted || r.LeaseReleased {
			t.Fatalf("ack of committed messages %+v", r)
		}
	}
	if st := b.state(b.queue, "Default", mq.QueueMode); st.Cursor != 3 || st.RetryCount != 0 || st.LeaseID == nil {
		t.Fatalf("state %+v", st)
	}
	// A retry of a4 redelivers from the cursor, never before it.
	b.mustAck(ackOf(p, 3, mq.AckRetry))
	b.mustPop(PopRequest{Batch: 4}, "a4")
}

func TestAckItemsAfterReleasePointHaveNoEffect(t *testing.T) {
	b := setup(t)
	b.pushKeys("Default", "a1", "a2")
	p := b.mustPop(PopRequest{Batch: 2}, "a1", "a2")
	res := b.ack(ackOf(p, 1, mq.AckDLQ), ackOf(p, 0, mq.AckRetry))
	if !res[0].Success || res[0].DLQ || !res[1].Success || !res[0].LeaseReleased {
		t.Fatalf("ack batch %+v", res)
	}
	if got := b.dlq(b.queue); len(got) != 0 {
		t.Fatalf("dlq after a release point %+v", got)
	}
	b.mustPop(PopRequest{Batch: 2}, "a1", "a2")
}

func TestAckDLQResetsRetryCounter(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.RetryDelay = 0 })
	b.pushKeys("Default", "a1", "a2", "a3")
	p := b.mustPop(PopRequest{Batch: 3}, "a1", "a2", "a3")
	b.mustAck(ackOf(p, 0, mq.AckFailed))
	p = b.mustPop(PopRequest{Batch: 3}, "a1", "a2", "a3")
	// dlq(a1) then failed(a2) with retries left: a2 is a release point, but the DLQ move
	// resets the counter.
	res := b.ack(ackOf(p, 1, mq.AckFailed), ackOf(p, 0, mq.AckDLQ))
	if res[0].DLQ || !res[1].DLQ || !res[0].LeaseReleased {
		t.Fatalf("ack batch %+v", res)
	}
	if got := b.dlq(b.queue); len(got) != 1 || got[0].RetryCount != 1 || got[0].TransactionID != "a1" {
		t.Fatalf("dlq %+v", got)
	}
	if st := b.state(b.queue, "Default", mq.QueueMode); st.Cursor != 1 || st.RetryCount != 0 || st.LeaseID != nil {
		t.Fatalf("state %+v", st)
	}
	if p := b.mustPop(PopRequest{Batch: 3}, "a2", "a3"); p.Messages[0].RetryCount != 0 {
		t.Fatalf("retryCount %d", p.Messages[0].RetryCount)
	}
}
