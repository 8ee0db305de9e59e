package mq

import "time"

// Read models and requests of the operator routes added for docs/api/admin-api.md §1.1
// (partition listing), §1.2 (queue clear) and §3.3 (DLQ deletion).

// PartitionFilter selects and orders the partition listing (docs/api/admin-api.md §1.1). Empty strings
// filter nothing; Sort is one of PartitionSortKeys.
type PartitionFilter struct {
	Queue, Namespace, Task, Search string
	Sort                           string
	Desc                           bool
	Page                           Page
}

// PartitionSortKeys are the sort keys of the partition listing, each with whether it sorts
// descending by default (counts, lags and times do; names do not).
var PartitionSortKeys = map[string]bool{
	"name": false, "queue": false, "createdAt": true, "total": true, "pending": true, "lag": true,
	"lastActivity": true,
}

// PartitionRow is one row of the partition listing. Counters come from the stats job.
type PartitionRow struct {
	ID, Name, Queue, QueueID, Namespace, Task string
	CreatedAt                                 time.Time
	Total, Pending, Processing, Completed     int64
	DeadLetter                                int64
	ConsumerGroups, ActiveLeases              int
	MaxTimeLag                                int64
	Oldest, Newest                            *time.Time
	LastActivity                              time.Time
}

// DLQSelection names DLQ entries by id or by filter (docs/api/admin-api.md §3.2, §3.3). Exactly one of
// IDs and Filter is set; Limit bounds a filter's selection.
type DLQSelection struct {
	IDs    []string
	Filter *DLQFilter
	Limit  int
}

// DLQSkip is an entry a DLQ operation left in place, with why.
type DLQSkip struct {
	ID, Reason string
}

// DLQDeleteResult is the outcome of deleting DLQ entries by selection.
type DLQDeleteResult struct {
	Deleted   int64
	Skipped   []DLQSkip
	Remaining int64
}

// Reasons reported for entries left in place.
const (
	ReasonDLQEntryNotFound = "DLQ entry not found"
)

// ClearResult is the outcome of clearing a queue or one partition (docs/api/admin-api.md §1.2).
type ClearResult struct {
	PartitionsCleared int64
	MessagesDeleted   int64
	UnconsumedDeleted int64
	Complete          bool
}

// GroupAction is what an operator action on one message did for one consumer group
// (docs/api/admin-api.md §2.4, §2.5): Action moved, skipped, …; Reason says why a group was skipped.
type GroupAction struct {
	Group, Action, Reason string
}

// Outcomes of moving a message to the DLQ by request (docs/api/admin-api.md §2.5).
const (
	ActionMoved   = "moved"
	ActionSkipped = "skipped"
	// DefaultMoveReason is the DLQ reason when the request names none.
	DefaultMoveReason = "Moved to DLQ manually"
	// MaxMoveReasonChars bounds the recorded reason.
	MaxMoveReasonChars = 4096
)

// DLQRequeueResult is the outcome of a DLQ requeue (docs/api/admin-api.md §3.2): entries
// requeued and removed, entries kept with why (by id: the id as sent), matching entries left
// (by filter), the copies written (copy mode), and the queues whose parked pops to wake.
type DLQRequeueResult struct {
	Requeued  int64
	Skipped   []DLQSkip
	Remaining int64
	Copies    []DLQCopy
	Queues    []string
}

// DLQCopy is one message written by a copy-mode requeue.
type DLQCopy struct {
	DLQID, MessageID, TransactionID, QueueName, PartitionID string
}

// Requeue modes (docs/api/admin-api.md §3.2) and the outcomes of a message retry (§2.4).
const (
	RequeueRedeliver = "redeliver"
	RequeueCopy      = "copy"

	ActionRequeued          = "requeued"
	ActionRetryDelayCleared = "retry_delay_cleared"
	ActionAlreadyRequeued   = "already_requeued"

	// ReasonQueueFull skips a copy into a queue at its maxSize.
	ReasonQueueFull = "queue full"
)

// DLQRequeueRequest is a validated DLQ requeue (docs/api/admin-api.md §3.2): the selection, the
// mode and, for a copy, the target (an empty ToPartition: each entry's own partition name) and
// the producer identity the copies carry (the requesting token's sub).
type DLQRequeueRequest struct {
	Selection   DLQSelection
	Mode        string // RequeueRedeliver or RequeueCopy
	ToQueue     string
	ToPartition string
	ProducerSub *string
}
