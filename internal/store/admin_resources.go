package store

import (
	"context"
	"fmt"

	"github.com/queen-go/queen/internal/budget"
	"github.com/queen-go/queen/internal/mq"
)

const sqlListLabels = `SELECT * FROM qg_list_labels(p_by_task => $1, p_search => $2, p_sort => $3, p_desc => $4,
	p_limit => $5, p_offset => $6)`

// listLabelsArgs are the parameters of qg_list_labels.
type listLabelsArgs struct {
	ByTask        bool
	Search        any // nil: every label
	Sort          string
	Desc          bool
	Limit, Offset int
}

func (a listLabelsArgs) args() []any {
	return []any{a.ByTask, a.Search, a.Sort, a.Desc, a.Limit, a.Offset}
}

// LabelSummaries groups the queues by task (f.ByTask) or namespace: one page of the labels
// matching f and how many match.
func (s *Store) LabelSummaries(ctx context.Context, f mq.LabelFilter) (mq.LabelList, error) {
	out := mq.LabelList{Labels: []mq.LabelSummary{}}
	a := listLabelsArgs{ByTask: f.ByTask, Search: nullIfEmpty(f.Search), Sort: f.Sort, Desc: f.Desc,
		Limit: f.Page.Limit, Offset: f.Page.Offset}
	err := s.queryBatch(ctx,
		batchQuery{`SELECT qg_labels_total(p_by_task => $1, p_search => $2)`, []any{a.ByTask, a.Search},
			scanInto(&out.Total)},
		batchQuery{sqlListLabels, a.args(), func(r rowScanner) error {
			var l mq.LabelSummary
			if err := r.Scan(&l.Label, &l.Queues, &l.Partitions, &l.Total, &l.Pending); err != nil {
				return err
			}
			out.Labels = append(out.Labels, l)
			return nil
		}})
	if err != nil {
		return mq.LabelList{}, fmt.Errorf("summarise queue labels: %w", err)
	}
	return out, nil
}

// Overview reads the system summary: object counts live, counters and lag from the stats
// job's system row (docs/api/admin-api.md §1, "Freshness"), so its cost does not grow with the
// partitions' messages.
func (s *Store) Overview(ctx context.Context) (mq.Overview, error) {
	var o mq.Overview
	c, t, f := &o.Counters, &o.TimeLag, &o.OffsetLag
	_, err := s.queryOne(ctx, "SELECT * FROM qg_system_overview(p_now => $1)", []any{s.nowArg()},
		&o.Queues, &o.Partitions, &o.Namespaces, &o.Tasks, &c.Total, &c.Unconsumed, &c.Processing, &c.DeadLetter,
		&t.Avg, &t.Median, &t.Min, &t.Max, &f.Avg, &f.Median, &f.Min, &f.Max, &o.IngestedLastMinute, &o.StatsAt)
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
	ctx = budget.Bulk(ctx) // a bulk route: DB_STATEMENT_TIMEOUT for its whole work (docs/api/operations.md §9.1)
	err = retryOnDeadlock(deleteQueueAttempts, func() error {
		_, err := s.queryOne(ctx, "SELECT qg_delete_queue(p_queue => $1)", []any{name}, &existed)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("delete queue %q: %w", name, err)
	}
	return existed, nil
}
