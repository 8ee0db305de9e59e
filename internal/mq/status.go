package mq

import "time"

// QueueFilter selects queues by name, namespace and task; an empty field matches any.
type QueueFilter struct{ Queue, Namespace, Task string }

// StatusOverview is what GET /api/v1/status shows for a window and a filter.
type StatusOverview struct {
	Counters         Counters
	DLQPartitions    int64      // partitions with DLQ entries
	ActiveLeases     int64      // live leases
	LeasedPartitions int64      // partitions with a live lease
	LeasedMessages   int64      // messages in live leased batches
	StatsAt          *time.Time // when the stats job last finished; nil before its first run
	Queues           []QueueRef
	TopErrors        []ErrorCount
	Throughput       []ThroughputPoint
	Window           WindowTotals
	Workers          []WorkerSeen
}

// QueueRef is a queue with its partition count and the messages its consumers consumed.
type QueueRef struct {
	ID, Name, Namespace, Task string
	Partitions, Consumed      int64
}

// ErrorCount is a DLQ reason and its number of entries.
type ErrorCount struct {
	Error string
	Count int64
}

// ThroughputPoint is one bucket of the status throughput series.
type ThroughputPoint struct {
	At                             time.Time
	Ingested, Processed, Popped    int64
	AvgLagMs, MaxLagMs             float64
	DBErrors, AckFailed, DLQ       int64
	CPUUserPct, CPUSysPct          float64
	RSSBytes                       int64
	PoolActive, PoolIdle, PoolSize float64
}

// WindowTotals are request and message counts over a window.
type WindowTotals struct {
	PushRequests, PopRequests, AckRequests int64
	PushMessages, PopMessages, AckMessages int64
	AckSuccess, AckFailed, DLQ, DBErrors   int64
}

// WorkerSeen is a broker instance that flushed metrics in a window.
type WorkerSeen struct {
	Hostname, WorkerID string
	PID                int
	LastSeen           time.Time
}

// QueueStatus is one queue with its configuration, counters and partitions.
type QueueStatus struct {
	ID, Name, Namespace, Task string
	Priority                  int
	CreatedAt                 time.Time
	LeaseTime, RetryLimit     int
	RetryDelay, TTL, MaxSize  int
	DeadLetterQueue           bool
	Options                   QueueOptions      // all 16, as configure answers them
	Totals                    Counters          // the whole queue
	Partitions                []PartitionStatus // one page
	PartitionCount            int64             // the queue's partitions matching the search
}

// PartitionStatus is one partition with its counters.
type PartitionStatus struct {
	ID, Name                     string
	CreatedAt                    time.Time
	Counters                     Counters
	ConsumerGroups, ActiveLeases int
	Consumed, Batches            int64
	LastActivity                 *time.Time
	Oldest, Newest               *time.Time
	MaxTimeLag                   int64 // s, the largest time lag of any pair on the partition
}

// QueueMessage is a stored message in the status message listing.
type QueueMessage struct {
	ID, TransactionID, PartitionID string
	Queue, Partition, Status       string
	CreatedAt                      time.Time
}

// CountPoint is a count in a time bucket.
type CountPoint struct {
	At time.Time
	N  int64
}
