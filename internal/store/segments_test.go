package store

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queen-go/queen/internal/mq"
)

// segOf returns the segment of each stored message of the test's queue, by key.
func (b *testBundle) segOf() map[string]int {
	b.t.Helper()
	rows, err := b.s.pool.Query(b.ctx, `SELECT m.transaction_id, m.seg FROM messages m JOIN partitions p ON p.id = m.partition_id
		JOIN queue_rows q ON q.id = p.queue_id WHERE q.name LIKE $1 || '%'`, b.queue)
	if err != nil {
		b.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var k string
		var seg int
		if err := rows.Scan(&k, &seg); err != nil {
			b.t.Fatal(err)
		}
		out[k] = seg
	}
	if err := rows.Err(); err != nil {
		b.t.Fatal(err)
	}
	return out
}

// dropDue drops every closed segment that closed hold ago or more, requiring each dropped.
func (b *testBundle) dropDue(hold time.Duration) []RemovalCount {
	b.t.Helper()
	var out []RemovalCount
	b.lead("retention", func(l *Leader) error {
		due, err := l.DueSegments(b.ctx, hold)
		if err != nil {
			return err
		}
		for _, seg := range due {
			c, dropped, err := l.DropSegment(b.ctx, uuid.NewString(), seg)
			if err != nil || !dropped {
				return fmt.Errorf("drop segment %d: dropped=%v err=%v", seg, dropped, err)
			}
			out = append(out, c...)
		}
		return nil
	})
	return out
}

// Pushes to a queue with a retention rule go to the open segment, the others' to seg 0; a
// dropped segment takes with it only what retention may remove, the rest moving to seg 0 in
// place (same positions, same order): messages of a queue whose retention is longer, or was
// switched off after they were written, and unconsumed ones under completedRetentionSeconds.
func TestSegmentDropKeepsWhatRetentionMayNotRemoveYet(t *testing.T) {
	b := setup(t)
	short, long, off, acked := b.queue+"-short", b.queue+"-long", b.queue+"-off", b.queue+"-acked"
	b.configure(short, func(o *mq.QueueOptions) { o.RetentionEnabled, o.RetentionSeconds = true, 60 })
	b.configure(long, func(o *mq.QueueOptions) { o.RetentionEnabled, o.RetentionSeconds = true, 3600 })
	b.configure(off, func(o *mq.QueueOptions) { o.RetentionEnabled, o.RetentionSeconds = true, 60 })
	b.configure(acked, func(o *mq.QueueOptions) { o.RetentionEnabled, o.CompletedRetentionSeconds = true, 60 })
	b.pushKeysTo(b.queue, "p", "plain") // no retention: seg 0 whatever is open
	seg := b.rotateSegments()
	b.pushKeysTo(short, "p", "s1", "s2")
	b.pushKeysTo(long, "p", "l1", "l2")
	b.pushKeysTo(off, "p", "o1")
	b.pushKeysTo(acked, "p", "a1", "a2")
	b.mustAck(ackOf(b.mustPop(PopRequest{Queue: acked}, "a1"), 0, mq.AckCompleted))
	if got, want := b.segOf(), map[string]int{"plain": 0, "s1": seg, "s2": seg, "l1": seg, "l2": seg, "o1": seg, "a1": seg, "a2": seg}; !maps.Equal(got, want) {
		t.Fatalf("segments %v, want %v", got, want)
	}
	b.configure(off, func(o *mq.QueueOptions) { o.RetentionEnabled = false })

	next := b.rotateSegments()
	b.pushKeysTo(long, "p", "l3") // into the next segment, after l1 and l2
	b.clock.Advance(61 * time.Second)
	counts := b.dropDue(0)
	slices.SortFunc(counts, func(x, y RemovalCount) int { return cmp.Compare(x.Queue+x.Kind, y.Queue+y.Kind) })
	want := []RemovalCount{
		{Queue: acked, Partition: "p", Kind: "completed_retention", Removed: 1},
		{Queue: short, Partition: "p", Kind: "retention", Removed: 2, Unconsumed: 2},
	}
	if !slices.Equal(counts, want) {
		t.Fatalf("removed %+v, want %+v", counts, want)
	}
	if got, want := b.segOf(), map[string]int{"plain": 0, "l1": 0, "l2": 0, "l3": next, "o1": 0, "a2": 0}; !maps.Equal(got, want) {
		t.Fatalf("after the drop: segments %v, want %v", got, want)
	}
	if n := b.texts(`SELECT relname::text FROM pg_class WHERE relname = $1 AND relnamespace = current_schema()::regnamespace`,
		fmt.Sprint("messages_s", seg)); len(n) != 0 {
		t.Fatalf("segment table %v still exists", n)
	}
	b.mustPop(PopRequest{Queue: long, Batch: 10}, "l1", "l2", "l3")
	b.mustPop(PopRequest{Queue: off}, "o1")
	b.mustPop(PopRequest{Queue: acked}, "a2")
}

// A key is taken in its partition whichever segment holds its message, and after the segment
// went, until the dedup window ends (docs/api/concepts.md §4.3).
func TestSegmentKeysStayTakenAcrossSegments(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) {
		o.RetentionEnabled, o.RetentionSeconds, o.DedupWindowSeconds = true, 60, 120
	})
	b.rotateSegments()
	first := b.pushKeys("p", "k")[0]
	b.rotateSegments()
	if r := b.pushRows(row(b.queue, "p", "k"))[0]; r.Status != mq.StatusDuplicate || r.MessageID != first.MessageID {
		t.Fatalf("re-push into the next segment: %+v, want a duplicate of %s", r, first.MessageID)
	}
	b.rotateSegments()
	b.clock.Advance(61 * time.Second)
	b.dropDue(0)
	if got := b.stored(); len(got) != 0 {
		t.Fatalf("stored %v after the drop, want none", got)
	}
	if r := b.pushRows(row(b.queue, "p", "k"))[0]; r.Status != mq.StatusDuplicate || r.MessageID != first.MessageID {
		t.Fatalf("re-push after the drop, inside the window: %+v, want a duplicate of %s", r, first.MessageID)
	}
	b.clock.Advance(60 * time.Second)
	b.retention(1000, 30) // the key's window has ended: its tombstone goes
	if r := b.pushRows(row(b.queue, "p", "k"))[0]; r.Status != mq.StatusQueued {
		t.Fatalf("re-push after the window: %+v, want queued", r)
	}
}

// A dropped message's trace records go with it; a kept one's stay, moved with it.
func TestSegmentDropRemovesTheTracesOfWhatItRemoves(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.RetentionEnabled, o.CompletedRetentionSeconds = true, 60 })
	b.rotateSegments()
	res := b.pushKeys("p", "done", "open")
	b.mustAck(ackOf(b.mustPop(PopRequest{}, "done"), 0, mq.AckCompleted))
	for i, k := range []string{"done", "open"} {
		found, err := b.s.AddTrace(b.ctx, mq.TraceRecord{ID: uuid.NewString(), PartitionID: res[i].PartitionID,
			TransactionID: k, Group: mq.QueueMode, EventType: "info", Data: []byte(`{}`), WorkerID: "w"})
		if err != nil || !found {
			t.Fatalf("trace on %s: found=%v err=%v", k, found, err)
		}
	}
	b.rotateSegments()
	b.clock.Advance(61 * time.Second)
	b.dropDue(0)
	got := b.texts(`SELECT transaction_id FROM traces ORDER BY 1`)
	if !slices.Equal(got, []string{"open"}) {
		t.Fatalf("trace records of %v, want only the kept message's", got)
	}
}

// Segments opened and dropped all the while pushes, pops and acks go on lose, duplicate and
// reorder nothing: each drop moves what it may not remove (here all that is unconsumed, under
// completedRetentionSeconds with the clock moving on) while consumers read across the
// segments, and every message is delivered and acknowledged once, in position order.
func TestSegmentsUnderLoadLoseNothing(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) {
		o.RetentionEnabled, o.CompletedRetentionSeconds, o.LeaseTime = true, 1, 3600
	})
	b.rotateSegments()
	drops := 0
	deliverOnceInOrderBeside(t, b, func(ctx context.Context) error {
		led, err := b.s.TryLead(ctx, "retention", func(l *Leader) error {
			if _, err := l.RotateSegments(ctx, 0, true); err != nil {
				return err
			}
			b.clock.Advance(2 * time.Second)
			due, err := l.DueSegments(ctx, 0)
			for _, seg := range due {
				_, dropped, err := l.DropSegment(ctx, uuid.NewString(), seg)
				if err != nil {
					return err
				}
				if dropped {
					drops++
				}
			}
			return err
		})
		if err == nil && !led {
			err = fmt.Errorf("retention not led")
		}
		return err
	})
	if drops < 3 {
		t.Errorf("only %d segments were dropped during the load", drops)
	}
}

// A drop that cannot get its moment of ACCESS EXCLUSIVE on messages (here a session keeps a
// transaction open that read it) gives up within its tries and changes nothing: the segment,
// its rows and the history are as before, and a later run, the holder gone, drops it.
func TestSegmentDropGivesWayToAHolderOfMessages(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.RetentionEnabled, o.RetentionSeconds = true, 60 })
	b.rotateSegments()
	b.pushKeys("p", "a", "b")
	b.rotateSegments()
	b.clock.Advance(61 * time.Second)

	holder := schemaConn(t, b.ctx)
	tx, err := holder.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(b.ctx, `SELECT count(*) FROM messages`); err != nil {
		t.Fatal(err)
	}
	var dropped bool
	b.lead("retention", func(l *Leader) error {
		due, err := l.DueSegments(b.ctx, 0)
		if err != nil || len(due) != 1 {
			return fmt.Errorf("due segments %v, %v; want one", due, err)
		}
		_, dropped, err = l.DropSegment(b.ctx, uuid.NewString(), due[0])
		return err
	})
	if dropped {
		t.Fatal("the drop passed a session holding messages")
	}
	if got := b.stored(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("stored %v after the drop gave way, want a and b", got)
	}
	if h := b.history(); len(h) != 0 {
		t.Fatalf("retention history %+v after the drop gave way, want none", h)
	}
	if err := tx.Rollback(b.ctx); err != nil {
		t.Fatal(err)
	}
	want := []RemovalCount{{Queue: b.queue, Partition: "p", Kind: "retention", Removed: 2, Unconsumed: 2}}
	if got := b.dropDue(0); !slices.Equal(got, want) {
		t.Fatalf("the later drop removed %+v, want %+v", got, want)
	}
	if got := b.stored(); len(got) != 0 {
		t.Fatalf("stored %v after the later drop, want none", got)
	}
}

// A rotation never lands between two writes of one transaction: a transaction that pushed
// into the open segment holds off the rotation (which gives up within its tries and keeps the
// open segment open), so its next push finds the segment it can route to. Without the lock the
// rotation committed at once, the second push read the new segment as the open one, and its
// session, holding messages locked since the first push, still had the old partition list:
// "no partition of relation messages found for row" (seen under the steady run, where a
// rotation's commit met a push call in the moment before its invalidations went out).
func TestRotationWaitsForAWriterOfMessages(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.RetentionEnabled, o.RetentionSeconds = true, 60 })
	b.pushKeys("p", "created") // the partition exists: the raw pushes below resolve it
	first := b.rotateSegments()

	writer := schemaConn(t, b.ctx)
	tx, err := writer.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(b.ctx) //nolint:errcheck // after the commit, a no-op
	push := func(key string) {
		t.Helper()
		c := pushColumns([]PushRow{row(b.queue, "p", key)})
		args := pushArgs{Queues: c.pairQueues, Partitions: c.pairParts, PairOf: c.pairOf, Keys: c.keys, IDs: c.ids,
			Payloads: c.payloads, Encrypted: c.encrypted, Subs: c.subs, Uncapped: c.uncapped, Now: b.s.nowArg()}
		rows, err := tx.Query(b.ctx, sqlPush, args.args()...)
		if err == nil {
			rows.Close()
			err = rows.Err()
		}
		if err != nil {
			t.Fatalf("push %s in the writer's transaction: %v", key, err)
		}
	}
	push("before")
	if got := b.rotateSegments(); got != first {
		t.Errorf("the rotation opened segment %d while a writer's transaction was open; want %d kept open", got, first)
	}
	push("after")
	if err := tx.Commit(b.ctx); err != nil {
		t.Fatal(err)
	}
	next := b.rotateSegments()
	if next == first {
		t.Fatalf("the rotation after the writer committed kept segment %d open", first)
	}
	b.pushKeys("p", "later")
	if got, want := b.segOf(), map[string]int{"created": 0, "before": first, "after": first, "later": next}; !maps.Equal(got, want) {
		t.Fatalf("segments %v, want %v", got, want)
	}
	b.mustPop(PopRequest{Queue: b.queue, Batch: 10}, "created", "before", "after", "later")
}

// The keys a segment drop leaves behind are written to a tombstone segment, which goes whole
// once every key in it expired (as written); a key whose window was raised since is moved to
// tseg 0 first and stays taken.
func TestTombstoneSegmentGoesOnceItsKeysExpire(t *testing.T) {
	b := setup(t)
	kept, gone := b.queue+"-raised", b.queue+"-plain"
	for _, q := range []string{kept, gone} {
		b.configure(q, func(o *mq.QueueOptions) {
			o.RetentionEnabled, o.RetentionSeconds, o.DedupWindowSeconds = true, 60, 120
		})
	}
	b.rotateSegments()
	first := b.pushKeysTo(kept, "p", "k")[0]
	b.pushKeysTo(gone, "p", "k")
	b.rotateSegments()
	b.clock.Advance(61 * time.Second)
	b.dropDue(0)
	tsegs := b.texts(`SELECT DISTINCT tseg::text FROM dedup_tombstones`)
	if len(tsegs) != 1 || tsegs[0] == "0" {
		t.Fatalf("tombstones in tseg %v, want one tombstone segment", tsegs)
	}
	due := func() []int {
		t.Helper()
		var out []int
		b.lead("retention", func(l *Leader) error {
			var err error
			out, err = l.DueTombstoneSegments(b.ctx)
			return err
		})
		return out
	}
	if d := due(); len(d) != 0 {
		t.Fatalf("tombstone segments due %v while their keys are taken, want none", d)
	}
	b.configure(kept, func(o *mq.QueueOptions) { o.DedupWindowSeconds = 600 })
	b.clock.Advance(60 * time.Second) // 121 s after the pushes: expired as written
	d := due()
	if len(d) != 1 {
		t.Fatalf("tombstone segments due %v, want one", d)
	}
	b.lead("retention", func(l *Leader) error {
		dropped, err := l.DropTombstoneSegment(b.ctx, d[0])
		if err == nil && !dropped {
			err = fmt.Errorf("tombstone segment %d not dropped", d[0])
		}
		return err
	})
	if got := b.texts(`SELECT tseg::text || ':' || transaction_id FROM dedup_tombstones`); !slices.Equal(got, []string{"0:k"}) {
		t.Fatalf("tombstones after the drop %v, want the raised queue's key in tseg 0", got)
	}
	if r := b.pushRows(row(kept, "p", "k"))[0]; r.Status != mq.StatusDuplicate || r.MessageID != first.MessageID {
		t.Fatalf("re-push under the raised window: %+v, want a duplicate of %s", r, first.MessageID)
	}
	if r := b.pushRows(row(gone, "p", "k"))[0]; r.Status != mq.StatusQueued {
		t.Fatalf("re-push after the window: %+v, want queued", r)
	}
	if n := b.texts(`SELECT relname::text FROM pg_class WHERE relname LIKE 'dedup_tombstones_s%' AND relnamespace = current_schema()::regnamespace`); len(n) != 0 {
		t.Fatalf("tombstone segment tables %v left", n)
	}
}
