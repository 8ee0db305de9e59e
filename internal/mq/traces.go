package mq

import "time"

// TraceRecord is a trace event to store on a message (docs/api/admin-api.md §4.1).
type TraceRecord struct {
	ID                         string // UUIDv7
	PartitionID, TransactionID string // PartitionID a canonical UUID
	Group, EventType           string
	Data                       []byte // JSON text
	WorkerID                   string
	Names                      []string
}

// Trace is a stored trace record.
type Trace struct {
	ID, EventType, Group, WorkerID string
	Data                           []byte
	CreatedAt                      time.Time
	Names                          []string
}

// NamedTrace is a trace record found by name, with where its message lives and the message's
// payload as stored (nil once the message is gone).
type NamedTrace struct {
	Trace
	TransactionID, PartitionID string
	Queue, Partition           *string
	Payload                    []byte
	Encrypted                  bool
}

// TraceName is one trace name with its record and message counts.
type TraceName struct {
	Name             string
	Traces, Messages int64
	LastSeen         time.Time
}
