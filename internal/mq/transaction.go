package mq

// TxnResult is one committed entry (docs/api/transaction.md §6), in flattened order.
type TxnResult struct {
	Index            int
	Kind             string // push | ack
	Duplicate        bool   // push: an earlier entry of the bundle had the same key
	MessageID        string
	PartitionID      string
	Queue            string
	DLQ              bool
	AlreadyCommitted bool
	LeaseReleased    bool // ack: the pair holds no live lease afterwards
	// TransactionID is the key a push used, or the acked message's. The broker fills it in.
	TransactionID string
}

// TxnEntry is one flattened operation of a transaction: a push (Ack nil) or an ack.
type TxnEntry struct {
	Push    PushItem
	TraceID string // push only; "" for none
	Ack     *AckItem
}

// TxnOutcome is a processed transaction: committed (Rollback "") or rolled back with the
// reference's error text. ID is the call's own UUIDv7.
type TxnOutcome struct {
	ID       string
	Rollback string
	Results  []TxnResult
}
