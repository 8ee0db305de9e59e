package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// HotSets are the hot sets qg_compact_hot rewrites, each the tables one TRUNCATE must take
// together: a partition's push state, the consumer state (with the requeued sets and skip
// marks that reference it), and the work index.
var HotSets = []string{"consumers", "partition_heads", "partition_work"}

// HotSet is one hot set's row versions and who would keep a rewrite from happening (qg_hot_sets).
type HotSet struct {
	Name       string
	Live, Dead int64
	// BlockerPID is a session holding a lock on one of the set's tables for more than a
	// second, which a rewrite would wait for in vain (0: none); Blocker says who it is.
	BlockerPID int
	Blocker    string
}

// hotSetRow is a row of qg_hot_sets; its fields are HotSet's.
type hotSetRow struct {
	Name       string `db:"hot_set"`
	Live       int64  `db:"live"`
	Dead       int64  `db:"dead"`
	BlockerPID int    `db:"blocker_pid"`
	Blocker    string `db:"blocker"`
}

var hotSetRows = callOf[hotSetRow](`SELECT hot_set, live, dead, coalesce(blocker_pid, 0) AS blocker_pid,
	coalesce(blocker, '') AS blocker FROM qg_hot_sets()`)

// HotSetStates reads the hot sets' row versions.
func (s *Store) HotSetStates(ctx context.Context) ([]HotSet, error) {
	var out []HotSet
	err := s.queryRows(ctx, hotSetRows.sql, nil, func(r rowScanner) error {
		h, err := hotSetRows.row(r)
		out = append(out, HotSet(h))
		return err
	})
	return out, wrap("hot set states", err)
}

// Compaction outcomes of CompactHotSet.
const (
	CompactDone    = "compacted"
	CompactBusy    = "busy"     // another instance is compacting the set
	CompactLocked  = "locked"   // the tables' locks did not come within the timeout
	CompactTooLong = "too_long" // the rewrite ran past its bound and was rolled back
)

// codeQueryCanceled is PostgreSQL's query_canceled: here, the rewrite's statement_timeout.
const codeQueryCanceled = "57014"

// Compaction is what one CompactHotSet call did: its outcome, the rows it wrote back, and how
// long it held the set's exclusive locks (until the end of the rewrite, before the commit).
type Compaction struct {
	Outcome string
	Rows    int64
	Held    time.Duration
}

// errRewriteTooLong is a rewrite its statement_timeout cancelled (CompactTooLong).
var errRewriteTooLong = errors.New("the rewrite ran past its bound")

// CompactHotSet rewrites one hot set (qg_compact_hot), waiting at most lockTimeout for its
// tables' exclusive locks and holding them at most about holdLimit: the call runs under a
// statement_timeout of both, so a rewrite that would take longer is rolled back, changing
// nothing (CompactTooLong).
func (s *Store) CompactHotSet(ctx context.Context, set string, lockTimeout, holdLimit time.Duration) (Compaction, error) {
	var c Compaction
	var heldMS float64
	// One transaction (inTx: behind a pooler the unit's own), whose statement_timeout bounds the
	// rewrite; past it the rewrite is rolled back and reported, not taken for an unavailable
	// database.
	err := s.inTx(ctx, func(ctx context.Context, tx querier) error {
		bound := strconv.FormatInt(max((lockTimeout+holdLimit).Milliseconds(), 1), 10)
		if _, err := tx.Exec(ctx, "SELECT set_config('statement_timeout', $1, true)", bound); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, "SELECT rows, held_ms FROM qg_compact_hot($1, $2)", set,
			max(int(lockTimeout/time.Millisecond), 1)).Scan(&c.Rows, &heldMS)
		if pgCode(err) == codeQueryCanceled && ctx.Err() == nil {
			return errRewriteTooLong
		}
		return err
	})
	if errors.Is(err, errRewriteTooLong) {
		c.Outcome, err = CompactTooLong, nil
	}
	switch {
	case err != nil:
		return Compaction{}, fmt.Errorf("compact %s: %w", set, err)
	case c.Outcome != "":
		return c, nil
	case c.Rows == -1:
		return Compaction{Outcome: CompactBusy}, nil
	case c.Rows == -2:
		return Compaction{Outcome: CompactLocked}, nil
	}
	c.Outcome, c.Held = CompactDone, time.Duration(heldMS*float64(time.Millisecond))
	return c, nil
}
