package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
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

// HotSetStates reads the hot sets' row versions.
func (s *Store) HotSetStates(ctx context.Context) ([]HotSet, error) {
	var out []HotSet
	err := s.queryRows(ctx, "SELECT hot_set, live, dead, coalesce(blocker_pid, 0), coalesce(blocker, '') FROM qg_hot_sets()",
		nil, func(r rowScanner) error {
			var h HotSet
			err := r.Scan(&h.Name, &h.Live, &h.Dead, &h.BlockerPID, &h.Blocker)
			out = append(out, h)
			return err
		})
	return out, wrap("hot set states", err)
}

// Compaction outcomes of CompactHotSet.
const (
	CompactDone   = "compacted"
	CompactBusy   = "busy"   // another instance is compacting the set
	CompactLocked = "locked" // the tables' locks did not come within the timeout
)

// CompactHotSet rewrites one hot set (qg_compact_hot), waiting at most lockTimeout for its
// tables' exclusive locks; rows is how many rows it wrote back.
func (s *Store) CompactHotSet(ctx context.Context, set string, lockTimeout time.Duration) (outcome string, rows int64, err error) {
	err = s.withConn(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		return c.QueryRow(ctx, "SELECT qg_compact_hot($1, $2)", set, max(int(lockTimeout/time.Millisecond), 1)).Scan(&rows)
	})
	switch {
	case err != nil:
		return "", 0, fmt.Errorf("compact %s: %w", set, err)
	case rows == -1:
		return CompactBusy, 0, nil
	case rows == -2:
		return CompactLocked, 0, nil
	}
	return CompactDone, rows, nil
}
