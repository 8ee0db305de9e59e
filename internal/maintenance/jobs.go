package maintenance

import (
	"context"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
)

// statsBatch is how many partitions one stats statement recomputes; each is a few index
// range counts, so a batch stays well under a second on large queues.
const statsBatch = 500

// retentionFloor is the shortest interval retention runs at on its own.
const retentionFloor = 10 * time.Second

// retentionCadence is the interval retention asks for when the shortest retention of any queue
// is shortest: a twelfth of it, never below retentionFloor; 0 (the configured interval) without
// a queue with retention. RETENTION_INTERVAL stays the longest interval. A run that finds
// nothing due costs a look at the segments and a walk over seg 0's partitions, and a segment
// waits up to one interval for the run that drops it: at RETENTION_INTERVAL's 300 s, a queue
// keeping 120 s held up to 420 s of messages before each run.
func retentionCadence(shortest time.Duration) time.Duration {
	if shortest <= 0 {
		return 0
	}
	return max(shortest/12, retentionFloor)
}

// segmentSpan is how long a message segment stays open (width) and how long after it closed it
// is dropped (hold), given the shortest retention of any queue: a quarter of it and all of it,
// never under retentionFloor. The oldest message of a segment is dropped at about width + hold
// + up to two run intervals (the run that closes it and the one that drops it come at most an
// interval late): at 120 s, 30 + 120 + 2 × 10 s at worst. (A third, with runs every 15 s, kept
// messages up to 3 minutes and 360,000 rows at 2,000 msgs/s: bench/steady.md.) Without any retention the open segment
// closes, and goes (its rows all moved to seg 0) after retentionFloor. The hold is also the
// time a push has to write into a segment after reading that it is the open one.
func segmentSpan(shortest time.Duration) (width, hold time.Duration) {
	return max(shortest/4, retentionFloor), max(shortest, retentionFloor)
}

// segments opens and drops message segments (migration 0023, docs/design.md "Message storage").
func (r *Runner) segments(ctx context.Context, l *store.Leader, run string) ([]store.RemovalCount, error) {
	shortest, err := r.st.ShortestRetention(ctx)
	if err != nil {
		return nil, err
	}
	width, hold := segmentSpan(shortest)
	if _, err := l.RotateSegments(ctx, width, shortest > 0); err != nil {
		return nil, err
	}
	due, err := l.DueSegments(ctx, hold)
	if err != nil {
		return nil, err
	}
	var out []store.RemovalCount
	busy, err := r.dropEach(due, "message segment", func(seg int) (bool, error) {
		counts, dropped, err := l.DropSegment(ctx, run, seg)
		out = append(out, counts...)
		return dropped, err
	})
	if err != nil || busy {
		return out, err
	}
	if due, err = l.DueTombstoneSegments(ctx); err != nil {
		return out, err
	}
	_, err = r.dropEach(due, "tombstone segment", func(seg int) (bool, error) { return l.DropTombstoneSegment(ctx, seg) })
	return out, err
}

// dropEach drops the segments due, oldest first, until one fails or is busy (its brief lock not
// granted: the later ones would wait on the same holder), which it logs and reports as busy.
func (r *Runner) dropEach(due []int, what string, drop func(seg int) (dropped bool, err error)) (busy bool, err error) {
	for _, seg := range due {
		dropped, err := drop(seg)
		switch {
		case err != nil:
			return false, err
		case !dropped:
			r.log.Info(what+" busy; dropping it in a later run", "segment", seg)
			return true, nil
		}
	}
	return false, nil
}

// retention applies the retention rules batch by batch (docs/api/concepts.md §11), then removes
// expired dedup keys, idle empty partitions and old history. A run's removals are recorded
// under one run id in the retention history, in the transaction that removes them.
func (r *Runner) retention(ctx context.Context, l *store.Leader) error {
	run := uuid.NewString()
	removed, err := r.segments(ctx, l, run)
	if err == nil {
		var more []store.RemovalCount
		more, err = drain(ctx, func(after *string) ([]store.RemovalCount, *string, error) {
			return l.RetentionBatch(ctx, run, r.cfg.RetentionBatchSize, after)
		})
		removed = append(removed, more...)
	}
	for _, q := range perQueue(removed) {
		if q.Unconsumed > 0 {
			r.log.Warn("retention removed unconsumed messages", "queue", q.Queue, "removed", q.Removed,
				"unconsumed", q.Unconsumed)
		} else {
			r.log.Info("retention removed messages", "queue", q.Queue, "removed", q.Removed)
		}
	}
	if err != nil {
		return err
	}
	limit := r.cfg.RetentionBatchSize
	// The keys expired by now, not by each batch's now: under a steady load keys expire as fast
	// as the batches remove them, and a loop that chased them never ended, so no later run
	// removed messages again (the steady-state benchmark's table grew from the minute the
	// first keys expired).
	expiredBy := r.st.Now()
	if err := repeat(func() (bool, error) {
		n, err := l.CleanupTombstones(ctx, limit, expiredBy)
		return n >= int64(limit), err
	}); err != nil {
		return err
	}
	if r.cfg.PartitionCleanupDays > 0 {
		if err := repeat(func() (bool, error) {
			n, err := l.CleanupPartitions(ctx, r.cfg.PartitionCleanupDays, limit)
			return n >= int64(limit), err
		}); err != nil {
			return err
		}
	}
	return repeat(func() (bool, error) {
		_, more, err := l.CleanupHistory(ctx, max(r.cfg.StatsHistoryRetentionDays, 1), max(r.cfg.MetricsRetentionDays, 1), limit)
		return more, err
	})
}

// eviction dead-letters and removes messages past their queue's maxWaitTimeSeconds.
func (r *Runner) eviction(ctx context.Context, l *store.Leader) error {
	run := uuid.NewString()
	evicted, err := drain(ctx, func(after *string) ([]store.RemovalCount, *string, error) {
		return l.EvictionBatch(ctx, run, r.cfg.EvictionBatchSize, after)
	})
	for _, q := range perQueue(evicted) {
		r.log.Info("evicted messages past their max wait time to the DLQ", "tenant", q.Tenant, "queue", q.Queue,
			"messages", q.Removed, "dlqEntries", q.DeadLettered)
		if r.cfg.Recorder != nil {
			r.cfg.Recorder.DeadLettered(q.Tenant, q.Queue, q.DeadLettered)
		}
	}
	return err
}

// leaseHousekeeping wakes the parked pops of queues where leases expired or retry delays ended.
func (r *Runner) leaseHousekeeping(ctx context.Context, l *store.Leader) error {
	first := r.cfg.LeaseHousekeepingInterval
	if first <= 0 {
		first = defaultHousekeepingWindow
	}
	h, err := l.LeaseHousekeeping(ctx, r.cfg.WorkerID, first)
	if err == nil && h.ExpiredLeases > 0 && r.cfg.Recorder != nil {
		r.cfg.Recorder.LeasesExpired(h.ExpiredLeases)
	}
	return err
}

// defaultHousekeepingWindow is how far the very first housekeeping run looks back when the
// job has no interval of its own (it only runs on demand then).
const defaultHousekeepingWindow = time.Second // as LEASE_HOUSEKEEPING_INTERVAL_MS defaults

// stats recomputes every partition's counters in batches, then the wider levels.
func (r *Runner) stats(ctx context.Context, l *store.Leader) (mq.StatsRefresh, error) {
	run := uuid.NewString()
	after := ""
	for {
		last, err := l.StatsPartitions(ctx, run, after, statsBatch)
		if err != nil {
			return mq.StatsRefresh{}, err
		}
		if last == "" {
			break
		}
		after = last
	}
	return l.StatsRollup(ctx, run)
}

// drain calls batch along one walk of the partitions, each call where the previous one
// stopped, until the walk is done, and collects the counts. A batch that removed nothing and
// did not move on (what it found due, it could not remove: held by a lease since) ends the
// walk: the next run looks again.
func drain(ctx context.Context, batch func(after *string) ([]store.RemovalCount, *string, error)) ([]store.RemovalCount, error) {
	var all []store.RemovalCount
	var after *string
	for ctx.Err() == nil {
		got, next, err := batch(after)
		if err != nil {
			return all, err
		}
		all = append(all, got...)
		if next == nil || (len(got) == 0 && after != nil && *next == *after) {
			return all, nil
		}
		after = next
	}
	return all, ctx.Err()
}

// repeat calls step while it reports more to do.
func repeat(step func() (more bool, err error)) error {
	for {
		more, err := step()
		if err != nil || !more {
			return err
		}
	}
}

// perQueue sums removal counts per queue, in name order.
func perQueue(cs []store.RemovalCount) []store.RemovalCount {
	type key struct{ tenant, queue string }
	by := map[key]*store.RemovalCount{}
	var out []store.RemovalCount
	for _, c := range cs {
		k := key{c.Tenant, c.Queue}
		s := by[k]
		if s == nil {
			s = &store.RemovalCount{Tenant: c.Tenant, Queue: c.Queue}
			by[k] = s
		}
		s.Removed += c.Removed
		s.Unconsumed += c.Unconsumed
		s.DeadLettered += c.DeadLettered
	}
	for _, s := range by {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Tenant < out[j].Tenant || out[i].Tenant == out[j].Tenant && out[i].Queue < out[j].Queue
	})
	return out
}
