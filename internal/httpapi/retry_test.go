package httpapi_test

// Acknowledgement evaluation, retries and the DLQ (concepts.md §8.2, §9).

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/internal/testserver"
)

// semRejected requires an ack result rejected with msg.
func semRejected(t *testing.T, r acked, msg string) {
	t.Helper()
	if r.Success || semStr(r.Error) != msg || r.DLQ || r.AlreadyCommitted {
		t.Fatalf("ack %+v (%s), want rejected with %q", r, semStr(r.Error), msg)
	}
}

func TestAckCompletedConsumesEarlierMessages(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.semPushKeys("pA", "a1", "a2", "a3", "a4")
	p := b.semMustPop(b.semQ("batch=3"), "a1", "a2", "a3")
	if r := b.semMustAck(semAckOf(p, 0, "completed")); r.LeaseReleased || r.DLQ || r.AlreadyCommitted ||
		semStr(r.QueueName) != b.queue || semStr(r.PartitionName) != "pA" {
		t.Fatalf("ack a1 %+v", r)
	}
	if st := semState(t, b.queue, "pA", "__QUEUE_MODE__"); st.Cursor != 1 || st.LeaseID == nil {
		t.Fatalf("state after a1 %+v", st)
	}
	// Acking a3 consumes a2 and completes the batch; "success" means completed.
	if r := b.semMustAck(semAckOf(p, 2, "success")); !r.LeaseReleased {
		t.Fatalf("ack a3 %+v", r)
	}
	st := semState(t, b.queue, "pA", "__QUEUE_MODE__")
	if st.Cursor != 3 || st.LeaseID != nil || st.BatchEnd != nil {
		t.Fatalf("state after a3 %+v", st)
	}
	// Already committed (at or before the cursor): success without effect, lease not checked.
	for _, a := range []obj{semAckOf(p, 2, "completed"), semAckOf(p, 1, "failed"),
		{"transactionId": "a1", "partitionId": p.PartitionID, "leaseId": uuid.NewString()}} {
		if r := b.semMustAck(a); !r.AlreadyCommitted || !r.LeaseReleased || r.DLQ {
			t.Fatalf("ack again %+v", r)
		}
	}
	if st := semState(t, b.queue, "pA", "__QUEUE_MODE__"); st.Cursor != 3 || st.RetryCount != 0 {
		t.Fatalf("state after acking again %+v", st)
	}
	semRejected(t, b.ack(obj{"transactionId": "nope", "partitionId": p.PartitionID}), "Message not found")
	b.semMustPop(b.semQ("batch=3"), "a4")
}

func TestAckFailedRedeliversAfterRetryDelay(t *testing.T) {
	b := setup(t, testserver.Options{FakeClock: true})
	b.semConfigure(b.queue, obj{"options": obj{"retryDelay": 5000}})
	b.semPushKeys("Default", "a1", "a2")
	p := b.semMustPop(b.semQ("batch=2"), "a1", "a2")
	if p.Messages[0].RetryCount != 0 {
		t.Fatalf("first delivery retryCount %d", p.Messages[0].RetryCount)
	}
	if r := b.semMustAck(semAckOf(p, 0, "failed")); !r.LeaseReleased || r.DLQ {
		t.Fatalf("failed ack %+v", r)
	}
	st := semState(t, b.queue, "Default", "__QUEUE_MODE__")
	if st.Cursor != 0 || st.RetryCount != 1 || st.LeaseID != nil || st.BatchEnd != nil || st.RetryNotBefore == nil {
		t.Fatalf("state after failed %+v", st)
	}
	b.semNoPop(b.semQ("batch=2"))
	b.srv.Clock.Advance(4900 * time.Millisecond)
	b.semNoPop(b.semQ("batch=2"))
	b.srv.Clock.Advance(200 * time.Millisecond)
	p = b.semMustPop(b.semQ("batch=2"), "a1", "a2")
	for _, m := range p.Messages {
		if m.RetryCount != 1 {
			t.Fatalf("redelivery retryCount %d, want 1", m.RetryCount)
		}
	}
	// The batch completes: the counter resets.
	b.semMustAck(semAckOf(p, 1, "completed"))
	if st := semState(t, b.queue, "Default", "__QUEUE_MODE__"); st.RetryCount != 0 || st.Cursor != 2 {
		t.Fatalf("state after completion %+v", st)
	}
}

func TestAckRetryIsImmediateAndUncounted(t *testing.T) {
	b := setup(t, testserver.Options{FakeClock: true})
	b.semConfigure(b.queue, obj{"options": obj{"retryDelay": 60000}})
	b.semPushKeys("Default", "a1", "a2")
	p := b.semMustPop(b.semQ("batch=2"), "a1", "a2")
	if r := b.semMustAck(semAckOf(p, 1, "retry")); !r.LeaseReleased {
		t.Fatalf("retry ack %+v", r)
	}
	p = b.semMustPop(b.semQ("batch=2"), "a1", "a2")
	if p.Messages[0].RetryCount != 0 {
		t.Fatalf("retryCount after retry %d", p.Messages[0].RetryCount)
	}
	b.semMustAck(semAckOf(p, 0, "failed"))
	b.srv.Clock.Advance(time.Minute)
	p = b.semMustPop(b.semQ("batch=2"), "a1", "a2")
	b.semMustAck(semAckOf(p, 0, "retry"))
	p = b.semMustPop(b.semQ("batch=2"), "a1", "a2") // no delay after retry
	if p.Messages[0].RetryCount != 1 {
		t.Fatalf("retryCount after failed+retry %d, want 1", p.Messages[0].RetryCount)
	}
}

func TestAckDLQMovesCursor(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.semPushKeys("pA", "a1", "a2", "a3")
	p := b.semMustPop(b.semQ("batch=3&consumerGroup=g"), "a1", "a2", "a3")
	a := semAckOf(p, 0, "dlq")
	a["error"] = "poison"
	if r := b.semMustAck(a); !r.DLQ || r.LeaseReleased {
		t.Fatalf("dlq ack %+v", r)
	}
	if r := b.semMustAck(semAckOf(p, 1, "dlq")); !r.DLQ {
		t.Fatalf("dlq ack %+v", r)
	}
	got := semDLQ(t, b.queue)
	want := []semDLQRow{{"a1", "g", "poison", p.Messages[0].ID, 0}, {"a2", "g", "Moved to DLQ", p.Messages[1].ID, 0}}
	if !slices.Equal(got, want) {
		t.Fatalf("dlq %+v, want %+v", got, want)
	}
	if st := semState(t, b.queue, "pA", "g"); st.Cursor != 2 || st.LeaseID == nil {
		t.Fatalf("state after dlq %+v", st)
	}
	b.semMustAck(semAckOf(p, 2, "completed"))
	// Dead-lettering affects only the group that did it.
	b.semMustPop(b.semQ("batch=3"), "a1", "a2", "a3")
}

func TestAckRetriesExhausted(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.semConfigure(b.queue, obj{"options": obj{"retryLimit": 2, "retryDelay": 0}})
	b.semPushKeys("Default", "a1", "a2")
	for r := range 3 {
		p := b.semMustPop(b.semQ(""), "a1")
		if p.Messages[0].RetryCount != r {
			t.Fatalf("delivery %d retryCount %d", r, p.Messages[0].RetryCount)
		}
		res := b.semMustAck(semAckOf(p, 0, "failed"))
		if res.DLQ != (r == 2) {
			t.Fatalf("failure %d: %+v", r, res)
		}
	}
	if got := semDLQ(t, b.queue); len(got) != 1 || got[0].Error != "Retries exhausted" || got[0].RetryCount != 2 ||
		got[0].TransactionID != "a1" {
		t.Fatalf("dlq %+v", got)
	}
	if st := semState(t, b.queue, "Default", "__QUEUE_MODE__"); st.Cursor != 1 || st.RetryCount != 0 {
		t.Fatalf("state after exhaustion %+v", st)
	}
	if p := b.semMustPop(b.semQ(""), "a2"); p.Messages[0].RetryCount != 0 {
		t.Fatalf("next message retryCount %d", p.Messages[0].RetryCount)
	}
}

func TestAckRetryLimitZero(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.semConfigure(b.queue, obj{"options": obj{"retryLimit": 0}})
	b.semPushKeys("Default", "a1", "a2", "a3")
	p := b.semMustPop(b.semQ("batch=3"), "a1", "a2", "a3")
	first := semAckOf(p, 0, "failed")
	first["error"] = "boom"
	// Once retries are exhausted every failed item of the request is dead-lettered.
	res := b.semAckBatch(first, semAckOf(p, 1, "bogus-status"))
	if !res[0].DLQ || !res[1].DLQ || res[1].LeaseReleased {
		t.Fatalf("ack batch %+v", res)
	}
	got := semDLQ(t, b.queue)
	slices.SortFunc(got, func(x, y semDLQRow) int { return strings.Compare(x.TransactionID, y.TransactionID) })
	if len(got) != 2 || got[0].Error != "boom" || got[1].Error != "Retries exhausted" || got[0].RetryCount != 0 {
		t.Fatalf("dlq %+v", got)
	}
	b.semMustAck(semAckOf(p, 2, "completed"))
	b.semNoPop(b.semQ(""))
}

func TestAckLeaseChecks(t *testing.T) {
	b := setup(t, testserver.Options{FakeClock: true})
	b.semConfigure(b.queue, obj{"options": obj{"leaseTime": 10}})
	b.semPushKeys("Default", "a1", "a2", "a3")
	p := b.semMustPop(b.semQ("batch=1"), "a1")

	for _, lease := range []string{uuid.NewString(), "not-a-uuid"} {
		a := semAckOf(p, 0, "completed")
		a["leaseId"] = lease
		r := b.ack(a)
		semRejected(t, r, "Invalid or expired lease")
		if r.LeaseReleased {
			t.Fatal("leaseReleased with a live lease")
		}
	}
	// Beyond the leased batch, with and without the lease.
	a2 := obj{"transactionId": "a2", "partitionId": p.PartitionID, "leaseId": p.LeaseID}
	semRejected(t, b.ack(a2), "Message is beyond the leased batch")
	semRejected(t, b.ack(obj{"transactionId": "a2", "partitionId": p.PartitionID}), "Message is beyond the leased batch")
	if st := semState(t, b.queue, "Default", "__QUEUE_MODE__"); st.Cursor != 0 || st.LeaseID == nil {
		t.Fatalf("rejected acks changed state %+v", st)
	}

	// After expiry the lease no longer acks.
	b.srv.Clock.Advance(11 * time.Second)
	r := b.ack(semAckOf(p, 0, "completed"))
	semRejected(t, r, "Invalid or expired lease")
	if !r.LeaseReleased {
		t.Fatal("leaseReleased false after expiry")
	}
	q := b.semMustPop(b.semQ("batch=1"), "a1")
	semRejected(t, b.ack(semAckOf(p, 0, "completed")), "Invalid or expired lease") // replaced
	b.semMustAck(semAckOf(q, 0, "completed"))
	// No batch outstanding.
	semRejected(t, b.ack(obj{"transactionId": "a2", "partitionId": p.PartitionID}), "Message is beyond the leased batch")
}

func TestAckLeaselessActsOnOutstandingBatch(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.semPushKeys("pA", "a1", "a2", "a3")
	p := b.semMustPop(b.semQ("batch=2&consumerGroup=g"), "a1", "a2")
	r := b.semMustAck(obj{"transactionId": "a1", "partitionId": p.PartitionID, "consumerGroup": "g", "leaseId": ""})
	if r.LeaseReleased {
		t.Fatalf("lease-less ack of a1 %+v", r)
	}
	r = b.semMustAck(obj{"transactionId": "a2", "partitionId": p.PartitionID, "consumerGroup": "g"})
	if !r.LeaseReleased {
		t.Fatalf("lease-less ack of a2 %+v", r)
	}
	if st := semState(t, b.queue, "pA", "g"); st.Cursor != 2 || st.LeaseID != nil {
		t.Fatalf("state %+v", st)
	}
	// Queue mode has no batch on the pair: the same ack without the group is beyond it.
	semRejected(t, b.ack(obj{"transactionId": "a3", "partitionId": p.PartitionID}), "Message is beyond the leased batch")
}

func TestAckCompletedAndFailedInOneRequest(t *testing.T) {
	for _, name := range []string{"request-order", "reversed"} {
		t.Run(name, func(t *testing.T) {
			b := setup(t, testserver.Options{FakeClock: true})
			b.semPushKeys("Default", "a1", "a2", "a3")
			p := b.semMustPop(b.semQ("batch=3"), "a1", "a2", "a3")
			items := []obj{semAckOf(p, 0, "completed"), semAckOf(p, 1, "failed"), semAckOf(p, 2, "completed")}
			if name == "reversed" {
				slices.Reverse(items)
			}
			for _, r := range b.semAckBatch(items...) {
				// a3 lies after the release point: success, no effect.
				if !r.Success || r.DLQ || r.AlreadyCommitted || !r.LeaseReleased {
					t.Fatalf("ack batch item %+v", r)
				}
			}
			st := semState(t, b.queue, "Default", "__QUEUE_MODE__")
			if st.Cursor != 1 || st.RetryCount != 1 || st.LeaseID != nil {
				t.Fatalf("state %+v, want cursor 1 and one retry", st)
			}
			b.srv.Clock.Advance(time.Second) // default retryDelay
			q := b.semMustPop(b.semQ("batch=3"), "a2", "a3")
			if q.Messages[0].RetryCount != 1 {
				t.Fatalf("redelivery retryCount %d", q.Messages[0].RetryCount)
			}
		})
	}
}

func TestAckCursorNeverMovesBackwards(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.semPushKeys("Default", "a1", "a2", "a3", "a4")
	p := b.semMustPop(b.semQ("batch=4"), "a1", "a2", "a3", "a4")
	b.semMustAck(semAckOf(p, 2, "completed"))
	// An earlier message is already committed: a failure of it counts nothing, moves nothing.
	res := b.semAckBatch(semAckOf(p, 0, "failed"), semAckOf(p, 1, "retry"))
	for _, r := range res {
		if !r.Success || !r.AlreadyCommitted || r.LeaseReleased {
			t.Fatalf("ack of committed messages %+v", r)
		}
	}
	st := semState(t, b.queue, "Default", "__QUEUE_MODE__")
	if st.Cursor != 3 || st.RetryCount != 0 || st.LeaseID == nil {
		t.Fatalf("state %+v", st)
	}
	// A retry of a4 redelivers from the cursor, never before it.
	b.semMustAck(semAckOf(p, 3, "retry"))
	b.semMustPop(b.semQ("batch=4"), "a4")
}

func TestAckItemsAfterReleasePointHaveNoEffect(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.semPushKeys("Default", "a1", "a2")
	p := b.semMustPop(b.semQ("batch=2"), "a1", "a2")
	res := b.semAckBatch(semAckOf(p, 1, "dlq"), semAckOf(p, 0, "retry"))
	if !res[0].Success || res[0].DLQ || !res[1].Success || !res[0].LeaseReleased {
		t.Fatalf("ack batch %+v", res)
	}
	if got := semDLQ(t, b.queue); len(got) != 0 {
		t.Fatalf("dlq after a release point %+v", got)
	}
	b.semMustPop(b.semQ("batch=2"), "a1", "a2")
}

func TestAckDLQResetsRetryCounter(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.semConfigure(b.queue, obj{"options": obj{"retryDelay": 0}})
	b.semPushKeys("Default", "a1", "a2", "a3")
	p := b.semMustPop(b.semQ("batch=3"), "a1", "a2", "a3")
	b.semMustAck(semAckOf(p, 0, "failed"))
	p = b.semMustPop(b.semQ("batch=3"), "a1", "a2", "a3")
	// dlq(a1) then failed(a2) with retries left: a2 is a release point, but the DLQ move
	// resets the counter.
	res := b.semAckBatch(semAckOf(p, 1, "failed"), semAckOf(p, 0, "dlq"))
	if res[0].DLQ || !res[1].DLQ || !res[0].LeaseReleased {
		t.Fatalf("ack batch %+v", res)
	}
	if got := semDLQ(t, b.queue); len(got) != 1 || got[0].RetryCount != 1 || got[0].TransactionID != "a1" {
		t.Fatalf("dlq %+v", got)
	}
	st := semState(t, b.queue, "Default", "__QUEUE_MODE__")
	if st.Cursor != 1 || st.RetryCount != 0 || st.LeaseID != nil {
		t.Fatalf("state %+v", st)
	}
	if p := b.semMustPop(b.semQ("batch=3"), "a2", "a3"); p.Messages[0].RetryCount != 0 {
		t.Fatalf("retryCount %d", p.Messages[0].RetryCount)
	}
}
