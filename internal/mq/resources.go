package mq

import "time"

// Counters are message counts of a partition or queue (docs/api/concepts.md §10): Total stored,
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

// QueueSummary is one queue of a queue listing. The counters, DeadLetter (DLQ entries of the
// queue) and MaxTimeLag (seconds, the largest time lag of any pair below it) come from the
// stats job.
type QueueSummary struct {
	ID, Name, Namespace, Task string
	CreatedAt                 time.Time
	Partitions                int64
	Total, Pending            int64
	Processing                int64
	DeadLetter, MaxTimeLag    int64
	// Tenant is the queue's tenant, nil unless the caller sees every tenant (the operator).
	Tenant *string
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

// Lag summarises a lag measure over every (partition, consumer) pair.
type Lag struct {
	Avg, Median float64
	Min, Max    int64
}

// Overview is the system-wide summary (docs/api/admin-api.md §1).
type Overview struct {
	Queues, Partitions, Namespaces, Tasks int64
	Counters                              Counters
	TimeLag, OffsetLag                    Lag
	IngestedLastMinute                    int64
	StatsAt                               *time.Time // when the stats job last rolled up the counters; nil before its first run
}

// Page bounds a listing: at most Limit rows after skipping Offset.
type Page struct{ Limit, Offset int }
