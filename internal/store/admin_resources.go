package store

import (
	"context"
	"fmt"

	"github.com/queen-go/queen/internal/mq"
)

// LabelSummaries groups the queues by task (byTask) or namespace: one page, by label.
func (s *Store) LabelSummaries(ctx context.Context, byTask bool, p mq.Page) ([]mq.LabelSummary, error) {
	out, err := queryAll(ctx, s, `SELECT * FROM qg_label_summaries(p_by_task => $1, p_now => $2) l
		ORDER BY l.label LIMIT $3 OFFSET $4`, []any{byTask, s.nowArg(), p.Limit, p.Offset},
		func(r rowScanner, l *mq.LabelSummary) error {
			return r.Scan(&l.Label, &l.Queues, &l.Partitions, &l.Total, &l.Pending)
		})
	if err != nil {
		return nil, fmt.Errorf("summarise queue labels: %w", err)
	}
	return out, nil
}

// Overview computes the system summary.
func (s *Store) Overview(ctx context.Context) (mq.Overview, error) {
	var o mq.Overview
	c, t, f := &o.Counters, &o.TimeLag, &o.OffsetLag
	_, err := s.queryOne(ctx, "SELECT * FROM qg_overview(p_now => $1)", []any{s.nowArg()},
		&o.Queues, &o.Partitions, &o.Namespaces, &o.Tasks, &c.Total, &c.Unconsumed, &c.Processing, &c.DeadLetter,
		&t.Avg, &t.Median, &t.Min, &t.Max, &f.Avg, &f.Median, &f.Min, &f.Max, &o.IngestedLastMinute)
	if err != nil {
		return o, fmt.Errorf("overview: %w", err)
	}
	return o, nil
}

// deleteQueueAttempts bounds the retries of a queue deletion that lost a deadlock. Writers
// lock in the same order as the deletion, but a pop takes foreign-key share locks on the
// partitions it registers cursors on in its own order; the deletion is the one to retry.
const deleteQueueAttempts = 3

// DeleteQueue removes a queue and everything of it; existed is false when there was none.
func (s *Store) DeleteQueue(ctx context.Context, name string) (existed bool, err error) {
	ctx = Bulk(ctx) // a bulk route: DB_STATEMENT_TIMEOUT for its whole work (docs/api/operations.md §9.1)
	err = retryOnDeadlock(deleteQueueAttempts, func() error {
		_, err := s.queryOne(ctx, "SELECT qg_delete_queue(p_queue => $1)", []any{name}, &existed)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("delete queue %q: %w", name, err)
	}
	return existed, nil
}
