package mq

import "time"

// MessageFilter selects the messages of the admin listing (docs/api/admin-api.md §2.1). Empty strings
// match anything; From and To are inclusive bounds on createdAt, by default the last hour.
type MessageFilter struct {
	Queue, Partition, Namespace, Task string
	Status                            string // "", pending, processing, completed or dead_letter
	// TransactionID and TraceID look a message up exactly (dashboard M10); with either, From and
	// To default to unbounded instead of the last hour. TraceID is a canonical UUID.
	TransactionID, TraceID string
	From, To               *time.Time
	Page                   Page
}

// StoredMessage is what the admin routes show of a stored message.
type StoredMessage struct {
	ID, TransactionID, PartitionID string
	Queue, Partition               string
	Namespace, Task                string
	Status                         string  // pending | processing | completed | dead_letter
	TraceID, ProducerSub           *string // nil when none
	CreatedAt                      time.Time
	LeaseExpiresAt                 *time.Time // a live lease whose batch holds it
}

// ListedMessage is one row of the message listing.
type ListedMessage struct {
	StoredMessage
	QueueStatus        *string // the state for queue mode; nil when it is not a consumer
	ConsumedBy, Groups int64   // named groups that passed it / that consume its partition
	Priority           int
	HasQueueMode       bool  // over the queues of the whole page
	BusGroups          int64 // distinct named groups over the queues of the whole page
}

// MessageDetail is one message with its payload (as stored), last DLQ entry and queue options.
type MessageDetail struct {
	StoredMessage
	Payload      []byte
	Encrypted    bool
	ErrorMessage *string
	RetryCount   int
	LeaseTime    int
	RetryLimit   int
	RetryDelay   int
	TTL          int
	Priority     int
	Consumers    []MessageConsumer
}

// MessageConsumer is one consumer of a message's partition.
type MessageConsumer struct {
	Group          string
	Consumed       bool
	LeaseExpiresAt *time.Time
}

// DLQFilter selects DLQ entries (docs/api/admin-api.md §3). Empty strings and nil times match anything.
type DLQFilter struct {
	Queue, Group, Partition string
	Error                   string // exact reason
	From, To                *time.Time
	Page                    Page
}

// DLQEntry is one dead-lettered copy of a message.
type DLQEntry struct {
	DLQID                                 string // the entry's own id
	MessageID, TransactionID, PartitionID string
	Queue, Partition, Group               string
	ErrorMessage                          string
	RetryCount                            int
	Payload                               []byte // as stored
	Encrypted                             bool
	TraceID, ProducerSub                  *string
	CreatedAt, FailedAt                   time.Time
	MessageStored                         bool // the message still exists
}
