package store

// Skip marks in the counters (docs/api/concepts.md §10, §9.1): a message moved to the DLQ for a
// group while after its cursor counts as consumed by that group, so it is neither unconsumed
// nor pending, nor in the group's lag, nor against maxSize.

import (
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

func TestSkipMarksCountAsConsumed(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.MaxSize = 4 })
	res := b.pushKeys("p", "a")
	pid := res[0].PartitionID
	b.clock.Advance(time.Minute)
	b.pushKeys("p", "b", "c", "d") // a minute younger than a

	// Queue mode is the partition's only consumer: a skipped there is consumed.
	if got := b.move(pid, "a", mq.QueueMode); len(got) != 1 || got[0] != mq.QueueMode+":moved" {
		t.Fatalf("move a: %v", got)
	}
	b.refreshStats() // the overview's counters come from the stats job
	o, err := b.s.Overview(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c := o.Counters; c.Total != 4 || c.Unconsumed != 3 || c.Processing != 0 || c.DeadLetter != 1 {
		t.Fatalf("overview counters %+v, want 4 total, 3 unconsumed (a is skipped), 1 in the DLQ", c)
	}
	l := lagOnP(t, b, mq.QueueMode)
	if l.OffsetLag != 3 || l.TimeLag != 0 || l.OldestUnconsumed == nil || !l.OldestUnconsumed.Equal(b.clock.Now()) {
		t.Fatalf("queue mode lag %+v, want 3 messages and b's age (0 s): a is skipped", l)
	}
	// The stats job (queue detail, partition listing, status routes, metrics) uses the same
	// definitions.
	b.refreshStats()
	d, found, err := b.s.StatusQueue(b.ctx, b.queue, mq.PartitionPage{Page: mq.Page{Limit: 100}})
	if err != nil || !found {
		t.Fatalf("queue detail: %v %v", found, err)
	}
	if c := d.Totals; c.Unconsumed != 3 || c.Pending() != 3 || c.Completed() != 1 {
		t.Fatalf("queue detail totals %+v", c)
	}
	rows, _, _, err := b.s.ListPartitions(b.ctx, mq.PartitionFilter{Queue: b.queue, Sort: "name", Page: mq.Page{Limit: 10}})
	if err != nil || len(rows) != 2 || rows[1].Name != "p" { // configure made Default
		t.Fatalf("partitions %+v %v", rows, err)
	}
	if r := rows[1]; r.Total != 4 || r.Pending != 3 || r.Completed != 1 || r.MaxTimeLag != 0 {
		t.Fatalf("partition row %+v, want pending 3, completed 1, no time lag", r)
	}

	// maxSize counts unconsumed messages: a no longer takes a place.
	if got := b.pushRows(row(b.queue, "p", "e"), row(b.queue, "p", "f")); got[0].Status != mq.StatusQueued || got[1].Status != mq.StatusFailed {
		t.Fatalf("push at the cap: %+v, want e queued (a is consumed) and f refused", got)
	}

	// A pop delivers b, c: processing, and a (skipped, before them) is no part of the batch.
	b.mustPop(PopRequest{Partition: "p", Batch: 2}, "b", "c")
	b.refreshStats()
	o, err = b.s.Overview(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c := o.Counters; c.Total != 5 || c.Unconsumed != 4 || c.Processing != 2 {
		t.Fatalf("after the pop %+v, want 4 unconsumed of which 2 processing", c)
	}

	// A named group registered now consumes the partition from the start: a is unconsumed for
	// it, so unconsumed again for the partition.
	b.mustPop(PopRequest{Partition: "p", Group: "g", Batch: 1}, "a")
	b.refreshStats()
	o, err = b.s.Overview(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c := o.Counters; c.Unconsumed != 5 {
		t.Fatalf("with group g %+v, want every message unconsumed", c)
	}
	if l := lagOnP(t, b, "g"); l.OffsetLag != 5 {
		t.Fatalf("group g lag %+v", l)
	}
	// Queue mode's cursor passed a's mark when it claimed (the mark is gone): b to e are behind.
	if l := lagOnP(t, b, mq.QueueMode); l.OffsetLag != 4 {
		t.Fatalf("queue mode lag %+v, want 4", l)
	}
}

// lagOnP is group's lag on the test queue's partition p (configure also made Default).
func lagOnP(t *testing.T, b *testBundle, group string) mq.PairLag {
	t.Helper()
	b.refreshStats() // the listing's lag is the stats job's
	pairs, err := b.s.LaggingPairs(b.ctx, mq.LagFilter{Sort: "timeLag", Desc: true, Page: mq.Page{Limit: mq.MaxListRows}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pairs {
		if p.Queue == b.queue && p.Partition == "p" && p.Group == group {
			return p
		}
	}
	t.Fatalf("no pair of %s on p", group)
	return mq.PairLag{}
}

// A named group that skips a message has consumed it (admin-api.md §2.1 busStatus, the
// message detail's consumers), while the messages around it stay pending for it.
func TestSkipMarkedMessageIsConsumedByItsGroup(t *testing.T) {
	b := setup(t)
	res := b.pushKeys("p", "a", "b", "c")
	pid := res[0].PartitionID
	b.mustPop(PopRequest{Partition: "p", Group: "g", Batch: 1}, "a") // g registers; a leased
	if got := b.move(pid, "b", "g"); len(got) != 1 || got[0] != "g:moved" {
		t.Fatalf("move b for g: %v", got)
	}
	d, found, err := b.s.MessageDetail(b.ctx, pid, "b")
	if err != nil || !found {
		t.Fatalf("detail of b: %v %v", found, err)
	}
	for _, c := range d.Consumers {
		if c.Group == "g" && !c.Consumed {
			t.Fatalf("b's consumers %+v: g skips it, so it consumed it", d.Consumers)
		}
	}
	from := b.clock.Now().Add(-time.Hour)
	msgs, err := b.s.ListMessages(b.ctx, mq.MessageFilter{Queue: b.queue, From: &from, Page: mq.Page{Limit: 10}})
	if err != nil {
		t.Fatal(err)
	}
	consumedBy := map[string]int64{}
	for _, m := range msgs {
		consumedBy[m.TransactionID] = m.ConsumedBy
	}
	if consumedBy["a"] != 0 || consumedBy["b"] != 1 || consumedBy["c"] != 0 {
		t.Fatalf("consumedBy %v, want b consumed by g only", consumedBy)
	}
	if l := lagOnP(t, b, "g"); l.OffsetLag != 2 {
		t.Fatalf("g's lag %+v, want a and c", l)
	}
}
