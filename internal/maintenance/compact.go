package maintenance

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
)

// The hot sets' compaction under a pinned snapshot horizon (docs/design.md, "Steady under a
// pinned horizon"): every CompactInterval the instance reads the snapshot horizon and, while
// one is held, the hot sets' row versions, and rewrites each set with enough dead versions.
const (
	// compactPinnedAfter is how old a session's snapshot must be before its horizon counts as
	// held: younger ones end on their own, and VACUUM then catches up.
	compactPinnedAfter = 5 * time.Second
	// compactMinDead and compactDeadPerLive: a set is rewritten once it holds at least
	// compactMinDead dead versions and compactDeadPerLive per live row, so that a lookup walks
	// a few dozen versions at most between rewrites, and a rewrite (which copies every live
	// row) is paid for by the versions it removes. 2,500 and 5 held pops at 94–99 % of their
	// free speed after two minutes of a held horizon; 5,000 and 10 at 71–75 %, 20,000 and 40 at
	// 67 % (fewer rewrites, longer chains), 1,000 and 4 at 64 % (the rewrites' own churn of the
	// catalog; bench/HISTORY.md, "Steady under a pinned horizon").
	compactMinDead     = 2500
	compactDeadPerLive = 5
	// compactLockTimeout bounds the wait for a set's exclusive locks: every request touching
	// its tables queues behind the waiting rewrite.
	compactLockTimeout = 20 * time.Millisecond
	// compactMaxLive and compactMaxHold bound each rewrite, which holds its tables' exclusive
	// locks while it copies every live row, so every push, pop or ack touching them waits
	// that long. A set with more live rows (the statistics' estimate) is not rewritten at all;
	// a rewrite still running after compactMaxHold is cancelled and rolled back, changing
	// nothing. Measured under a held snapshot on a shared two-core machine (docs/operations.md,
	// "A held snapshot horizon"): the consumer set copies 40,000-55,000 rows a second (each row
	// written back checks its two foreign keys), the heads and the work index 80,000-100,000;
	// at 100,000 partitions × 10 groups the consumer set held its locks for 18-24 s, at 2,000
	// × 10 (20,000 rows) for 0.23 s; the bound leaves four times that for a busier server.
	compactMaxLive = 20_000
	compactMaxHold = time.Second
)

// CompactionCount is how often one hot set was rewritten on this instance and how many of its
// attempts found the locks taken (queen_hot_set_compactions_total).
type CompactionCount struct {
	Set                string
	Compacted, Skipped int64
}

// horizonHeld says whether a held horizon keeps VACUUM from removing dead versions of the hot
// tables now: a session's snapshot older than compactPinnedAfter, or a replication slot or
// walsender holding an xmin (their age PostgreSQL records in transaction ids only). A logical
// slot's catalog_xmin does not count: it holds back catalog rows only, so VACUUM and pruning
// keep the hot tables short by themselves, and a rewrite would cost the slot's subscribers a
// TRUNCATE and a hot standby an exclusive lock for nothing.
func horizonHeld(h mq.XminHorizon) bool {
	return h.Past(compactPinnedAfter) || slices.ContainsFunc(h.Replication, mq.ReplicationHorizon.PinsRows)
}

// deadEnough says whether a rewrite of h would remove enough versions to be worth its copy.
func deadEnough(h store.HotSet) bool {
	return h.Dead >= max(compactMinDead, compactDeadPerLive*h.Live)
}

// CompactionCounts reports the rewrites of each hot set on this instance.
func (r *Runner) CompactionCounts() []CompactionCount {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]CompactionCount, 0, len(store.HotSets))
	for _, s := range store.HotSets {
		c := r.compactions[s]
		c.Set = s
		out = append(out, c)
	}
	return out
}

func (r *Runner) compactLoop(ctx context.Context) {
	t := time.NewTicker(r.cfg.CompactInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := r.CompactHotSets(ctx); err != nil && ctx.Err() == nil && !errors.Is(err, mq.ErrUnavailable) {
			r.log.Warn("hot set compaction failed", "err", err)
		}
	}
}

// CompactHotSets checks the hot sets once and, while a horizon is held, rewrites those with
// enough dead versions. A set whose tables a long transaction holds locked is left alone and
// reported once per blocker.
func (r *Runner) CompactHotSets(ctx context.Context) error {
	horizon, err := r.st.XminHorizon(ctx)
	if err != nil || !horizonHeld(horizon) {
		return err
	}
	sets, err := r.st.HotSetStates(ctx)
	if err != nil {
		return err
	}
	for _, h := range sets {
		if !deadEnough(h) {
			continue
		}
		if h.Live > compactMaxLive {
			r.warnOnce(h.Name, "too large", "a held snapshot keeps dead row versions, and the set has too many live rows to be rewritten within its bound",
				"set", h.Name, "live", h.Live, "dead", h.Dead, "max_live", compactMaxLive)
			continue
		}
		if h.BlockerPID != 0 {
			r.mu.Lock()
			first := r.compactBlockers[h.Name] != h.BlockerPID
			r.compactBlockers[h.Name] = h.BlockerPID
			r.mu.Unlock()
			if first {
				r.log.Warn("a held snapshot keeps dead row versions, and a session holding a lock on the tables keeps them from being compacted",
					"set", h.Name, "dead", h.Dead, "live", h.Live, "blocker_pid", h.BlockerPID, "blocker", h.Blocker)
			}
			continue
		}
		start := time.Now()
		res, err := r.st.CompactHotSet(ctx, h.Name, compactLockTimeout, compactMaxHold)
		if err != nil {
			return err
		}
		r.mu.Lock()
		c := r.compactions[h.Name]
		switch res.Outcome {
		case store.CompactDone:
			c.Compacted++
			delete(r.compactWarned, h.Name)
		case store.CompactLocked, store.CompactTooLong:
			c.Skipped++
		}
		r.compactions[h.Name] = c
		r.mu.Unlock()
		if res.Outcome == store.CompactTooLong {
			r.warnOnce(h.Name, "too long", "a hot set's rewrite ran past its bound and was rolled back",
				"set", h.Name, "live", h.Live, "dead", h.Dead, "max_hold", compactMaxHold)
		}
		r.log.Debug("hot set compaction", "set", h.Name, "outcome", res.Outcome, "rows", res.Rows, "held", res.Held,
			"dead", h.Dead, "took", time.Since(start))
	}
	return nil
}

// warnOnce logs msg for set unless the last warning about set was for the same reason.
func (r *Runner) warnOnce(set, reason, msg string, args ...any) {
	r.mu.Lock()
	first := r.compactWarned[set] != reason
	r.compactWarned[set] = reason
	r.mu.Unlock()
	if first {
		r.log.Warn(msg, args...)
	}
}
