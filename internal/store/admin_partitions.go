package store

import (
	"context"
	"fmt"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// The partition listing (docs/api/admin-api.md §1.1), sent as one batch: the count and the
// page then see the same snapshot.

const (
	sqlPartitionsTotal = `SELECT total, stats_at FROM qg_partitions_total(p_queue => $1, p_namespace => $2, p_task => $3,
		p_search => $4)`
	sqlListPartitions = `SELECT * FROM qg_list_partitions(p_queue => $1, p_namespace => $2, p_task => $3, p_search => $4,
		p_sort => $5, p_desc => $6, p_limit => $7, p_offset => $8)`
)

// partitionRow is a row of qg_list_partitions; its fields are mq.PartitionRow's.
type partitionRow struct {
	ID             string     `db:"id"`
	Name           string     `db:"name"`
	Queue          string     `db:"queue_name"`
	QueueID        string     `db:"queue_id"`
	Namespace      string     `db:"namespace"`
	Task           string     `db:"task"`
	CreatedAt      time.Time  `db:"created_at"`
	Total          int64      `db:"total"`
	Pending        int64      `db:"pending"`
	Processing     int64      `db:"processing"`
	Completed      int64      `db:"completed"`
	DeadLetter     int64      `db:"dead_letter"`
	ConsumerGroups int        `db:"consumer_groups"`
	ActiveLeases   int        `db:"active_leases"`
	MaxTimeLag     int64      `db:"max_time_lag"`
	Oldest         *time.Time `db:"oldest_at"`
	Newest         *time.Time `db:"newest_at"`
	LastActivity   time.Time  `db:"last_activity"`
}

var partitionRows = callOf[partitionRow](sqlListPartitions)

// partitionsMatchArgs are the parameters of qg_partitions_total and the first ones of
// qg_list_partitions (see sqlCall).
type partitionsMatchArgs struct {
	Queue, Namespace, Task, Search any // filters, nil: any
}

func (a partitionsMatchArgs) args() []any { return []any{a.Queue, a.Namespace, a.Task, a.Search} }

// listPartitionsArgs are the parameters of qg_list_partitions.
type listPartitionsArgs struct {
	partitionsMatchArgs
	Sort          string
	Desc          bool
	Limit, Offset int
}

func (a listPartitionsArgs) args() []any {
	return append(a.partitionsMatchArgs.args(), a.Sort, a.Desc, a.Limit, a.Offset)
}

// ListPartitions returns a page of partitions with their counters, how many match in all, and
// when the stats behind the counters were computed (nil before the stats job first ran).
func (s *Store) ListPartitions(ctx context.Context, f mq.PartitionFilter) (rows []mq.PartitionRow, total int64, statsAt *time.Time, err error) {
	match := partitionsMatchArgs{Queue: nullIfEmpty(f.Queue), Namespace: nullIfEmpty(f.Namespace),
		Task: nullIfEmpty(f.Task), Search: nullIfEmpty(f.Search)}
	list := listPartitionsArgs{partitionsMatchArgs: match, Sort: f.Sort, Desc: f.Desc, Limit: f.Page.Limit,
		Offset: f.Page.Offset}
	err = s.queryBatch(ctx,
		batchQuery{sqlPartitionsTotal, match.args(), func(r rowScanner) error { return r.Scan(&total, &statsAt) }},
		partitionRows.call(list.args(), func(r partitionRow) { rows = append(rows, mq.PartitionRow(r)) }))
	if err != nil {
		return nil, 0, nil, fmt.Errorf("list partitions: %w", err)
	}
	return rows, total, statsAt, nil
}
