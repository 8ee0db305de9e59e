package admin

import (
	"context"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// Queue clear (docs/api/admin-api.md §1.2).

// defaultClearBatch is the batch size before SetClearLimits (RETENTION_BATCH_SIZE's default).
const defaultClearBatch = 1000

// clearLimits bound a clear: messages per batch transaction, and the time after which the
// call stops and answers complete:false (DB_STATEMENT_TIMEOUT; 0: none).
type clearLimits struct {
	batch    int
	deadline time.Duration
}

// SetClearLimits sets the clear's batch size (RETENTION_BATCH_SIZE) and the time a call may
// take before it answers with what its committed batches did (DB_STATEMENT_TIMEOUT). Call it
// before serving.
func (a *Admin) SetClearLimits(batch int, deadline time.Duration) {
	a.clear = clearLimits{batch: batch, deadline: deadline}
}

// ClearQueue removes the messages of queue, or of its one partition when partition is not
// empty, up to each partition's last position when the call started. queueFound and
// partitionFound report unknown names (then nothing is done). Batches commit one by one: once
// the deadline has passed, the batch in flight is cancelled (its messages stay) and the result
// is returned with Complete false; calling again continues.
func (a *Admin) ClearQueue(ctx context.Context, queue, partition string) (res mq.ClearResult, queueFound, partitionFound bool, err error) {
	end := time.Now().Add(a.clear.deadline)
	batch := a.clear.batch
	if batch <= 0 {
		batch = defaultClearBatch
	}
	targets, queueFound, partitionFound, err := a.store.ClearTargets(ctx, queue, partition)
	if err != nil || !partitionFound {
		return res, queueFound, partitionFound, err
	}
	run := newID()
	defer func() {
		if res.MessagesDeleted > 0 {
			a.data.WakeQueues(ctx, queue) // leases were dropped: their pairs are deliverable again
			a.log.Info("queue cleared", "queue", queue, "partition", partition, "run", run,
				"removed", res.MessagesDeleted, "unconsumed", res.UnconsumedDeleted, "complete", res.Complete)
		}
	}()
	for _, t := range targets {
		for done := false; !done; {
			// The server bounds each batch by the time left (see store.ClearBatch), so the
			// batch in flight at the deadline rolls back there and then.
			var left time.Duration
			if a.clear.deadline > 0 {
				if left = time.Until(end); left <= 0 {
					return res, true, true, nil
				}
			}
			var removed, unconsumed int64
			removed, unconsumed, done, err = a.store.ClearBatch(ctx, run, t, batch, left)
			if err != nil {
				if a.clear.deadline > 0 && time.Until(end) <= 0 && ctx.Err() == nil {
					return res, true, true, nil // the deadline passed: report the committed batches
				}
				return res, true, true, err
			}
			res.MessagesDeleted += removed
			res.UnconsumedDeleted += unconsumed
		}
		res.PartitionsCleared++
	}
	res.Complete = true
	return res, true, true, nil
}
