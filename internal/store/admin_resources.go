package store

import (
	"context"
	"fmt"
	"time"
)

// Counters are message counts of a partition or queue (concepts.md §10): Total stored,
// Unconsumed (not yet passed by every consumer), Processing (unconsumed and in a live leased
// batch) and DeadLetter (DLQ entries). Pending and completed derive from them.
type Counters struct {
	Total, Unconsumed, Processing, DeadLetter int64
}

// Pending is the unconsumed messages no live batch holds.
func (c Counters) Pending() int64 { return c.Unconsumed - c.Processing }

// Completed is the stored messages every consumer has passed.
func (c Counters) Completed() int64 { return c.Total - c.Unconsumed }

// Add returns the sum of c and o.
func (c Counters) Add(o Counters) Counters {
	return Counters{c.Total + o.Total, c.Unconsumed + o.Unconsumed, c.Processing + o.Processing, c.DeadLetter + o.DeadLetter}
}

// QueueSummary is one queue of a queue listing.
type QueueSummary struct {
	ID, Name, Namespace, Task string
	CreatedAt                 time.Time
	Partitions                int64
	Total, Pending            int64
	Processing                int64
}

// LabelSummary is one namespace or task of the resource listings.
type LabelSummary struct {
	Label              string
	Queues, Partitions int64
	Total, Pending     int64
}

// QueueInfo is one queue's identity and its DLQ entry count.
type QueueInfo struct {
	ID, Name, Namespace, Task string
	CreatedAt                 time.Time
	DeadLetter                int64
}

// PartitionInfo is one partition of a queue with its counters and the createdAt of its first
// and last stored message (nil when empty).
type PartitionInfo struct {
	ID, Name       string
	CreatedAt      time.Time
	Counters       Counters
	Oldest, Newest *time.Time
}

// Lag summarises a lag measure over every (partition, consumer) pair.
type Lag struct {
	Avg, Median float64
	Min, Max    int64
}

// Overview is the system-wide summary (admin-api.md §1).
type Overview struct {
	Queues, Partitions, Namespaces, Tasks int64
	Counters                              Counters
	TimeLag, OffsetLag                    Lag
	IngestedLastMinute                    int64
}

// QueueSummaries lists every queue with live counters, newest first.
func (s *Store) QueueSummaries(ctx context.Context) ([]QueueSummary, error) {
	out, err := queryAll(ctx, s, "SELECT * FROM qg_queue_summaries($1)", []any{s.nowArg()},
		func(r rowScanner, q *QueueSummary) error {
			return r.Scan(&q.ID, &q.Name, &q.Namespace, &q.Task, &q.CreatedAt, &q.Partitions, &q.Total, &q.Pending, &q.Processing)
		})
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	return out, nil
}

// LabelSummaries groups the queues by task (byTask) or namespace.
func (s *Store) LabelSummaries(ctx context.Context, byTask bool) ([]LabelSummary, error) {
	out, err := queryAll(ctx, s, "SELECT * FROM qg_label_summaries($1, $2)", []any{byTask, s.nowArg()},
		func(r rowScanner, l *LabelSummary) error {
			return r.Scan(&l.Label, &l.Queues, &l.Partitions, &l.Total, &l.Pending)
		})
	if err != nil {
		return nil, fmt.Errorf("summarise queue labels: %w", err)
	}
	return out, nil
}

// QueueDetail returns one queue and its partitions; found is false when there is no such queue.
func (s *Store) QueueDetail(ctx context.Context, name string) (q QueueInfo, parts []PartitionInfo, found bool, err error) {
	err = s.queryBatch(ctx,
		batchQuery{"SELECT * FROM qg_queue_detail($1)", []any{name}, func(r rowScanner) error {
			found = true
			return r.Scan(&q.ID, &q.Name, &q.Namespace, &q.Task, &q.CreatedAt, &q.DeadLetter)
		}},
		batchQuery{"SELECT * FROM qg_queue_partitions($1, $2)", []any{name, s.nowArg()}, func(r rowScanner) error {
			var p PartitionInfo
			c := &p.Counters
			if err := r.Scan(&p.ID, &p.Name, &p.CreatedAt, &c.Total, &c.Unconsumed, &c.Processing, &c.DeadLetter,
				&p.Oldest, &p.Newest); err != nil {
				return err
			}
			parts = append(parts, p)
			return nil
		}})
	if err != nil {
		return q, nil, false, fmt.Errorf("read queue %q: %w", name, err)
	}
	return q, parts, found, nil
}

// Overview computes the system summary.
func (s *Store) Overview(ctx context.Context) (Overview, error) {
	var o Overview
	c, t, f := &o.Counters, &o.TimeLag, &o.OffsetLag
	_, err := s.queryOne(ctx, "SELECT * FROM qg_overview($1)", []any{s.nowArg()},
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
	err = retryOnDeadlock(deleteQueueAttempts, func() error {
		_, err := s.queryOne(ctx, "SELECT qg_delete_queue($1)", []any{name}, &existed)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("delete queue %q: %w", name, err)
	}
	return existed, nil
}
