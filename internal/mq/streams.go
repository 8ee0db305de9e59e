package mq

import (
	"encoding/json"
	"time"
)

// Streams vocabulary (docs/api/streams.md). The operators run in the client SDKs; the broker
// keeps registrations and per-shard state, and commits cycles atomically.

// AnswerError is an error whose text is the API's answer, word for word, capital letter
// included (so it is not built with errors.New, whose texts Go style wants lower case).
type AnswerError string

// Error returns the answer's text.
func (e AnswerError) Error() string { return string(e) }

// Errors of the streams routes that are answers, not failures.
var (
	// ErrQueryNotFound: no registration with that query_id in the caller's tenant (404).
	ErrQueryNotFound error = AnswerError("Query not found")
	// ErrPartitionNotFound: the cycle's source partition does not exist (404).
	ErrPartitionNotFound error = AnswerError("Partition not found")
)

// Codes raised by the streams SQL (internal/store/sql/functions/100_streams.sql).
const (
	// CodeQueryNotFound: unknown query_id.
	CodeQueryNotFound Code = "QG010"
	// CodePartitionNotFound: unknown source partition of a cycle.
	CodePartitionNotFound Code = "QG011"
	// CodeAlreadyCommitted: a cycle's ack names a message at or below the group's cursor.
	CodeAlreadyCommitted Code = "QG012"
)

// StreamRegistration is a POST /streams/v1/queries body (docs/api/streams.md §3), validated.
type StreamRegistration struct {
	Name, SourceQueue, ConfigHash string
	SinkQueue                     string // "" for none
	Reset                         bool
}

// Registration outcomes (docs/api/streams.md §3 table).
const (
	StreamFresh    = "fresh"
	StreamSame     = "same"
	StreamReset    = "reset"
	StreamMismatch = "mismatch"
)

// StreamRegistered is the outcome of a registration: the stored query_id and what happened.
type StreamRegistered struct {
	QueryID string
	Outcome string // StreamFresh | StreamSame | StreamReset | StreamMismatch
}

// StreamStateOp is one state op of a cycle. Delete ignores Value.
type StreamStateOp struct {
	Delete bool
	Key    string
	Value  json.RawMessage // JSON text; {} when the upsert had none
}

// StreamAck is a cycle's ack (docs/api/streams.md §4.3).
type StreamAck struct {
	TransactionID string
	LeaseID       string // canonical UUID, NoLease for a non-UUID, "" for lease-less
	DeadLetter    bool   // status dlq or failed
	Error         string // DLQ reason ("" for the default)
}

// StreamCycle is a POST /streams/v1/cycle body, validated (docs/api/streams.md §4.1).
type StreamCycle struct {
	QueryID, PartitionID string // canonical UUIDs
	ConsumerGroup        string // QueueMode when absent
	ReleaseLease         bool
	StateOps             []StreamStateOp
	// PushItems are transaction-style push items (TraceID canonical or "").
	PushItems []TxnEntry
	Ack       *StreamAck
}

// StreamPushResult is one sink item's outcome: queued or duplicate.
type StreamPushResult struct {
	Index         int
	TransactionID string
	Status        string // StatusQueued | StatusDuplicate
	MessageID     string
	PartitionID   string
	TraceID       string // "" for none
	Queue         string
}

// StreamAckResult is what a cycle's ack applied.
type StreamAckResult struct {
	Count         int64 // messages consumed: new cursor - old cursor
	LeaseReleased bool
	DLQ           bool
}

// StreamCycleOutcome is a cycle's answer: committed (Rollback == "") or rolled back with the
// first cause, in which case nothing was applied.
type StreamCycleOutcome struct {
	SourceQueue     string
	Rollback        string
	StateOpsApplied int
	PushResults     []StreamPushResult
	Ack             *StreamAckResult
}

// StreamStateQuery is a POST /streams/v1/state/get body, validated (docs/api/streams.md §5).
type StreamStateQuery struct {
	QueryID, PartitionID string
	Keys                 []string // nil: no filter
	KeyPrefix            string   // "": no filter
	RipeAtOrBefore       *float64
}

// StreamStateRow is one state row.
type StreamStateRow struct {
	Key       string
	Value     json.RawMessage
	UpdatedAt time.Time
}

// StreamQuery is a registration as GET /streams/v1/queries lists it.
type StreamQuery struct {
	QueryID, Name, SourceQueue, ConfigHash string
	SinkQueue                              *string
	StateRows                              int64
	CreatedAt, UpdatedAt                   time.Time
}

// StreamCycleFailure is the default DLQ reason of a failed cycle (docs/api/streams.md §4.3).
const StreamCycleFailure = "Streaming cycle reported failure"

// StreamRollbackText is the answer's error text for a cycle rolled back with code c and the
// values of its DETAIL (docs/api/streams.md §4.4); ok=false for a code that is not a cycle
// rollback cause (a database error: its own message is the text).
func StreamRollbackText(c Code, args []string) (string, bool) {
	switch c {
	case CodeUnknownMessage, CodeLease, CodeBatch:
		return c.AckText(), true
	case CodeAlreadyCommitted:
		return "Message already committed", true
	case CodeQueueFull:
		q := ""
		if len(args) > 0 {
			q = args[0]
		}
		return `queue "` + q + `" is full`, true
	}
	return "", false
}
