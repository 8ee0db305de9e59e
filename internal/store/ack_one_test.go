package store

// The single-message ack path (qg_ack_one → qg_ack_batch_end) and the pipeline stage's ack in
// qg_transaction: one guarded UPDATE when the ack completes its pair's leased batch, the
// general path (qg_ack_items) otherwise, with the same outcomes.

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queen-go/queen/internal/mq"
)

// counters reads the consumed counters of (queue, partition, group).
func (b *testBundle) counters(partition, group string) (messages, batches int64) {
	b.t.Helper()
	err := b.s.pool.QueryRow(b.ctx, `
		SELECT c.messages_consumed, c.batches_consumed
		FROM consumers c JOIN partitions p ON p.id = c.partition_id JOIN queues q ON q.id = p.queue_id
		WHERE q.name = $1 AND p.name = $2 AND c.consumer_group = $3`, b.queue, partition, group).Scan(&messages, &batches)
	if err != nil {
		b.t.Fatalf("counters: %v", err)
	}
	return messages, batches
}

// workRows counts the pair's rows in the work index.
func (b *testBundle) workRows(partition, group string) int {
	b.t.Helper()
	var n int
	err := b.s.pool.QueryRow(b.ctx, `
		SELECT count(*) FROM partition_work w JOIN partitions p ON p.id = w.partition_id JOIN queues q ON q.id = p.queue_id
		WHERE q.name = $1 AND p.name = $2 AND w.consumer_group = $3`, b.queue, partition, group).Scan(&n)
	if err != nil {
		b.t.Fatalf("work rows: %v", err)
	}
	return n
}

// A single completed ack of a batch of one completes it: lease released, cursor moved, the
// counters and the work index kept as the general path keeps them, the names reported.
func TestAckOneCompletesBatch(t *testing.T) {
	b := setup(t)
	b.pushKeys("pA", "a1", "a2")
	for i, k := range []string{"a1", "a2"} {
		p := b.mustPop(PopRequest{Group: "g"}, k)
		r := b.mustAck(ackOf(p, 0, mq.AckCompleted))
		if !r.LeaseReleased || r.AlreadyCommitted || r.DLQ || str(r.Queue) != b.queue || str(r.Partition) != "pA" {
			t.Fatalf("ack %s: %+v", k, r)
		}
		st := b.state(b.queue, "pA", "g")
		if st.Cursor != int64(i+1) || st.LeaseID != nil || st.LeaseExpiresAt != nil || st.BatchEnd != nil || st.RetryCount != 0 {
			t.Fatalf("state after %s: %+v", k, st)
		}
		if m, n := b.counters("pA", "g"); m != int64(i+1) || n != int64(i+1) {
			t.Fatalf("counters after %s: %d messages, %d batches", k, m, n)
		}
	}
	// Nothing after the last batch: the pair left the work index with the ack.
	if n := b.workRows("pA", "g"); n != 0 {
		t.Fatalf("work rows after the last ack: %d", n)
	}
	b.noPop(PopRequest{Group: "g"})
	// A key named with another partition: not found there.
	rejected(t, b.ack(mq.AckItem{TransactionID: "a2", PartitionID: b.pushKeys("pB", "b1")[0].PartitionID, Group: "g",
		Status: mq.AckCompleted})[0], "Message not found")
}

// What the single-message path must not take: a retried lease-holder's stale lease, an expired
// lease, a message in the middle of the batch, other statuses. Each gets the general path's
// verdict.
func TestAckOneFallsBackToTheGeneralPath(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.LeaseTime = 10; o.RetryLimit = 3 })
	b.pushKeys("Default", "a1", "a2", "a3", "a4")

	p := b.mustPop(PopRequest{}, "a1")
	b.clock.Advance(11 * time.Second)
	r := b.ack(ackOf(p, 0, mq.AckCompleted))[0]
	rejected(t, r, "Invalid or expired lease")
	if !r.LeaseReleased {
		t.Fatalf("expired lease: %+v", r)
	}
	q := b.mustPop(PopRequest{}, "a1") // a new lease on the same batch
	rejected(t, b.ack(ackOf(p, 0, mq.AckCompleted))[0], "Invalid or expired lease")
	if st := b.state(b.queue, "Default", mq.QueueMode); st.Cursor != 0 || st.LeaseID == nil || *st.LeaseID != q.LeaseID {
		t.Fatalf("rejected acks changed state %+v", st)
	}
	b.mustAck(ackOf(q, 0, mq.AckCompleted))

	// Mid-batch: the cursor moves, the lease stays.
	p = b.mustPop(PopRequest{Batch: 2}, "a2", "a3")
	if r := b.mustAck(ackOf(p, 0, mq.AckCompleted)); r.LeaseReleased {
		t.Fatalf("mid-batch ack released the lease: %+v", r)
	}
	b.wantState("Default", mq.QueueMode, 2, true)
	// Failed: released for a retry, not completed.
	if r := b.mustAck(ackOf(p, 1, mq.AckFailed)); !r.LeaseReleased || r.DLQ {
		t.Fatalf("failed ack: %+v", r)
	}
	if st := b.wantState("Default", mq.QueueMode, 2, false); st.RetryCount != 1 {
		t.Fatalf("retry count %d", st.RetryCount)
	}
}

// Concurrent acks of the same batch under its lease: exactly one applies it, the others find it
// already committed; the counters move once.
func TestAckOneConcurrentSameAck(t *testing.T) {
	b := setup(t)
	b.pushKeys("pA", "a1", "a2")
	p := b.mustPop(PopRequest{Group: "g"}, "a1")
	const n = 8
	res := make([]mq.AckResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			out, err := b.s.Ack(b.ctx, []mq.AckItem{ackOf(p, 0, mq.AckCompleted)})
			if err == nil {
				res[i] = out[0]
			}
			errs[i] = err
		})
	}
	wg.Wait()
	applied := 0
	for i := range n {
		if errs[i] != nil || !res[i].Success || !res[i].LeaseReleased {
			t.Fatalf("ack %d: %+v, %v", i, res[i], errs[i])
		}
		if !res[i].AlreadyCommitted {
			applied++
		}
	}
	if applied != 1 {
		t.Fatalf("%d acks applied the batch, want 1", applied)
	}
	if m, c := b.counters("pA", "g"); m != 1 || c != 1 {
		t.Fatalf("counters: %d messages, %d batches", m, c)
	}
	b.mustPop(PopRequest{Group: "g"}, "a2")
}

// Consumers popping one message and acking it concurrently: every message is delivered and
// acked exactly once (no lost ack re-delivering a message, no ack applied twice).
func TestAckOneConcurrentConsumers(t *testing.T) {
	b := setup(t)
	const parts, perPart, workers = 4, 15, 6
	want := map[string]bool{}
	for p := range parts {
		keys := make([]string, perPart)
		for i := range keys {
			keys[i] = fmt.Sprintf("p%d-m%02d", p, i)
			want[keys[i]] = true
		}
		b.pushKeys(fmt.Sprintf("p%d", p), keys...)
	}
	var mu sync.Mutex
	got := map[string]int{}
	applied := 0
	b.consumeOneByOne(workers, PopRequest{Group: "g"}, func(m mq.Message, lease string) error {
		res, err := b.s.Ack(b.ctx, []mq.AckItem{{PartitionID: m.PartitionID, TransactionID: m.TransactionID,
			Group: "g", Status: mq.AckCompleted, LeaseID: lease}})
		if err != nil || !res[0].Success {
			return fmt.Errorf("ack %s: %+v, %v", m.TransactionID, res, err)
		}
		mu.Lock()
		got[m.TransactionID]++
		if !res[0].AlreadyCommitted {
			applied++
		}
		mu.Unlock()
		return nil
	})
	for k := range want {
		if got[k] != 1 {
			t.Errorf("%s delivered %d times", k, got[k])
		}
	}
	if len(got) != len(want) || applied != len(want) {
		t.Fatalf("%d keys delivered, %d acks applied, want %d", len(got), applied, len(want))
	}
	for p := range parts {
		if m, c := b.counters(fmt.Sprintf("p%d", p), "g"); m != perPart || c != perPart {
			t.Fatalf("p%d counters: %d messages, %d batches", p, m, c)
		}
	}
}

// An ack under an expired lease racing a new pop of the same batch: whichever takes the row
// first, the old lease never acks the batch, and the new lease then holds it.
func TestAckOneRacesRedelivery(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.LeaseTime = 10 })
	b.pushKeys("Default", "a1", "a2")
	for range 5 {
		p := b.mustPop(PopRequest{}, "a1")
		b.clock.Advance(11 * time.Second)
		var wg sync.WaitGroup
		var old mq.AckResult
		var q []mq.Message
		lease := uuid.NewString()
		wg.Go(func() {
			res, err := b.s.Ack(b.ctx, []mq.AckItem{ackOf(p, 0, mq.AckCompleted)})
			if err != nil {
				t.Error(err)
				return
			}
			old = res[0]
		})
		wg.Go(func() {
			var err error
			if q, err = b.s.Pop(b.ctx, b.req(PopRequest{LeaseID: lease})); err != nil {
				t.Error(err)
			}
		})
		wg.Wait()
		if old.Success {
			t.Fatalf("expired lease acked: %+v", old)
		}
		if len(q) == 0 {
			// The pop skips a pair whose row the ack holds (SKIP LOCKED): it may find nothing.
			var err error
			if q, err = b.s.Pop(b.ctx, b.req(PopRequest{LeaseID: lease})); err != nil {
				t.Fatal(err)
			}
		}
		if len(q) != 1 || q[0].TransactionID != "a1" {
			t.Fatalf("redelivery: %+v", q)
		}
		// Expire the new lease too, for the next round, after checking it still holds the batch.
		if st := b.state(b.queue, "Default", mq.QueueMode); st.Cursor != 0 || st.LeaseID == nil || *st.LeaseID != lease {
			t.Fatalf("state %+v, want the new lease", st)
		}
		b.clock.Advance(11 * time.Second)
	}
	q := b.mustPop(PopRequest{}, "a1")
	b.mustAck(ackOf(q, 0, mq.AckCompleted))
	b.mustPop(PopRequest{}, "a2")
}

// The pipeline stage: one completed ack under requiredLeases plus a push, concurrently from
// several workers. Every source message moves to the sink exactly once.
func TestTxnPipelineStageConcurrent(t *testing.T) {
	b := setup(t)
	const parts, perPart, workers = 3, 10, 5
	total := 0
	for p := range parts {
		keys := make([]string, perPart)
		for i := range keys {
			keys[i] = fmt.Sprintf("p%d-m%02d", p, i)
		}
		total += perPart
		b.pushKeys(fmt.Sprintf("p%d", p), keys...)
	}
	b.consumeOneByOne(workers, PopRequest{}, func(m mq.Message, lease string) error {
		res, err := b.s.Transaction(b.ctx,
			[]TxnPush{{Index: 1, Item: PushRow{Queue: "sink", Partition: m.Partition, Key: "next-" + m.TransactionID,
				ID: uuid.NewString(), Payload: []byte(`1`)}}},
			[]TxnAck{{Index: 0, Ack: mq.AckItem{PartitionID: m.PartitionID, TransactionID: m.TransactionID,
				Group: mq.QueueMode, Status: mq.AckCompleted}}},
			[]string{lease}, nil, "")
		if err != nil || len(res) != 2 || res[0].Kind != "ack" || !res[0].LeaseReleased || res[0].Queue != b.queue ||
			res[0].AlreadyCommitted || res[1].Kind != "push" || res[1].Duplicate {
			return fmt.Errorf("transaction for %s: %+v, %v", m.TransactionID, res, err)
		}
		return nil
	})
	var n, distinct int
	if err := b.s.pool.QueryRow(b.ctx, `SELECT count(*), count(DISTINCT m.transaction_id) FROM messages m
		JOIN partitions p ON p.id = m.partition_id JOIN queues q ON q.id = p.queue_id WHERE q.name = 'sink'`).Scan(&n, &distinct); err != nil {
		t.Fatal(err)
	}
	if n != total || distinct != total {
		t.Fatalf("sink holds %d messages (%d keys), want %d", n, distinct, total)
	}
	for p := range parts {
		b.wantState(fmt.Sprintf("p%d", p), mq.QueueMode, perPart, false)
	}
}

// Two transactions racing with the same ack and push: one commits, the other rolls back on
// the push's key (QDUP); the source batch is acked once.
func TestTxnSameStageTwiceCommitsOnce(t *testing.T) {
	b := setup(t)
	src := b.seed("in", "", "m1", "m2")
	// seed popped both: ack the first alone so that the batch ends at m2 for the fast path
	b.txnCommit([]string{src.LeaseID}, txnAck(src, 0))
	b.wantState("in", mq.QueueMode, 1, true)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() {
			_, errs[i] = b.txn([]string{src.LeaseID}, txnAck(src, 1), row("out", "o", "out-m2"))
		})
	}
	wg.Wait()
	committed := 0
	for _, err := range errs {
		if err == nil {
			committed++
			continue
		}
		var rb *mq.RollbackError
		if !errors.As(err, &rb) || rb.Code != mq.CodeDuplicate {
			t.Fatalf("loser: %v", err)
		}
	}
	if committed != 1 {
		t.Fatalf("%d transactions committed: %v", committed, errs)
	}
	b.wantState("in", mq.QueueMode, 2, false)
	if m, c := b.counters("in", mq.QueueMode); m != 2 || c != 1 {
		t.Fatalf("counters: %d messages, %d batches", m, c)
	}
}

// The transaction's pushes take partition ids from the push cache; a partition deleted since
// is found missing, forgotten and created again.
func TestTxnPushPartitionCache(t *testing.T) {
	b := setup(t)
	b.txnCommit(nil, row("out", "o", "k1"))
	if ids := b.s.partitions.lookup("", []string{"out"}, []string{"o"}); ids == nil {
		t.Fatal("the transaction's partition was not cached")
	}
	b.txnCommit(nil, row("out", "o", "k2"))
	if _, err := b.s.DeleteQueue(b.ctx, "out"); err != nil {
		t.Fatal(err)
	}
	res := b.txnCommit(nil, row("out", "o", "k3"))
	if ids := b.s.partitions.lookup("", []string{"out"}, []string{"o"}); ids == nil || ids[0] != res[0].PartitionID {
		t.Fatalf("cache after recreation: %v, want %s", ids, res[0].PartitionID)
	}
	b.mustPop(PopRequest{Queue: "out"}, "k3")
}

// consumeOneByOne runs workers that each pop one message at a time (req, batch 1, a fresh lease
// per pop) and pass it to handle, until a worker has found nothing 20 times in a row; the
// first error of a pop or of handle fails the test.
func (b *testBundle) consumeOneByOne(workers int, req PopRequest, handle func(m mq.Message, lease string) error) {
	b.t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for empty := 0; empty < 20; {
				r := req
				r.Batch, r.LeaseID = 1, uuid.NewString()
				msgs, err := b.s.Pop(b.ctx, b.req(r))
				if err != nil {
					errs <- err
					return
				}
				if len(msgs) == 0 {
					empty++
					continue
				}
				empty = 0
				if err := handle(msgs[0], r.LeaseID); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.t.Fatal(err)
	}
}
