package store

import (
	"context"
	"fmt"
	"time"

	"github.com/queen-go/queen/internal/budget"
	"github.com/queen-go/queen/internal/mq"
)

const sqlListLabels = `SELECT * FROM qg_list_labels(p_by_task => $1, p_search => $2, p_sort => $3, p_desc => $4,
	p_limit => $5, p_offset => $6)`

// labelSummaryRow is a row of qg_list_labels; its fields are mq.LabelSummary's.
type labelSummaryRow struct {
	Label      string `db:"label"`
	Queues     int64  `db:"queues"`
	Partitions int64  `db:"partitions"`
	Total      int64  `db:"total"`
	Pending    int64  `db:"pending"`
}

// overviewRow is the row of qg_system_overview.
type overviewRow struct {
	Queues             int64      `db:"queues"`
	Partitions         int64      `db:"partitions"`
	Namespaces         int64      `db:"namespaces"`
	Tasks              int64      `db:"tasks"`
	Total              int64      `db:"total"`
	Unconsumed         int64      `db:"unconsumed"`
	Processing         int64      `db:"processing"`
	DeadLetter         int64      `db:"dead_letter"`
	TimeAvg            float64    `db:"time_avg"`
	TimeMedian         float64    `db:"time_median"`
	TimeMin            int64      `db:"time_min"`
	TimeMax            int64      `db:"time_max"`
	OffsetAvg          float64    `db:"offset_avg"`
	OffsetMedian       float64    `db:"offset_median"`
	OffsetMin          int64      `db:"offset_min"`
	OffsetMax          int64      `db:"offset_max"`
	IngestedLastMinute int64      `db:"ingested_last_minute"`
	StatsAt            *time.Time `db:"stats_at"`
}

var (
	labelSummaryRows = callOf[labelSummaryRow](sqlListLabels)
	overviewRows     = callOf[overviewRow]("SELECT * FROM qg_system_overview(p_now => $1)")
)

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
		labelSummaryRows.call(a.args(), func(r labelSummaryRow) { out.Labels = append(out.Labels, mq.LabelSummary(r)) }))
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
	err := s.queryBatch(ctx, overviewRows.call([]any{s.nowArg()}, func(r overviewRow) {
		o = mq.Overview{Queues: r.Queues, Partitions: r.Partitions, Namespaces: r.Namespaces, Tasks: r.Tasks,
			Counters:           mq.Counters{Total: r.Total, Unconsumed: r.Unconsumed, Processing: r.Processing, DeadLetter: r.DeadLetter},
			TimeLag:            mq.Lag{Avg: r.TimeAvg, Median: r.TimeMedian, Min: r.TimeMin, Max: r.TimeMax},
			OffsetLag:          mq.Lag{Avg: r.OffsetAvg, Median: r.OffsetMedian, Min: r.OffsetMin, Max: r.OffsetMax},
			IngestedLastMinute: r.IngestedLastMinute, StatsAt: r.StatsAt}
	}))
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
