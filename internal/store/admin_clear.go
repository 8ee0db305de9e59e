package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/queen-go/queen/internal/budget"
)

// Queue clear (docs/api/admin-api.md §1.2): the targets are read once, then each partition is
// cleared batch by batch, every batch its own transaction (sql/functions/077_admin_clear.sql).

// ClearTarget is a partition to clear and its last position when the clear started.
type ClearTarget struct {
	PartitionID string
	Upto        int64
}

// ClearTargets lists the partitions of queue to clear (only the one named partition when it is
// not empty). queueFound and partitionFound report unknown names.
func (s *Store) ClearTargets(ctx context.Context, queue, partition string) (targets []ClearTarget, queueFound, partitionFound bool, err error) {
	rows, err := collect(ctx, s, clearTargetRows, []any{queue, nullIfEmpty(partition)},
		func(r clearTargetRow) clearTargetRow { return r })
	if err != nil {
		return nil, false, false, fmt.Errorf("clear %q: %w", queue, err)
	}
	for _, r := range rows {
		queueFound = r.QueueFound
		if r.PartitionID != nil {
			targets = append(targets, ClearTarget{PartitionID: *r.PartitionID, Upto: *r.Upto})
		}
	}
	// A queue without partitions clears nothing; only a named partition can be missing.
	return targets, queueFound, queueFound && (partition == "" || len(targets) > 0), nil
}

// clearTargetRow is a row of qg_clear_targets: whether the queue exists, and a partition to
// clear (none: NULL) with its last position.
type clearTargetRow struct {
	QueueFound  bool    `db:"queue_found"`
	PartitionID *string `db:"partition_id"`
	Upto        *int64  `db:"upto"`
}

// clearBatchRow is the row of qg_clear_batch.
type clearBatchRow struct {
	Removed    int64 `db:"removed"`
	Unconsumed int64 `db:"unconsumed"`
	Done       bool  `db:"done"`
}

var (
	clearTargetRows = callOf[clearTargetRow]("SELECT * FROM qg_clear_targets(p_queue => $1, p_partition => $2)")
	clearBatchRows  = callOf[clearBatchRow](sqlClearBatch)
)

const sqlClearBatch = `SELECT removed, unconsumed, done FROM qg_clear_batch(p_run => $1::uuid, p_pid => $2::uuid,
	p_upto => $3, p_limit => $4, p_now => $5)`

// clearBatchArgs are the parameters of qg_clear_batch (see sqlCall).
type clearBatchArgs struct {
	Run, Pid string
	Upto     int64
	Limit    int
	Now      any
}

func (a clearBatchArgs) args() []any { return []any{a.Run, a.Pid, a.Upto, a.Limit, a.Now} }

// ClearBatch removes up to limit messages of target and records them under run in the
// retention history; done is true once nothing of the target is left. A timeout above zero
// bounds the batch on the server (statement_timeout of its transaction): cancelling only the
// context would drop the connection while the backend, still queued behind a lock, went on
// to run the batch and hold the partition after the caller gave up.
func (s *Store) ClearBatch(ctx context.Context, run string, t ClearTarget, limit int, timeout time.Duration) (removed, unconsumed int64, done bool, err error) {
	args := clearBatchArgs{Run: run, Pid: t.PartitionID, Upto: t.Upto, Limit: limit, Now: s.nowArg()}
	err = s.inTx(budget.Bulk(ctx), func(ctx context.Context, tx querier) error {
		if timeout > 0 {
			ms := strconv.FormatInt(max(timeout.Milliseconds(), 1), 10)
			if _, err := tx.Exec(ctx, "SELECT set_config('statement_timeout', $1, true)", ms); err != nil {
				return err
			}
		}
		r, err := clearBatchRows.one(tx.Query(ctx, sqlClearBatch, args.args()...))
		removed, unconsumed, done = r.Removed, r.Unconsumed, r.Done
		return err
	})
	if err != nil {
		return 0, 0, false, fmt.Errorf("clear batch: %w", err)
	}
	return removed, unconsumed, done, nil
}
