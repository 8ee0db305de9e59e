package mq

import "errors"

// Push statuses.
const (
	StatusQueued    = "queued"
	StatusDuplicate = "duplicate"
	StatusFailed    = "failed"
	// StatusBuffered: the item was spooled to the local file buffer, not written to the
	// database; it is replayed later under the transactionId it was answered with
	// (docs/api/operations.md §4.1).
	StatusBuffered = "buffered"
)

// ErrBufferWrite answers a push that had to be spooled but whose spool write failed (disk
// full, directory not writable): nothing of it is kept, and the push route answers 503 with
// "File buffer write failed" per item (docs/api/operations.md §4.1).
var ErrBufferWrite = errors.New("file buffer write failed")

// PushResult is the outcome of one item, in request order.
type PushResult struct {
	Status      string // queued | duplicate | failed (queue full) | buffered (spooled)
	MessageID   string // the stored message (queued) or the one holding the key (duplicate)
	PartitionID string
	Queue       string
	// TransactionID is the key the item was written under: the producer's, or the minted
	// message id when it gave none. The broker fills it in.
	TransactionID string
}

// PushItem is one message a producer writes. An empty Partition means Default, an empty
// TransactionID means the minted message id.
type PushItem struct {
	Queue, Partition, TransactionID string
	Payload                         []byte // JSON text
}
