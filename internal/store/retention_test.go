package store

// The maintenance functions (090_maintenance.sql, docs/api/concepts.md §11): retention, eviction,
// tombstone and partition cleanup, called the way internal/maintenance calls them, with "now"
// from the test clock. Moved from internal/httpapi/status_retention_test.go and
// status_eviction_test.go.

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queen-go/queen/internal/mq"
)

// lead runs fn as the leader of job, requiring that this store led it.
func (b *testBundle) lead(job string, fn func(*Leader) error) {
	b.t.Helper()
	led, err := b.s.TryLead(b.ctx, job, fn)
	if err != nil || !led {
		b.t.Fatalf("%s: led=%v err=%v", job, led, err)
	}
}

// storages runs test once with the messages in seg 0, removed row by row, and once in a
// message segment that each retention run closes and drops whole at once (a hold of 0, which
// the job's own schedule never uses): the retention rules must give the same outcome both ways.
func storages(t *testing.T, test func(t *testing.T, b *testBundle)) {
	for _, segmented := range []bool{false, true} {
		t.Run(fmt.Sprint("segmented=", segmented), func(t *testing.T) {
			b := setup(t)
			if segmented {
				b.segmented = true
				b.rotateSegments()
			}
			test(t, b)
		})
	}
}

// rotateSegments closes the open message segment, if any, and opens the next.
func (b *testBundle) rotateSegments() int {
	b.t.Helper()
	var seg int
	b.lead("retention", func(l *Leader) error {
		var err error
		seg, err = l.RotateSegments(b.ctx, 0, true)
		return err
	})
	return seg
}

// retention runs the retention job as internal/maintenance does: for a segmented bundle the
// segments first (the open one closed and, with every other closed one, dropped), then removal
// batches of limit under one run id along one walk of the partitions, then tombstone and
// partition cleanup.
func (b *testBundle) retention(limit, partitionCleanupDays int) {
	b.t.Helper()
	b.lead("retention", func(l *Leader) error {
		run := uuid.NewString()
		if b.segmented {
			if _, err := l.RotateSegments(b.ctx, 0, true); err != nil {
				return err
			}
			due, err := l.DueSegments(b.ctx, 0)
			if err != nil {
				return err
			}
			for _, seg := range due {
				if _, dropped, err := l.DropSegment(b.ctx, run, seg); err != nil || !dropped {
					return fmt.Errorf("drop segment %d: dropped=%v err=%v", seg, dropped, err)
				}
			}
			if due, err = l.DueTombstoneSegments(b.ctx); err != nil {
				return err
			}
			for _, seg := range due {
				if dropped, err := l.DropTombstoneSegment(b.ctx, seg); err != nil || !dropped {
					return fmt.Errorf("drop tombstone segment %d: dropped=%v err=%v", seg, dropped, err)
				}
			}
		}
		if err := walk(func(after *string) ([]RemovalCount, *string, error) {
			return l.RetentionBatch(b.ctx, run, limit, after)
		}); err != nil {
			return err
		}
		if _, err := l.CleanupTombstones(b.ctx, 1000, b.clock.Now()); err != nil {
			return err
		}
		_, err := l.CleanupPartitions(b.ctx, partitionCleanupDays, 1000)
		return err
	})
}

// eviction runs the eviction job: batches of limit along one walk of the partitions.
func (b *testBundle) eviction(limit int) {
	b.t.Helper()
	b.lead("eviction", func(l *Leader) error {
		run := uuid.NewString()
		return walk(func(after *string) ([]RemovalCount, *string, error) {
			return l.EvictionBatch(b.ctx, run, limit, after)
		})
	})
}

// walk calls batch from the first partition until it reports the walk done, failing after far
// more batches than any test needs (a walk that never ends).
func walk(batch func(after *string) ([]RemovalCount, *string, error)) error {
	var after *string
	for range 10000 {
		_, next, err := batch(after)
		if err != nil || next == nil {
			return err
		}
		after = next
	}
	return errors.New("the walk did not end")
}

// stored lists the keys of the stored messages of the test's queue, sorted.
func (b *testBundle) stored() []string {
	b.t.Helper()
	return b.texts(`SELECT m.transaction_id FROM messages m JOIN partitions p ON p.id = m.partition_id
		JOIN queues q ON q.id = p.queue_id WHERE q.name = $1 ORDER BY 1`, b.queue)
}

// history is the retention history, summed per partition and kind over runs.
func (b *testBundle) history() []RemovalCount {
	b.t.Helper()
	var out []RemovalCount
	rows, err := b.s.pool.Query(b.ctx, `SELECT queue_name, partition_name, kind, sum(removed)::bigint,
		sum(unconsumed)::bigint, sum(dead_lettered)::bigint FROM retention_history
		GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`)
	if err != nil {
		b.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var r RemovalCount
		if err := rows.Scan(&r.Queue, &r.Partition, &r.Kind, &r.Removed, &r.Unconsumed, &r.DeadLettered); err != nil {
			b.t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// Consumed messages older than completedRetentionSeconds go; unconsumed ones stay, whatever
// their age; the removal is recorded; a removed message's key stays taken until its window ends.
func TestRetentionRemovesConsumedMessages(t *testing.T) {
	storages(t, func(t *testing.T, b *testBundle) {
		b.configure(b.queue, func(o *mq.QueueOptions) {
			o.RetentionEnabled, o.CompletedRetentionSeconds, o.DedupWindowSeconds = true, 60, 120
		})
		b.pushKeys("p", "a", "b", "c")
		p := b.mustPop(PopRequest{Batch: 2}, "a", "b")
		b.mustAck(ackOf(p, 1, mq.AckCompleted))

		b.clock.Advance(59 * time.Second)
		b.retention(1000, 30)
		if got := b.stored(); !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Fatalf("before completedRetentionSeconds: stored %v, want all three", got)
		}

		b.clock.Advance(2 * time.Second)
		b.retention(1000, 30)
		if got := b.stored(); !slices.Equal(got, []string{"c"}) {
			t.Fatalf("stored %v, want only the unconsumed c", got)
		}
		want := []RemovalCount{{Queue: b.queue, Partition: "p", Kind: "completed_retention", Removed: 2}}
		if got := b.history(); !slices.Equal(got, want) {
			t.Fatalf("retention history %+v, want %+v", got, want)
		}
		if r := b.pushRows(row(b.queue, "p", "a"))[0]; r.Status != mq.StatusDuplicate {
			t.Fatalf("re-push of a removed key inside its window: %q, want duplicate", r.Status)
		}
		b.mustPop(PopRequest{Batch: 10}, "c")

		b.clock.Advance(60 * time.Second) // a's window (120 s from its creation) has ended
		b.retention(1000, 30)
		if r := b.pushRows(row(b.queue, "p", "a"))[0]; r.Status != mq.StatusQueued {
			t.Fatalf("re-push of a removed key after its window: %q, want queued", r.Status)
		}
	})
}

// retentionSeconds removes old messages consumed or not, and says how many were unconsumed;
// a message in a live leased batch is left alone and can still be acked.
func TestRetentionSecondsSparesLiveBatches(t *testing.T) {
	storages(t, func(t *testing.T, b *testBundle) {
		b.configure(b.queue, func(o *mq.QueueOptions) { o.RetentionEnabled, o.RetentionSeconds, o.LeaseTime = true, 60, 600 })
		b.pushKeys("p", "a", "b", "c")
		b.pushKeys("q", "x", "y")
		held := b.mustPop(PopRequest{Partition: "p"}, "a") // leased for 600 s

		b.clock.Advance(61 * time.Second)
		b.retention(1000, 30)
		if got := b.stored(); !slices.Equal(got, []string{"a"}) {
			t.Fatalf("stored %v, want only a, which a live lease holds", got)
		}
		want := []RemovalCount{
			{Queue: b.queue, Partition: "p", Kind: "retention", Removed: 2, Unconsumed: 2},
			{Queue: b.queue, Partition: "q", Kind: "retention", Removed: 2, Unconsumed: 2},
		}
		if got := b.history(); !slices.Equal(got, want) {
			t.Fatalf("retention history %+v, want %+v", got, want)
		}
		b.mustAck(ackOf(held, 0, mq.AckCompleted))
		if r := b.pushRows(row(b.queue, "q", "x"))[0]; r.Status != mq.StatusDuplicate {
			t.Fatalf("re-push of a removed key: %q, want duplicate", r.Status)
		}
	})
}

// Without retentionEnabled neither rule applies, however old the messages.
func TestRetentionNeedsRetentionEnabled(t *testing.T) {
	storages(t, func(t *testing.T, b *testBundle) {
		b.configure(b.queue, func(o *mq.QueueOptions) { o.RetentionSeconds, o.CompletedRetentionSeconds = 1, 1 })
		b.pushKeys("p", "a", "b")
		b.mustAck(ackOf(b.mustPop(PopRequest{}, "a"), 0, mq.AckCompleted))
		b.clock.Advance(time.Hour)
		b.retention(1000, 30)
		if got := b.stored(); !slices.Equal(got, []string{"a", "b"}) {
			t.Fatalf("stored %v, want both messages", got)
		}
		if got := b.history(); len(got) != 0 {
			t.Fatalf("retention history %+v, want none", got)
		}
	})
}

// Empty partitions idle for PARTITION_CLEANUP_DAYS go; partitions that hold messages stay.
func TestRetentionDeletesIdleEmptyPartitions(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, nil) // creates the empty Default partition
	b.pushKeys("p", "a")
	b.clock.Advance(29 * 24 * time.Hour)
	b.retention(1000, 30)
	if got := b.partitionNames(b.queue); !slices.Equal(got, []string{"Default", "p"}) {
		t.Fatalf("after 29 days: partitions %v, want both", got)
	}
	b.clock.Advance(2 * 24 * time.Hour)
	b.retention(1000, 30)
	if got := b.partitionNames(b.queue); !slices.Equal(got, []string{"p"}) {
		t.Fatalf("after 31 days: partitions %v, want only p", got)
	}
}

// Batches of one message: the job drains batch after batch, and partitions with nothing due
// (here: no consumer, so nothing is consumed) neither stop it nor use up its batches.
func TestRetentionDrainsInSmallBatches(t *testing.T) {
	storages(t, func(t *testing.T, b *testBundle) {
		b.configure(b.queue, func(o *mq.QueueOptions) { o.RetentionEnabled, o.CompletedRetentionSeconds = true, 60 })
		for i := range 5 {
			b.pushKeys(fmt.Sprintf("unread%d", i), fmt.Sprintf("u%d", i))
		}
		b.pushKeys("p", "a", "b", "c")
		b.mustAck(ackOf(b.mustPop(PopRequest{Partition: "p", Batch: 3}, "a", "b", "c"), 2, mq.AckCompleted))
		b.clock.Advance(61 * time.Second)
		b.retention(1, 30)
		if got := b.stored(); !slices.Equal(got, []string{"u0", "u1", "u2", "u3", "u4"}) {
			t.Fatalf("stored %v, want the five unread messages", got)
		}
		want := []RemovalCount{{Queue: b.queue, Partition: "p", Kind: "completed_retention", Removed: 3}}
		if got := b.history(); !slices.Equal(got, want) {
			t.Fatalf("retention history %+v, want 3 removed in batches of one", got)
		}
	})
}

// Eviction: unconsumed messages older than maxWaitTimeSeconds are dead-lettered — once for
// every consumer that had not consumed them, under __QUEUE_MODE__ when the partition has none —
// and removed; never silently, never from a live leased batch.
func TestEvictionDeadLettersThenRemoves(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.MaxWaitTimeSeconds, o.LeaseTime = 30, 600 })
	b.pushKeys("shared", "s1", "s2", "s3")
	held := b.mustPop(PopRequest{Partition: "shared"}, "s1") // queue mode leases s1 for 600 s
	g1 := b.mustPop(PopRequest{Partition: "shared", Group: "g1", Batch: 2}, "s1", "s2")
	b.mustAck(ackOf(g1, 1, mq.AckCompleted)) // g1 consumed s1 and s2
	// Created after g1 registered, so no group has a cursor on it (docs/api/concepts.md §5.3).
	b.pushKeys("lonely", "l1", "l2")

	b.clock.Advance(31 * time.Second)
	b.pushKeys("lonely", "fresh") // not yet 30 s old when the job runs
	b.eviction(1000)

	if got := b.stored(); !slices.Equal(got, []string{"fresh", "s1"}) {
		t.Fatalf("stored %v, want [fresh s1]: s1 is in a live leased batch, fresh is young", got)
	}
	var got []string
	for _, e := range b.dlq(b.queue) {
		if e.Error != "Max wait time exceeded" {
			t.Errorf("DLQ entry %s: error %q", e.TransactionID, e.Error)
		}
		got = append(got, e.TransactionID+"/"+e.Group)
	}
	sort.Strings(got)
	if want := []string{"l1/__QUEUE_MODE__", "l2/__QUEUE_MODE__", "s2/__QUEUE_MODE__", "s3/__QUEUE_MODE__", "s3/g1"}; !slices.Equal(got, want) {
		t.Fatalf("DLQ entries %v, want %v", got, want)
	}
	wantHistory := []RemovalCount{
		{Queue: b.queue, Partition: "lonely", Kind: "max_wait_time_eviction", Removed: 2, DeadLettered: 2},
		{Queue: b.queue, Partition: "shared", Kind: "max_wait_time_eviction", Removed: 2, DeadLettered: 3},
	}
	if h := b.history(); !slices.Equal(h, wantHistory) {
		t.Fatalf("retention history %+v, want %+v", h, wantHistory)
	}

	b.mustAck(ackOf(held, 0, mq.AckCompleted)) // the spared batch is still the holder's to ack
	if r := b.pushRows(row(b.queue, "lonely", "l1"))[0]; r.Status != mq.StatusDuplicate {
		t.Fatalf("re-push of an evicted key inside its window: %q, want duplicate", r.Status)
	}
	b.noPop(PopRequest{Partition: "shared", Group: "g1"})
}

// Without maxWaitTimeSeconds nothing is evicted, however old.
func TestEvictionNeedsMaxWaitTime(t *testing.T) {
	b := setup(t)
	b.pushKeys("p", "a")
	b.clock.Advance(24 * time.Hour)
	b.eviction(1000)
	if got := b.stored(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("stored %v, want [a]", got)
	}
	if got := b.dlq(b.queue); len(got) != 0 {
		t.Fatalf("DLQ holds %+v, want none", got)
	}
}

// A run removes what is due in every partition with batches far smaller than the number of
// partitions, looking at each partition about once: a batch goes on where the previous one
// stopped, not from the first partition again (which made a run's cost partitions × batches:
// at 5,000 partitions retention fell behind 2,000 msgs/s).
func TestRetentionRunWalksEachPartitionOnce(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.RetentionEnabled, o.RetentionSeconds = true, 60 })
	const parts, limit = 200, 10
	var rows []PushRow
	for p := range parts {
		rows = append(rows, row(b.queue, fmt.Sprint("p", p), fmt.Sprint("a", p)), row(b.queue, fmt.Sprint("p", p), fmt.Sprint("b", p)))
	}
	b.pushRows(rows...)
	b.clock.Advance(61 * time.Second)
	before := indexScans(t, b.s, "messages")
	b.retention(limit, 30)
	if got := b.stored(); len(got) != 0 {
		t.Fatalf("%d messages left after the run, want none", len(got))
	}
	// Each partition: its walk, and the removal's lookup and delete of its two messages.
	n := indexScans(t, b.s, "messages") - before
	if n > 8*parts {
		t.Fatalf("a run over %d partitions in batches of %d scanned the indexes of messages %d times; want a few per partition", parts, limit, n)
	}
}

// The dedup keys a cleanup of tseg 0 removes (those of messages removed row by row) are those
// expired by the instant it is given, not by each batch's own clock: a retention run passes its start, so its loop over full batches ends
// although keys go on expiring as fast as it removes them.
func TestCleanupTombstonesStopsAtTheGivenInstant(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) {
		o.RetentionEnabled, o.RetentionSeconds, o.DedupWindowSeconds = true, 10, 60
	})
	b.pushKeys("p", "early")
	b.clock.Advance(30 * time.Second)
	b.pushKeys("p", "late")
	b.clock.Advance(11 * time.Second)
	b.retention(1000, 30)             // both removed; their keys stay taken until 60 s after each
	b.clock.Advance(30 * time.Second) // early's key expired 11 s ago, late's expires in 19 s
	expiredBy := b.clock.Now()
	b.clock.Advance(time.Hour) // the batches' own clock: every key expired
	b.lead("retention", func(l *Leader) error {
		_, err := l.CleanupTombstones(b.ctx, 1000, expiredBy)
		return err
	})
	got := b.texts(`SELECT t.transaction_id FROM dedup_tombstones t JOIN partitions p ON p.id = t.partition_id
		JOIN queues q ON q.id = p.queue_id WHERE q.name = $1 ORDER BY 1`, b.queue)
	if !slices.Equal(got, []string{"late"}) {
		t.Fatalf("dedup keys left %v, want only late's (expired after the given instant)", got)
	}
}
