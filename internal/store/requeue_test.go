package store

// The requeued set: DLQ requeue in redeliver mode (qg_dlq_redeliver), the requeue batches
// qg_claim serves from it and the acks that settle them (qg_ack_requeue), and the message retry
// (qg_message_retry). docs/api/concepts.md §8.2, §9.2, §9.3; docs/api/admin-api.md §2.4, §3.2.

import (
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// dlqIDs lists the ids of the DLQ entries of group on the test's queue, oldest first.
func (b *testBundle) dlqIDs(group string) []string {
	b.t.Helper()
	return b.texts(`SELECT id::text FROM dlq WHERE queue_name = $1 AND consumer_group = $2
		ORDER BY failed_at, id`, b.queue, group)
}

// redeliver requeues ids in redeliver mode.
func (b *testBundle) redeliver(ids ...string) mq.DLQRequeueResult {
	b.t.Helper()
	res, err := b.s.RedeliverDLQEntries(b.ctx, ids)
	if err != nil {
		b.t.Fatal(err)
	}
	return res
}

// requeuedSet lists the positions of the pair's requeued set.
func (b *testBundle) requeuedSet(partition, group string) []int64 {
	b.t.Helper()
	rows, err := b.s.pool.Query(b.ctx, `SELECT r.position FROM requeued r JOIN partitions p ON p.id = r.partition_id
		JOIN queues q ON q.id = p.queue_id WHERE q.name = $1 AND p.name = $2 AND r.consumer_group = $3
		ORDER BY r.position`, b.queue, partition, group)
	if err != nil {
		b.t.Fatal(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var p int64
		if err := rows.Scan(&p); err != nil {
			b.t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// deadLetter pops one message of group g and acks it with status dlq.
func (b *testBundle) deadLetter(g, key string) {
	b.t.Helper()
	p := b.mustPop(PopRequest{Group: g}, key)
	if r := b.mustAck(ackOf(p, 0, mq.AckDLQ)); !r.DLQ {
		b.t.Fatalf("ack dlq %s: %+v", key, r)
	}
}

// A message dead-lettered by one group and requeued comes back to that group once, before
// the messages after its cursor, and to no other group; repeating the call does nothing.
func TestRequeueRedeliversToItsGroupOnly(t *testing.T) {
	b := setup(t)
	b.pushKeys("p", "a", "b", "c", "d")
	if got := b.drain(PopRequest{Group: "h", Batch: 10}); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Fatalf("h: %v", got)
	}
	b.deadLetter("g", "a")
	p := b.mustPop(PopRequest{Group: "g", Batch: 2}, "b", "c")
	b.mustAck(ackOf(p, 1, mq.AckCompleted))

	ids := b.dlqIDs("g")
	res := b.redeliver(ids...)
	if res.Requeued != 1 || len(res.Skipped) != 0 || !slices.Equal(res.Queues, []string{b.queue}) {
		t.Fatalf("requeue: %+v", res)
	}
	if d := b.dlq(b.queue); len(d) != 0 {
		t.Fatalf("entry kept: %+v", d)
	}
	if s := b.requeuedSet("p", "g"); !slices.Equal(s, []int64{1}) {
		t.Fatalf("set %v", s)
	}
	// Again: the entry is gone.
	if res := b.redeliver(ids...); res.Requeued != 0 || len(res.Skipped) != 1 || res.Skipped[0].Reason != "DLQ entry not found" {
		t.Fatalf("repeat: %+v", res)
	}
	// The set first (only it, whatever the budget), then the cursor.
	rq := b.mustPop(PopRequest{Group: "g", Batch: 10}, "a")
	if s := b.state(b.queue, "p", "g"); s.Cursor != 3 || s.BatchEnd == nil || *s.BatchEnd != 1 {
		t.Fatalf("state after the requeue claim: %+v", s)
	}
	r := b.mustAck(ackOf(rq, 0, mq.AckCompleted))
	if !r.LeaseReleased || r.AlreadyCommitted {
		t.Fatalf("ack of the requeue batch: %+v", r)
	}
	if s := b.state(b.queue, "p", "g"); s.Cursor != 3 || s.LeaseID != nil || s.BatchEnd != nil {
		t.Fatalf("state after the requeue batch: %+v", s)
	}
	if got := b.drain(PopRequest{Group: "g", Batch: 10}); !slices.Equal(got, []string{"d"}) {
		t.Fatalf("g after the set: %v", got)
	}
	b.noPop(PopRequest{Group: "h"})
	// Drained: the pair leaves the work index.
	var work int
	b.s.pool.QueryRow(b.ctx, `SELECT count(*) FROM partition_work WHERE consumer_group = 'g'`).Scan(&work)
	if work != 0 {
		t.Fatalf("%d work rows for g", work)
	}
}

// The requeue readings of the ack (docs/api/concepts.md §8.2): completing message k consumes the
// batch's earlier ones; a message at or below the cursor outside the batch is already
// committed; one after the cursor is beyond the batch; a failure with retries left keeps the
// set, adds one to rq and waits retryDelay; exhausted, it dead-letters with retryCount rq.
func TestRequeueBatchAcks(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.RetryLimit = 1; o.RetryDelay = 1000 })
	b.pushKeys("p", "a", "b", "c", "d", "e")
	for _, k := range []string{"a", "b", "c"} {
		b.deadLetter("g", k)
	}
	b.redeliver(b.dlqIDs("g")...)
	rq := b.mustPop(PopRequest{Group: "g", Batch: 2}, "a", "b")
	if rq.Messages[0].RetryCount != 0 {
		t.Fatalf("retryCount %d", rq.Messages[0].RetryCount)
	}
	// c is in the set but not in the batch; d lies after the cursor.
	c := mq.AckItem{PartitionID: rq.Messages[0].PartitionID, TransactionID: "c", Group: "g", Status: mq.AckCompleted}
	d := c
	d.TransactionID = "d"
	res := b.ack(c, d)
	if !res[0].AlreadyCommitted || res[1].Success || str(res[1].Error) != "Message is beyond the leased batch" {
		t.Fatalf("outside the batch: %+v %s", res, str(res[1].Error))
	}
	// Wrong lease.
	wrong := ackOf(rq, 0, mq.AckCompleted)
	wrong.LeaseID = "00000000-0000-0000-0000-000000000001"
	rejected(t, b.ack(wrong)[0], "Invalid or expired lease")

	// failed with retries left: released, both back in the set with rq 1, after retryDelay.
	if r := b.mustAck(ackOf(rq, 0, mq.AckFailed)); !r.LeaseReleased {
		t.Fatalf("failed: %+v", r)
	}
	if s := b.requeuedSet("p", "g"); !slices.Equal(s, []int64{1, 2, 3}) {
		t.Fatalf("set %v", s)
	}
	if s := b.state(b.queue, "p", "g"); s.RetryCount != 0 || s.RetryNotBefore == nil || s.Cursor != 3 {
		t.Fatalf("state %+v", s)
	}
	b.noPop(PopRequest{Group: "g"})
	b.clock.Advance(1500 * time.Millisecond)
	rq = b.mustPop(PopRequest{Group: "g", Batch: 2}, "a", "b")
	if rq.Messages[0].RetryCount != 1 {
		t.Fatalf("retryCount %d, want 1", rq.Messages[0].RetryCount)
	}
	// Exhausted: a dead-letters (retryCount 1), b is completed by the same call.
	res = b.ack(ackOf(rq, 0, mq.AckFailed), ackOf(rq, 1, mq.AckCompleted))
	if !res[0].DLQ || !res[1].Success || !res[1].LeaseReleased {
		t.Fatalf("exhausted: %+v", res)
	}
	if d := b.dlq(b.queue); len(d) != 1 || d[0].TransactionID != "a" || d[0].RetryCount != 1 || d[0].Error != "Retries exhausted" {
		t.Fatalf("dlq %+v", d)
	}
	if s := b.requeuedSet("p", "g"); !slices.Equal(s, []int64{3}) {
		t.Fatalf("set %v", s)
	}
	// Then c (rq 0: its own counter), then the cursor.
	rq = b.mustPop(PopRequest{Group: "g", Batch: 5}, "c")
	if rq.Messages[0].RetryCount != 0 {
		t.Fatalf("c retryCount %d", rq.Messages[0].RetryCount)
	}
	b.mustAck(ackOf(rq, 0, mq.AckRetry))
	if got := b.drain(PopRequest{Group: "g", Batch: 5}); !slices.Equal(got, []string{"c", "d", "e"}) {
		t.Fatalf("after retry: %v", got)
	}
	if s := b.state(b.queue, "p", "g"); s.Cursor != 5 {
		t.Fatalf("cursor %d", s.Cursor)
	}
}

// Lease expiry redelivers a requeue batch; autoAck takes requeued messages out at once; a seek
// drops the set.
func TestRequeueExpiryAutoAckAndSeek(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.LeaseTime = 10 })
	b.pushKeys("p", "a", "b", "c")
	b.deadLetter("g", "a")
	b.deadLetter("g", "b")
	b.redeliver(b.dlqIDs("g")...)
	b.mustPop(PopRequest{Group: "g", Batch: 1}, "a")
	b.noPop(PopRequest{Group: "g"})
	b.clock.Advance(11 * time.Second)
	b.mustPop(PopRequest{Group: "g", Batch: 5, AutoAck: true}, "a", "b")
	if s := b.requeuedSet("p", "g"); len(s) != 0 {
		t.Fatalf("set after autoAck: %v", s)
	}
	b.mustPop(PopRequest{Group: "g", Batch: 5, AutoAck: true}, "c")

	b.pushKeys("p", "d")
	b.deadLetter("g", "d")
	b.redeliver(b.dlqIDs("g")...)
	if _, _, err := b.s.SeekQueue(b.ctx, "g", b.queue, nil); err != nil { // to the end
		t.Fatal(err)
	}
	if s := b.requeuedSet("p", "g"); len(s) != 0 {
		t.Fatalf("set after seek: %v", s)
	}
	b.noPop(PopRequest{Group: "g"})
}

// Entries that cannot be redelivered are kept with their reasons; a message after the cursor
// (moved to the DLQ by request) loses its skip mark and comes in its normal order.
func TestRequeueSkipsAndSkipMarks(t *testing.T) {
	b := setup(t)
	res := b.pushKeys("p", "a", "b", "c")
	pid := res[0].PartitionID
	b.mustPop(PopRequest{Group: "g", Batch: 1}, "a") // registers g; a leased
	if got := b.move(pid, "b", "g"); !slices.Equal(got, []string{"g:moved"}) {
		t.Fatalf("move: %v", got)
	}
	ids := b.dlqIDs("g")
	if r := b.redeliver(ids...); r.Requeued != 1 {
		t.Fatalf("requeue: %+v", r)
	}
	b.clock.Advance(10 * time.Minute) // a's lease expires
	if got := b.drain(PopRequest{Group: "g", Batch: 1}); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("after the mark was dropped: %v", got)
	}

	// No longer stored.
	b.deadLetter(mq.QueueMode, "a")
	b.remove(pid, "a")
	ids = b.dlqIDs(mq.QueueMode)
	if r := b.redeliver(ids...); r.Requeued != 0 || len(r.Skipped) != 1 || r.Skipped[0].Reason != "Message no longer stored" || r.Skipped[0].ID != ids[0] {
		t.Fatalf("removed message: %+v", r)
	}
	// The group was deleted.
	b.deadLetter(mq.QueueMode, "b")
	if _, _, err := b.s.DeleteConsumerGroup(b.ctx, mq.QueueMode, b.queue, false); err != nil {
		t.Fatal(err)
	}
	ids = b.dlqIDs(mq.QueueMode)
	r := b.redeliver(ids...)
	reasons := []string{}
	for _, k := range r.Skipped {
		reasons = append(reasons, k.Reason)
	}
	slices.Sort(reasons)
	if r.Requeued != 0 || !slices.Equal(reasons, []string{"Consumer group has no cursor on the partition", "Message no longer stored"}) {
		t.Fatalf("deleted group: %+v", r)
	}
	if d := b.dlq(b.queue); len(d) != 2 {
		t.Fatalf("entries kept: %+v", d)
	}
}

// By filter: only redeliverable entries are selected, up to the limit, and remaining counts
// those left.
func TestRequeueByFilter(t *testing.T) {
	b := setup(t)
	res := b.pushKeys("p", "a", "b", "c")
	for _, k := range []string{"a", "b", "c"} {
		b.deadLetter("g", k)
	}
	b.remove(res[0].PartitionID, "c") // its entry cannot be redelivered
	r, err := b.s.RedeliverDLQMatching(b.ctx, mq.DLQFilter{Queue: b.queue, Group: "g"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Requeued != 1 || r.Remaining != 1 || len(r.Skipped) != 0 {
		t.Fatalf("first call: %+v", r)
	}
	r, _ = b.s.RedeliverDLQMatching(b.ctx, mq.DLQFilter{Queue: b.queue, Group: "g"}, 1000)
	if r.Requeued != 1 || r.Remaining != 0 {
		t.Fatalf("second call: %+v", r)
	}
	r, _ = b.s.RedeliverDLQMatching(b.ctx, mq.DLQFilter{Queue: b.queue}, 1000)
	if r.Requeued != 0 || r.Remaining != 0 {
		t.Fatalf("third call: %+v", r)
	}
	if got := b.drain(PopRequest{Group: "g", Batch: 5}); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("delivered %v", got)
	}
}

// Message retry (docs/api/admin-api.md §2.4): a dead-lettered message is requeued, a pending
// retry delay is cleared, a repeated call finds it already requeued.
func TestRetryMessage(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.RetryDelay = 60000 })
	res := b.pushKeys("p", "a", "b")
	pid := res[0].PartitionID
	retry := func(key, group string) ([]string, bool) {
		t.Helper()
		out, queue, found, err := b.s.RetryMessage(b.ctx, pid, key, group)
		if err != nil {
			t.Fatal(err)
		}
		if found && queue != b.queue {
			t.Fatalf("queue %q", queue)
		}
		var s []string
		for _, g := range out {
			v := g.Group + ":" + g.Action
			if g.Reason != "" {
				v += ":" + g.Reason
			}
			s = append(s, v)
		}
		return s, found
	}
	if _, found := retry("nope", ""); found {
		t.Fatal("unknown message found")
	}
	b.deadLetter("g", "a")
	p := b.mustPop(PopRequest{Group: "h"}, "a")
	b.mustAck(ackOf(p, 0, mq.AckFailed)) // h waits out its retry delay
	if got, _ := retry("a", ""); !slices.Equal(got, []string{"g:requeued", "h:retry_delay_cleared"}) {
		t.Fatalf("retry: %v", got)
	}
	if got, _ := retry("a", ""); !slices.Equal(got, []string{"g:already_requeued"}) {
		t.Fatalf("repeat: %v", got)
	}
	if got, found := retry("b", "g"); !found || len(got) != 0 {
		t.Fatalf("nothing to do: %v %v", got, found)
	}
	b.mustPop(PopRequest{Group: "h"}, "a")
	b.mustPop(PopRequest{Group: "g", Batch: 5}, "a")
}

// Moving a requeued message to the DLQ takes it out of the set; in a live requeue batch it is
// leased.
func TestMoveToDLQRequeued(t *testing.T) {
	b := setup(t)
	res := b.pushKeys("p", "a", "b", "c")
	pid := res[0].PartitionID
	b.deadLetter("g", "a")
	b.deadLetter("g", "b")
	b.redeliver(b.dlqIDs("g")...)
	b.mustPop(PopRequest{Group: "g"}, "a")
	if got := b.move(pid, "a", "g"); !slices.Equal(got, []string{"g:skipped:Message is leased"}) {
		t.Fatalf("leased: %v", got)
	}
	if got := b.move(pid, "b", "g"); !slices.Equal(got, []string{"g:moved"}) {
		t.Fatalf("in the set: %v", got)
	}
	if s := b.requeuedSet("p", "g"); !slices.Equal(s, []int64{1}) {
		t.Fatalf("set %v", s)
	}
}

// Completed retention leaves requeued messages (not consumed, docs/api/concepts.md §10), and no
// retention rule removes a message of a live requeue batch.
func TestRetentionSparesRequeued(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) {
		o.RetentionEnabled, o.CompletedRetentionSeconds, o.LeaseTime = true, 60, 600
	})
	b.pushKeys("p", "a", "b", "c")
	b.deadLetter(mq.QueueMode, "a")
	b.deadLetter(mq.QueueMode, "b")
	p := b.mustPop(PopRequest{}, "c")
	b.mustAck(ackOf(p, 0, mq.AckCompleted))
	b.redeliver(b.dlqIDs(mq.QueueMode)...)
	held := b.mustPop(PopRequest{Batch: 1}, "a") // a requeue batch, leased for 600 s
	b.clock.Advance(61 * time.Second)
	b.retention(1000, 30)
	if got := b.stored(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("stored %v, want a (leased) and b (requeued)", got)
	}
	b.mustAck(ackOf(held, 0, mq.AckCompleted))
	b.mustPop(PopRequest{}, "b")
	if got := b.stored(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("stored %v", got)
	}
	b.retention(1000, 30) // a is consumed now; b is leased
	if got := b.stored(); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("stored %v, want b", got)
	}
}

// A transaction acks a requeue batch like the ack routes (its required lease resolves the
// lease-less item), next to an ack of another pair's normal batch in the same call; a wrong
// required lease rolls it back.
func TestRequeueBatchInTransaction(t *testing.T) {
	b := setup(t)
	b.pushKeys("p", "a", "b")
	b.deadLetter("g", "a")
	b.redeliver(b.dlqIDs("g")...)
	rq := b.mustPop(PopRequest{Group: "g", Batch: 5}, "a")
	other := b.seed("q", "", "x")
	b.txnRollback(mq.CodeLease, "", []string{"00000000-0000-0000-0000-000000000001"}, txnAck(rq, 0))
	res := b.txnCommit([]string{rq.LeaseID, other.LeaseID}, txnAck(rq, 0), txnAck(other, 0))
	if len(res) != 2 {
		t.Fatalf("results %+v", res)
	}
	if s := b.requeuedSet("p", "g"); len(s) != 0 {
		t.Fatalf("set %v", s)
	}
	b.wantState("q", mq.QueueMode, 1, false)
	if s := b.state(b.queue, "p", "g"); s.Cursor != 1 || s.LeaseID != nil {
		t.Fatalf("g: %+v", s)
	}
	b.mustPop(PopRequest{Group: "g"}, "b")
}

// A requeued message is unconsumed (docs/api/concepts.md §10): it counts against maxSize and
// the message detail shows it not consumed by its group.
func TestRequeuedCountsUnconsumed(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.MaxSize = 2 })
	res := b.pushKeys("p", "a", "b")
	b.deadLetter(mq.QueueMode, "a")
	p := b.mustPop(PopRequest{}, "b")
	b.mustAck(ackOf(p, 0, mq.AckCompleted))
	b.pushKeys("p", "c")
	b.redeliver(b.dlqIDs(mq.QueueMode)...)
	if r := b.pushRows(row(b.queue, "p", "d"))[0]; r.Status != mq.StatusFailed {
		t.Fatalf("push over maxSize with a requeued message: %q, want failed", r.Status)
	}
	d, found, err := b.s.MessageDetail(b.ctx, res[0].PartitionID, "a")
	if err != nil || !found || len(d.Consumers) != 1 || d.Consumers[0].Consumed {
		t.Fatalf("detail of a: %+v %v %v", d.Consumers, found, err)
	}
	b.mustPop(PopRequest{Batch: 5}, "a")
	if d, _, _ = b.s.MessageDetail(b.ctx, res[0].PartitionID, "a"); d.Consumers[0].LeaseExpiresAt == nil {
		t.Fatalf("a in a live requeue batch: %+v", d.Consumers)
	}
}

// Eviction counts a requeued message's wait from its requeue (docs/api/concepts.md §11) and
// dead-letters it for the group whose set held it.
func TestEvictionOfRequeued(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.MaxWaitTimeSeconds = 60 })
	b.pushKeys("p", "a", "b")
	b.deadLetter("g", "a")
	p := b.mustPop(PopRequest{Group: "g"}, "b")
	b.mustAck(ackOf(p, 0, mq.AckCompleted))
	b.clock.Advance(100 * time.Second)
	b.redeliver(b.dlqIDs("g")...)
	b.eviction(100)
	if got := b.stored(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("stored %v: a was requeued just now", got)
	}
	b.clock.Advance(61 * time.Second)
	b.eviction(100)
	if got := b.stored(); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("stored %v, want b", got)
	}
	if d := b.dlq(b.queue); len(d) != 1 || d[0].Group != "g" || d[0].Error != "Max wait time exceeded" {
		t.Fatalf("dlq %+v", d)
	}
	if s := b.requeuedSet("p", "g"); len(s) != 0 {
		t.Fatalf("set %v", s)
	}
	b.noPop(PopRequest{Group: "g"})
}
