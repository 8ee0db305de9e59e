package store

import (
	"context"
	"fmt"

	"github.com/queen-go/queen/internal/mq"
)

// Requeue from the DLQ in redeliver mode and the message retry (docs/api/admin-api.md §2.4,
// §3.2; sql/functions/081_dlq_requeue.sql). The requeued set these fill is served by qg_claim
// (sql/functions/080_requeue.sql).

const sqlDLQRedeliver = `SELECT requeued, skipped_ids, skipped_reasons, queue_names
	FROM qg_dlq_redeliver(p_ids => $1::uuid[], p_now => $2)`

// redeliverRow is the row of qg_dlq_redeliver and qg_dlq_redeliver_matching (Remaining only
// from the latter).
type redeliverRow struct {
	Requeued       int64    `db:"requeued"`
	SkippedIDs     []string `db:"skipped_ids"`
	SkippedReasons []string `db:"skipped_reasons"`
	Queues         []string `db:"queue_names"`
}

// redeliverMatchingRow is the row of qg_dlq_redeliver_matching.
type redeliverMatchingRow struct {
	redeliverRow
	Remaining int64 `db:"remaining"`
}

// result is the answer the row gives.
func (r redeliverRow) result() mq.DLQRequeueResult {
	return mq.DLQRequeueResult{Requeued: r.Requeued, Skipped: skips(r.SkippedIDs, r.SkippedReasons), Queues: r.Queues}
}

var (
	redeliverRows         = callOf[redeliverRow](sqlDLQRedeliver)
	redeliverMatchingRows = callOf[redeliverMatchingRow](sqlDLQRedeliverMatching)
)

// RedeliverDLQEntries requeues the entries ids (canonical UUIDs, each once) in redeliver mode,
// in the order given, in one transaction. Skipped lists the ids kept, with their reasons;
// Queues the queues whose pops may have work now.
func (s *Store) RedeliverDLQEntries(ctx context.Context, ids []string) (mq.DLQRequeueResult, error) {
	var res mq.DLQRequeueResult
	if err := s.queryBatch(ctx, redeliverRows.call([]any{ids, s.nowArg()}, func(r redeliverRow) { res = r.result() })); err != nil {
		return res, fmt.Errorf("requeue dlq entries: %w", err)
	}
	return res, nil
}

const sqlDLQRedeliverMatching = `SELECT requeued, skipped_ids, skipped_reasons, queue_names, remaining
	FROM qg_dlq_redeliver_matching(p_queue => $1, p_group => $2, p_partition => $3, p_error => $4,
	p_from => $5, p_to => $6, p_limit => $7, p_now => $8)`

// dlqRedeliverMatchingArgs are the parameters of qg_dlq_redeliver_matching (see sqlCall).
type dlqRedeliverMatchingArgs struct {
	dlqMatchArgs
	Limit int
	Now   any
}

func (a dlqRedeliverMatchingArgs) args() []any {
	return append(a.dlqMatchArgs.args(), a.Limit, a.Now)
}

// RedeliverDLQMatching requeues in redeliver mode up to limit entries matching f that can be
// redelivered (message stored, group a consumer of the partition), oldest failedAt first, and
// counts those left.
func (s *Store) RedeliverDLQMatching(ctx context.Context, f mq.DLQFilter, limit int) (mq.DLQRequeueResult, error) {
	var res mq.DLQRequeueResult
	args := dlqRedeliverMatchingArgs{dlqMatchArgs: dlqMatch(f), Limit: limit, Now: s.nowArg()}
	if err := s.queryBatch(ctx, redeliverMatchingRows.call(args.args(), func(r redeliverMatchingRow) {
		res = r.result()
		res.Remaining = r.Remaining
	})); err != nil {
		return res, fmt.Errorf("requeue dlq entries: %w", err)
	}
	return res, nil
}

func skips(ids, reasons []string) []mq.DLQSkip {
	out := make([]mq.DLQSkip, len(ids))
	for i := range ids {
		out[i] = mq.DLQSkip{ID: ids[i], Reason: reasons[i]}
	}
	return out
}

const sqlMessageRetry = `SELECT found, consumer_group, action, reason, queue_name
	FROM qg_message_retry(p_pid => $1::uuid, p_key => $2, p_group => $3, p_now => $4)`

// messageRetryRow is a row of qg_message_retry: one group's outcome (found false and no group
// for an unknown message).
type messageRetryRow struct {
	Found  bool    `db:"found"`
	Group  *string `db:"consumer_group"`
	Action string  `db:"action"`
	Reason *string `db:"reason"`
	Queue  string  `db:"queue_name"`
}

var messageRetryRows = callOf[messageRetryRow](sqlMessageRetry)

// messageRetryArgs are the parameters of qg_message_retry (see sqlCall).
type messageRetryArgs struct {
	Pid, Key string
	Group    any // nil: every group of the partition and every group with a DLQ entry
	Now      any
}

func (a messageRetryArgs) args() []any { return []any{a.Pid, a.Key, a.Group, a.Now} }

// RetryMessage makes one message deliverable again for group (every group when empty): its
// DLQ entries requeued in redeliver mode, or a pending retry delay cleared (docs/api/admin-api.md
// §2.4). Groups with nothing to do are left out; found is false for an unknown message, queue
// is the message's queue. partitionID must be a canonical UUID.
func (s *Store) RetryMessage(ctx context.Context, partitionID, transactionID, group string) (out []mq.GroupAction, queue string, found bool, err error) {
	args := messageRetryArgs{Pid: partitionID, Key: transactionID, Group: nullIfEmpty(group), Now: s.nowArg()}
	rows, err := collect(ctx, s, messageRetryRows, args.args(), func(r messageRetryRow) messageRetryRow { return r })
	if err != nil {
		return nil, "", false, fmt.Errorf("retry message: %w", err)
	}
	out = []mq.GroupAction{}
	for _, r := range rows {
		found, queue = true, r.Queue
		if r.Action != "none" {
			out = append(out, mq.GroupAction{Group: deref(r.Group), Action: r.Action, Reason: deref(r.Reason)})
		}
	}
	return out, queue, found, nil
}
