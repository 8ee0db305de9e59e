package mq

import "time"

// Message is one delivered message.
type Message struct {
	ID            string
	TransactionID string
	TraceID       *string
	Payload       []byte // JSON text
	ProducerSub   *string
	CreatedAt     time.Time
	PartitionID   string
	Partition     string
	Queue         string
	RetryCount    int
	Encrypted     bool // Payload is an encryption envelope
}

// PopRequest is a pop: what to read, for which group, and how long to wait.
type PopRequest struct {
	Queue, Partition  string // Queue set: the queue routes; Partition set: one partition
	Namespace, Task   string // the namespace/task route (Queue empty)
	Group             string // "" means queue mode
	Batch, Partitions int
	AutoAck           bool
	SubscriptionMode  string     // "", all, new, new-only
	SubscriptionFrom  string     // "", "now" or a timestamp (parsed into From)
	From              *time.Time // parsed SubscriptionFrom timestamp
	Wait              bool
	Deadline          time.Time // long-poll deadline (arrival + timeout)
}

// PopResult is what a pop delivered; empty Messages means 204.
type PopResult struct {
	LeaseID  string // "" with autoAck
	Group    string
	Messages []Message
	Claimed  int // partitions that delivered messages
}

// NormalizeSubscriptionMode checks a subscriptionMode (docs/api/data-api.md §3.1) and returns
// it in the form the data path uses: "" (none given), "all", "new" or "new-only".
// "from_beginning" is an alias of "all" (official Queen clients send it). ok is false for
// anything else, which the routes answer with a 400 so that a typo is caught.
func NormalizeSubscriptionMode(mode string) (normal string, ok bool) {
	switch mode {
	case "", "all", "new", "new-only":
		return mode, true
	case "from_beginning":
		return "all", true
	}
	return "", false
}
