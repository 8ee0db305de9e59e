package mq

// Push statuses.
const (
	StatusQueued    = "queued"
	StatusDuplicate = "duplicate"
	StatusFailed    = "failed"
)

// PushResult is the outcome of one item, in request order.
type PushResult struct {
	Status      string // queued | duplicate | failed (queue full)
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
