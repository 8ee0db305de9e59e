package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

var (
	sqlStatusCounts    = query("status_counts")
	sqlStatusQueueList = query("status_queue_list")
	sqlStatusTopErrors = query("status_top_errors")
	sqlStatusThrough   = query("status_throughput")
	sqlStatusWindow    = query("status_window")
	sqlStatusWorkers   = query("status_workers")
)

// StatusOverview reads the status of the queues matching f from the stats tables and the
// per-minute metrics between from and to, in buckets of bucketMinutes: one round trip.
func (s *Store) StatusOverview(ctx context.Context, f mq.QueueFilter, from, to time.Time, bucketMinutes int) (mq.StatusOverview, error) {
	var o mq.StatusOverview
	fa := filterArgs(f)
	err := s.queryBatch(ctx,
		batchQuery{sqlStatusCounts, fa, func(r rowScanner) error {
			c := &o.Counters
			return r.Scan(&c.Total, &c.Unconsumed, &c.Processing, &c.DeadLetter, &o.DLQPartitions,
				&o.ActiveLeases, &o.LeasedPartitions, &o.LeasedMessages, &o.StatsAt)
		}},
		batchQuery{sqlStatusQueueList, append(append([]any{}, fa...), from, to), func(r rowScanner) error {
			var q mq.QueueRef
			err := r.Scan(&q.ID, &q.Name, &q.Namespace, &q.Task, &q.Partitions, &q.Consumed)
			o.Queues = append(o.Queues, q)
			return err
		}},
		batchQuery{sqlStatusTopErrors, fa, func(r rowScanner) error {
			var e mq.ErrorCount
			err := r.Scan(&e.Error, &e.Count)
			o.TopErrors = append(o.TopErrors, e)
			return err
		}},
		batchQuery{sqlStatusThrough, append([]any{from, to, bucketMinutes}, fa...), func(r rowScanner) error {
			var p mq.ThroughputPoint
			err := r.Scan(&p.At, &p.Ingested, &p.Processed, &p.Popped, &p.AvgLagMs, &p.MaxLagMs, &p.DBErrors,
				&p.AckFailed, &p.DLQ, &p.CPUUserPct, &p.CPUSysPct, &p.RSSBytes, &p.PoolActive, &p.PoolIdle, &p.PoolSize)
			o.Throughput = append(o.Throughput, p)
			return err
		}},
		batchQuery{sqlStatusWindow, append([]any{from, to}, fa...), func(r rowScanner) error {
			w := &o.Window
			return r.Scan(&w.PushRequests, &w.PopRequests, &w.AckRequests, &w.PushMessages, &w.PopMessages,
				&w.AckMessages, &w.AckSuccess, &w.AckFailed, &w.DLQ, &w.DBErrors)
		}},
		batchQuery{sqlStatusWorkers, []any{from, to}, func(r rowScanner) error {
			var w mq.WorkerSeen
			err := r.Scan(&w.Hostname, &w.WorkerID, &w.PID, &w.LastSeen)
			o.Workers = append(o.Workers, w)
			return err
		}},
	)
	return o, wrap("status", err)
}

var sqlStatusQueue = query("status_queue")

const (
	sqlQueuePartitionCount = `SELECT qg_queue_partition_count(p_queue => $1, p_search => $2)`
	sqlQueuePartitionPage  = `SELECT * FROM qg_queue_partition_page(p_queue => $1, p_search => $2, p_sort => $3,
		p_desc => $4, p_limit => $5, p_offset => $6)`
	sqlQueueRow = `SELECT qg_queue_row(p_queue => $1)`
)

// queuePartitionPageArgs are the parameters of qg_queue_partition_page.
type queuePartitionPageArgs struct {
	Queue         string
	Search        any // nil: every partition
	Sort          string
	Desc          bool
	Limit, Offset int
}

func (a queuePartitionPageArgs) args() []any {
	return []any{a.Queue, a.Search, a.Sort, a.Desc, a.Limit, a.Offset}
}

// StatusQueue reads one queue by name with its 16 options, its totals, one page of its
// partitions matching f and how many match; found is false when there is no such queue.
// Counters come from the stats job. The statements go as one batch, so they see one snapshot.
func (s *Store) StatusQueue(ctx context.Context, name string, f mq.PartitionPage) (q mq.QueueStatus, found bool, err error) {
	var row []byte
	page := queuePartitionPageArgs{Queue: name, Search: nullIfEmpty(f.Search), Sort: f.Sort, Desc: f.Desc,
		Limit: f.Page.Limit, Offset: f.Page.Offset}
	q.Partitions = []mq.PartitionStatus{}
	err = s.queryBatch(ctx,
		batchQuery{sqlStatusQueue, []any{name}, func(r rowScanner) error {
			found = true
			t := &q.Totals
			return r.Scan(&q.ID, &q.Name, &q.Namespace, &q.Task, &q.Priority, &q.CreatedAt, &q.LeaseTime,
				&q.RetryLimit, &q.RetryDelay, &q.TTL, &q.MaxSize, &q.DeadLetterQueue, &t.Total, &t.Unconsumed,
				&t.Processing, &t.DeadLetter)
		}},
		batchQuery{sqlQueueRow, []any{name}, scanInto(&row)},
		batchQuery{sqlQueuePartitionCount, []any{name, page.Search}, scanInto(&q.PartitionCount)},
		batchQuery{sqlQueuePartitionPage, page.args(), func(r rowScanner) error {
			var p mq.PartitionStatus
			var pending int64
			c := &p.Counters
			err := r.Scan(&p.ID, &p.Name, &p.CreatedAt, &c.Total, &pending, &c.Processing, &c.DeadLetter,
				&p.ConsumerGroups, &p.ActiveLeases, &p.Consumed, &p.Batches, &p.LastActivity, &p.Oldest, &p.Newest,
				&p.MaxTimeLag)
			c.Unconsumed = pending + c.Processing
			q.Partitions = append(q.Partitions, p)
			return err
		}},
	)
	if err == nil && found {
		q.Options, err = optionsFromRow(row)
	}
	return q, found, wrap("status queue", err)
}

// optionsFromRow reads the 16 options from a queue row as JSON (column names as keys), by the
// columns mq.OptionTable names, so the list of options is kept in one place.
func optionsFromRow(row []byte) (mq.QueueOptions, error) {
	var o mq.QueueOptions
	var cols map[string]json.RawMessage
	if err := json.Unmarshal(row, &cols); err != nil {
		return o, fmt.Errorf("queue row: %w", err)
	}
	for _, opt := range mq.OptionTable {
		var err error
		if opt.IsBool() {
			err = json.Unmarshal(cols[opt.Column], opt.Bool(&o))
		} else {
			err = json.Unmarshal(cols[opt.Column], opt.Int(&o))
		}
		if err != nil {
			return o, fmt.Errorf("queue option %s: %w", opt.Key, err)
		}
	}
	return o, nil
}

var (
	sqlQueueExists    = query("queue_exists")
	sqlStatusMessages = query("status_queue_messages")
)

// StatusQueueMessages lists a queue's stored messages, newest first, with their state; found
// is false when there is no such queue.
func (s *Store) StatusQueueMessages(ctx context.Context, queue string, limit, offset int) (out []mq.QueueMessage, found bool, err error) {
	err = s.queryBatch(ctx,
		batchQuery{sqlQueueExists, []any{queue}, scanInto(&found)},
		batchQuery{sqlStatusMessages, statusMessagesArgs{Queue: queue, Limit: limit, Offset: offset, Now: s.nowArg()}.args(), func(r rowScanner) error {
			var m mq.QueueMessage
			err := r.Scan(&m.ID, &m.TransactionID, &m.PartitionID, &m.Queue, &m.Partition, &m.Status, &m.CreatedAt)
			out = append(out, m)
			return err
		}},
	)
	return out, found, wrap("status queue messages", err)
}

// statusMessagesArgs are the parameters status_queue_messages passes to qg_list_messages
// (see sqlCall).
type statusMessagesArgs struct {
	Queue         string
	Limit, Offset int
	Now           any
}

func (a statusMessagesArgs) args() []any { return []any{a.Queue, a.Limit, a.Offset, a.Now} }

var sqlStatusAnalytics = query("status_analytics")

// MessagesWritten counts the messages written per unit (minute, hour or day) between from and
// to into the queues matching f, every bucket included.
func (s *Store) MessagesWritten(ctx context.Context, f mq.QueueFilter, unit string, from, to time.Time) ([]mq.CountPoint, error) {
	out, err := queryAll(ctx, s, sqlStatusAnalytics, append([]any{from, to, unit}, filterArgs(f)...),
		func(r rowScanner, p *mq.CountPoint) error { return r.Scan(&p.At, &p.N) })
	return out, wrap("messages written", err)
}

// Now is the store's notion of the current time: its clock when one is set, else the
// machine's. Routes use it for default time windows, so tests that move the clock see them move.
func (s *Store) Now() time.Time {
	if s.clock != nil {
		return s.clock()
	}
	return time.Now()
}

// filterArgs are a queue filter's statement parameters (NULL when empty).
func filterArgs(f mq.QueueFilter) []any {
	return []any{nullIfEmpty(f.Queue), nullIfEmpty(f.Namespace), nullIfEmpty(f.Task)}
}
