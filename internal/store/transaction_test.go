package store

// qg_transaction (docs/api/transaction.md §3, §9): ack resolution through requiredLeases, rollbacks on
// a wrong lease (QLEASE) or an ack beyond the batch (QBATCH), and the effect of committed acks.
// Moved from internal/httpapi/transaction_claims_ack_test.go (claims 25, 27–34, 36); the
// claims about the request and answer (parsing, texts, shapes) stay there.

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queen-go/queen/internal/mq"
)

// txn runs a transaction of ops (PushRow or mq.AckItem), indexed in order.
func (b *testBundle) txn(required []string, ops ...any) ([]mq.TxnResult, error) {
	b.t.Helper()
	var pushes []TxnPush
	var acks []TxnAck
	for i, op := range ops {
		switch op := op.(type) {
		case PushRow:
			pushes = append(pushes, TxnPush{Index: i, Item: op})
		case mq.AckItem:
			acks = append(acks, TxnAck{Index: i, Ack: op})
		default:
			b.t.Fatalf("op %d: %T", i, op)
		}
	}
	return b.s.Transaction(b.ctx, pushes, acks, required, nil, "")
}

// txnCommit requires the transaction to commit.
func (b *testBundle) txnCommit(required []string, ops ...any) []mq.TxnResult {
	b.t.Helper()
	res, err := b.txn(required, ops...)
	if err != nil {
		b.t.Fatalf("transaction did not commit: %v", err)
	}
	return res
}

// txnRollback requires the transaction to roll back with code, naming partition pid.
func (b *testBundle) txnRollback(code mq.Code, pid string, required []string, ops ...any) {
	b.t.Helper()
	_, err := b.txn(required, ops...)
	var rb *mq.RollbackError
	if !errors.As(err, &rb) || rb.Code != code || (pid != "" && !slices.Contains(rb.Args, pid)) {
		b.t.Fatalf("transaction: %v (%#v), want rollback %s naming %s", err, rb, code, pid)
	}
}

// seed pushes keys into partition and pops them all for group (queue mode when "").
func (b *testBundle) seed(partition, group string, keys ...string) popped {
	b.t.Helper()
	b.pushKeys(partition, keys...)
	return b.mustPop(PopRequest{Partition: partition, Group: group, Batch: len(keys)}, keys...)
}

// txnAck is a transaction's ack of message i of p: completed, no lease of its own.
func txnAck(p popped, i int) mq.AckItem {
	a := ackOf(p, i, mq.AckCompleted)
	a.LeaseID = ""
	return a
}

// wantState requires the cursor of (queue, partition, group) and whether it holds a lease.
func (b *testBundle) wantState(partition, group string, cursor int64, leased bool) consumerState {
	b.t.Helper()
	c := b.state(b.queue, partition, group)
	if c.Cursor != cursor || (c.LeaseID != nil) != leased {
		b.t.Fatalf("consumer %s/%s: %+v, want cursor %d leased %v", partition, group, c, cursor, leased)
	}
	return c
}

func TestTxnClaim25_AckAndPushCommit(t *testing.T) {
	b := setup(t)
	src := b.seed("in", "", "m1")
	next := row("out", "o", "out-m1")
	next.Payload = []byte(`"next"`)
	b.txnCommit([]string{src.LeaseID}, txnAck(src, 0), next)
	b.noPop(PopRequest{})
	p := b.mustPop(PopRequest{Queue: "out"}, "out-m1")
	if string(p.Messages[0].Payload) != `"next"` || p.Messages[0].Partition != "o" {
		t.Fatalf("popped %+v", p.Messages[0])
	}
	b.wantState("in", mq.QueueMode, 1, false)
}

func TestTxnClaim27_LeaselessAckAdvancesCursor(t *testing.T) {
	b := setup(t)
	src := b.seed("in", "", "m1", "m2", "m3")
	// No lease anywhere: no requiredLeases.
	for i := range 3 {
		res := b.txnCommit(nil, txnAck(src, i))
		if r := res[0]; r.Kind != "ack" || r.DLQ || r.AlreadyCommitted {
			t.Fatalf("result %+v", r)
		}
		b.wantState("in", mq.QueueMode, int64(i+1), i < 2)
	}
	b.noPop(PopRequest{})
}

func TestTxnClaim28_RandomLeaseIDRollsBack(t *testing.T) {
	b := setup(t)
	src := b.seed("in", "", "m1")
	pid := src.Messages[0].PartitionID
	for _, lease := range []string{uuid.NewString(), mq.LeaseRef("garbage")} {
		a := txnAck(src, 0)
		a.LeaseID = lease
		b.txnRollback(mq.CodeLease, pid, []string{src.LeaseID}, row("out", "Default", "o1"), a)
	}
	var n int
	if err := b.s.pool.QueryRow(b.ctx, "SELECT count(*) FROM messages WHERE transaction_id = 'o1'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("rolled-back push stored %d messages (%v)", n, err)
	}
	b.wantState("in", mq.QueueMode, 0, true)
}

func TestTxnClaim29_ExpiredLeaseRollsBack(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.LeaseTime = 1 })
	src := b.seed("Default", "", "m1")
	pid := src.Messages[0].PartitionID
	b.clock.Advance(2500 * time.Millisecond)
	b.txnRollback(mq.CodeLease, pid, []string{src.LeaseID}, row("out", "Default", "o1"), txnAck(src, 0))
	b.txnRollback(mq.CodeLease, pid, nil, row("out", "Default", "o2"), ackOf(src, 0, mq.AckCompleted))
	var n int
	if err := b.s.pool.QueryRow(b.ctx, "SELECT count(*) FROM messages WHERE transaction_id IN ('o1', 'o2')").Scan(&n); err != nil || n != 0 {
		t.Fatalf("rolled-back push stored %d messages (%v)", n, err)
	}
	b.wantState("Default", mq.QueueMode, 0, true)
}

func TestTxnClaim30_RequiredLeaseNotTheLiveOne(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.LeaseTime = 1 })
	first := b.seed("Default", "g30", "m1")
	b.clock.Advance(1500 * time.Millisecond)
	// Another member of the group now holds the live lease on the same batch.
	second := b.mustPop(PopRequest{Group: "g30"}, "m1")
	b.txnRollback(mq.CodeLease, first.Messages[0].PartitionID, []string{first.LeaseID}, txnAck(first, 0))
	b.wantState("Default", "g30", 0, true)
	b.txnCommit([]string{second.LeaseID}, txnAck(second, 0))
	b.wantState("Default", "g30", 1, false)
}

func TestTxnClaim31_TwoLeasesResolvedPerPair(t *testing.T) {
	b := setup(t)
	a := b.seed("a", "", "ma")
	c := b.seed("c", "", "mc")
	res := b.txnCommit([]string{a.LeaseID, c.LeaseID, a.LeaseID}, txnAck(c, 0), txnAck(a, 0))
	if len(res) != 2 || res[0].Index != 0 || res[1].Index != 1 || !res[0].LeaseReleased || !res[1].LeaseReleased {
		t.Fatalf("results %+v", res)
	}
	b.wantState("a", mq.QueueMode, 1, false)
	b.wantState("c", mq.QueueMode, 1, false)
}

func TestTxnClaim32_AckBeyondBatchRollsBack(t *testing.T) {
	b := setup(t)
	b.pushKeys("p", "m1", "m2", "m3")
	src := b.mustPop(PopRequest{}, "m1")
	pid := src.Messages[0].PartitionID
	third := mq.AckItem{TransactionID: "m3", PartitionID: pid, Group: mq.QueueMode, Status: mq.AckCompleted}
	b.txnRollback(mq.CodeBatch, pid, []string{src.LeaseID}, third)
	b.txnRollback(mq.CodeBatch, pid, nil, third)
	// A valid ack of the batch does not carry the bad one through.
	b.txnRollback(mq.CodeBatch, pid, nil, txnAck(src, 0), third)
	b.wantState("p", mq.QueueMode, 0, true)
}

func TestTxnClaim33_AckNeverDeliveredRollsBack(t *testing.T) {
	b := setup(t)
	src := b.seed("p", "", "m1") // delivered in queue mode, never to billing
	pid := src.Messages[0].PartitionID
	billing := txnAck(src, 0)
	billing.Group = "billing"
	b.txnRollback(mq.CodeBatch, pid, nil, billing)
	b.pushKeys("p", "m2") // stored after the pop: never delivered to anyone
	b.txnRollback(mq.CodeBatch, pid, nil, mq.AckItem{TransactionID: "m2", PartitionID: pid, Group: mq.QueueMode, Status: mq.AckCompleted})
	if c := b.state(b.queue, "p", "billing"); c.Found {
		t.Fatalf("billing got consumer state %+v", c)
	}
	b.wantState("p", mq.QueueMode, 0, true)
}

func TestTxnClaim34_AckMovesOnlyItsGroup(t *testing.T) {
	b := setup(t)
	src := b.seed("p", "billing", "m1")
	b.txnCommit([]string{src.LeaseID}, txnAck(src, 0))
	b.noPop(PopRequest{Group: "billing"})
	b.mustPop(PopRequest{Group: "audit"}, "m1")
	b.mustPop(PopRequest{}, "m1")
	b.wantState("p", "billing", 1, false)
	b.wantState("p", "audit", 0, true)
}

func TestTxnClaim36_FailedStatusRetriesAfterDelay(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.RetryDelay, o.RetryLimit = 3000, 3 })
	src := b.seed("Default", "", "m1")
	failed := txnAck(src, 0)
	failed.Status = mq.AckFailed
	if res := b.txnCommit([]string{src.LeaseID}, failed); res[0].DLQ || res[0].AlreadyCommitted {
		t.Fatalf("result %+v", res[0])
	}
	if c := b.wantState("Default", mq.QueueMode, 0, false); c.RetryCount != 1 {
		t.Fatalf("retry count %d, want 1", c.RetryCount)
	}
	b.noPop(PopRequest{})
	b.clock.Advance(2999 * time.Millisecond)
	b.noPop(PopRequest{})
	b.clock.Advance(2 * time.Millisecond)
	p := b.mustPop(PopRequest{}, "m1")
	if p.Messages[0].RetryCount != 1 {
		t.Fatalf("redelivered with retryCount %d, want 1", p.Messages[0].RetryCount)
	}
	again := txnAck(p, 0)
	again.Status = mq.AckFailed
	b.txnCommit([]string{p.LeaseID}, again)
	if c := b.state(b.queue, "Default", mq.QueueMode); c.RetryCount != 2 || c.Cursor != 0 {
		t.Fatalf("after a second failure: %+v", c)
	}
}
