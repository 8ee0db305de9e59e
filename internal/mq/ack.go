package mq

// Ack statuses after normalisation (docs/api/concepts.md §8.1).
const (
	AckCompleted = "completed"
	AckFailed    = "failed"
	AckRetry     = "retry"
	AckDLQ       = "dlq"
)

// AckItem is one acknowledgement. PartitionID is "" when the client's value is not a UUID
// (the item then reports Message not found); LeaseID "" means lease-less.
type AckItem struct {
	PartitionID, TransactionID, Group string
	Status                            string
	LeaseID                           string
	Error                             string
}

// AckResult is the verdict on one item (docs/api/concepts.md §8.3), in request order.
type AckResult struct {
	Success          bool
	Error            *string
	Queue, Partition *string
	LeaseReleased    bool
	DLQ              bool
	AlreadyCommitted bool
}

// NormalizeStatus maps a client's status to completed, failed, retry or dlq (docs/api/concepts.md §8.1):
// absent → completed, "success" → completed, anything unknown → failed.
func NormalizeStatus(status *string) string {
	if status == nil {
		return AckCompleted
	}
	switch *status {
	case "completed", "success":
		return AckCompleted
	case AckRetry, AckDLQ:
		return *status
	}
	return AckFailed
}

// Lease extension outcomes.
const (
	LeaseExtended = "extended"
	LeaseNotFound = "not_found"
	LeaseExpired  = "expired"
)
