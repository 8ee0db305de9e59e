package store

import (
	"context"
	"fmt"
	"time"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/tenant"
)

// The queue listings (docs/api/admin-api.md §1, §5.2; dashboard M6), sent as one batch: the
// count and the page then see the same snapshot.

const (
	sqlQueuesTotal = `SELECT total, stats_at FROM qg_queues_total(p_namespace => $1, p_task => $2, p_search => $3)`
	sqlListQueues  = `SELECT * FROM qg_list_queues(p_namespace => $1, p_task => $2, p_search => $3, p_sort => $4,
		p_desc => $5, p_limit => $6, p_offset => $7)`
)

// queueSummaryRow is a row of qg_list_queues; its fields are mq.QueueSummary's.
type queueSummaryRow struct {
	ID         string    `db:"id"`
	Name       string    `db:"name"`
	Namespace  string    `db:"namespace"`
	Task       string    `db:"task"`
	CreatedAt  time.Time `db:"created_at"`
	Partitions int64     `db:"partitions"`
	Total      int64     `db:"total"`
	Pending    int64     `db:"pending"`
	Processing int64     `db:"processing"`
	DeadLetter int64     `db:"dead_letter"`
	MaxTimeLag int64     `db:"max_time_lag"`
	Tenant     *string   `db:"-"` // not a column: filled for the operator's listing below
}

var queueSummaryRows = callOf[queueSummaryRow](sqlListQueues)

// queuesMatchArgs are the parameters of qg_queues_total and the first ones of qg_list_queues.
type queuesMatchArgs struct {
	Namespace, Task, Search any // filters, nil: any
}

func (a queuesMatchArgs) args() []any { return []any{a.Namespace, a.Task, a.Search} }

// listQueuesArgs are the parameters of qg_list_queues.
type listQueuesArgs struct {
	queuesMatchArgs
	Sort          string
	Desc          bool
	Limit, Offset int
}

func (a listQueuesArgs) args() []any {
	return append(a.queuesMatchArgs.args(), a.Sort, a.Desc, a.Limit, a.Offset)
}

// ListQueues returns a page of queues with their counters, how many match in all, and when
// the stats behind the counters were computed.
func (s *Store) ListQueues(ctx context.Context, f mq.QueueListFilter) (mq.QueueList, error) {
	var out mq.QueueList
	match := queuesMatchArgs{Namespace: nullIfEmpty(f.Namespace), Task: nullIfEmpty(f.Task), Search: nullIfEmpty(f.Search)}
	list := listQueuesArgs{queuesMatchArgs: match, Sort: f.Sort, Desc: f.Desc, Limit: f.Page.Limit, Offset: f.Page.Offset}
	out.Queues = []mq.QueueSummary{}
	err := s.queryBatch(ctx,
		batchQuery{sqlQueuesTotal, match.args(), func(r rowScanner) error { return r.Scan(&out.Total, &out.StatsAt) }},
		queueSummaryRows.call(list.args(), func(r queueSummaryRow) { out.Queues = append(out.Queues, mq.QueueSummary(r)) }))
	if err != nil {
		return mq.QueueList{}, fmt.Errorf("list queues: %w", err)
	}
	if _, all := tenant.Of(ctx); all && len(out.Queues) > 0 {
		// The operator's listing spans tenants: each row names its queue's.
		ids := make([]string, len(out.Queues))
		for i, q := range out.Queues {
			ids[i] = q.ID
		}
		tenants := map[string]string{}
		err := s.queryRows(ctx, sqlQueueTenants, []any{ids}, func(r rowScanner) error {
			var id, t string
			if err := r.Scan(&id, &t); err != nil {
				return err
			}
			tenants[id] = t
			return nil
		})
		if err != nil {
			return mq.QueueList{}, fmt.Errorf("list queues: tenants: %w", err)
		}
		for i := range out.Queues {
			t := tenants[out.Queues[i].ID]
			out.Queues[i].Tenant = &t
		}
	}
	return out, nil
}

// sqlQueueTenants reads the tenants of a page of queues.
const sqlQueueTenants = `SELECT q.id::text, q.tenant FROM queues q WHERE q.id = ANY ($1::uuid[])`
