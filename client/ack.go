package queen

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"
)

// AckStatus is a consumer's verdict on a delivered message.
type AckStatus string

// The ack statuses.
const (
	// AckCompleted consumes the message (and every earlier one of its batch).
	AckCompleted AckStatus = "completed"
	// AckFailed counts a failure of the batch: it is delivered again after the queue's
	// retry delay, or dead-lettered once its retries are exhausted.
	AckFailed AckStatus = "failed"
	// AckRetry releases the batch for immediate redelivery without counting a failure.
	AckRetry AckStatus = "retry"
	// AckDLQ moves the message to the dead-letter queue at once.
	AckDLQ AckStatus = "dlq"
)

// Ack is one acknowledgement. Build it from a message with Message.Ack.
type Ack struct {
	TransactionID string
	PartitionID   string
	LeaseID       string // "" sends a lease-less ack
	ConsumerGroup string // "" is queue mode
	Status        AckStatus
	Error         string // reason recorded if the ack dead-letters the message
}

// Ack returns the acknowledgement of m with status s, under m's lease and consumer group.
func (m *Message) Ack(s AckStatus) Ack {
	return Ack{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: m.LeaseID,
		ConsumerGroup: m.ConsumerGroup, Status: s}
}

// WithError returns a with a failure reason, kept in the DLQ entry if the ack dead-letters.
func (a Ack) WithError(reason string) Ack {
	a.Error = reason
	return a
}

// ackWire is an ack as the ack routes read it.
type ackWire struct {
	TransactionID string    `json:"transactionId"`
	PartitionID   string    `json:"partitionId"`
	Status        AckStatus `json:"status,omitempty"`
	ConsumerGroup string    `json:"consumerGroup,omitempty"`
	LeaseID       string    `json:"leaseId,omitempty"`
	Error         string    `json:"error,omitempty"`
}

func (a Ack) wire() ackWire {
	return ackWire{TransactionID: a.TransactionID, PartitionID: a.PartitionID, Status: a.Status,
		ConsumerGroup: a.ConsumerGroup, LeaseID: a.LeaseID, Error: a.Error}
}

// AckOutcome classifies one ack's result.
type AckOutcome int

// The ack outcomes. Only AckApplied and AckAlreadyCommitted are successes.
const (
	// AckApplied: the ack was valid and took effect.
	AckApplied AckOutcome = iota
	// AckAlreadyCommitted: the message was already consumed; the ack changed nothing.
	AckAlreadyCommitted
	// AckMessageNotFound: no such message (wrong ids, or the message or queue was removed).
	AckMessageNotFound
	// AckLeaseInvalid: the lease expired, was released or is not this pair's.
	AckLeaseInvalid
	// AckBeyondBatch: the message is past the leased batch, or no batch is outstanding.
	AckBeyondBatch
	// AckRejected: a rejection this client does not know by name; see AckResult.Error.
	AckRejected
)

var ackOutcomeNames = []string{"applied", "already_committed", "message_not_found", "lease_invalid",
	"beyond_batch", "rejected"}

// String names the outcome in snake_case, as queenctl prints it.
func (o AckOutcome) String() string { return nameOf(ackOutcomeNames, o) }

// MarshalText encodes the outcome by name.
func (o AckOutcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText decodes a name written by MarshalText.
func (o *AckOutcome) UnmarshalText(b []byte) error { return parseName(ackOutcomeNames, b, o) }

// AckResult is the broker's answer for one ack.
type AckResult struct {
	Index         int        `json:"index"`
	TransactionID string     `json:"transactionId"`
	Outcome       AckOutcome `json:"outcome"`
	Error         string     `json:"error,omitempty"`
	Queue         string     `json:"queue,omitempty"`
	Partition     string     `json:"partition,omitempty"`
	LeaseReleased bool       `json:"leaseReleased"` // the pair holds no live lease afterwards
	DLQ           bool       `json:"dlq"`           // this ack dead-lettered the message
}

// OK reports whether the ack succeeded (applied, or already committed).
func (r AckResult) OK() bool { return r.Outcome == AckApplied || r.Outcome == AckAlreadyCommitted }

// ackAnswer is one element of an ack route's answer.
type ackAnswer struct {
	Index            int     `json:"index"`
	TransactionID    string  `json:"transactionId"`
	Success          bool    `json:"success"`
	Error            *string `json:"error"`
	QueueName        *string `json:"queueName"`
	PartitionName    *string `json:"partitionName"`
	LeaseReleased    bool    `json:"leaseReleased"`
	DLQ              bool    `json:"dlq"`
	AlreadyCommitted bool    `json:"alreadyCommitted"`
}

func (a ackAnswer) result() AckResult {
	r := AckResult{Index: a.Index, TransactionID: a.TransactionID, Error: deref(a.Error),
		Queue: deref(a.QueueName), Partition: deref(a.PartitionName), LeaseReleased: a.LeaseReleased, DLQ: a.DLQ}
	switch {
	case a.Success && a.AlreadyCommitted:
		r.Outcome = AckAlreadyCommitted
	case a.Success:
		r.Outcome = AckApplied
	case r.Error == "Message not found":
		r.Outcome = AckMessageNotFound
	case r.Error == "Invalid or expired lease":
		r.Outcome = AckLeaseInvalid
	case r.Error == "Message is beyond the leased batch":
		r.Outcome = AckBeyondBatch
	default:
		r.Outcome = AckRejected
	}
	return r
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Ack sends one acknowledgement. The error is about the request; a rejected ack is a result
// whose Outcome says why.
func (c *Client) Ack(ctx context.Context, a Ack) (AckResult, error) {
	var ans []ackAnswer
	if _, err := c.do(ctx, call{method: http.MethodPost, path: "/api/v1/ack", body: a.wire()}, &ans); err != nil {
		return AckResult{}, err
	}
	if len(ans) != 1 {
		return AckResult{}, errors.New("queen: ack answer has no result")
	}
	return ans[0].result(), nil
}

// AckBatch sends several acknowledgements in one request and one database transaction. A
// rejected item does not stop the others; results are in request order.
func (c *Client) AckBatch(ctx context.Context, acks ...Ack) ([]AckResult, error) {
	body := struct {
		Acks []ackWire `json:"acknowledgments"`
	}{make([]ackWire, len(acks))}
	for i, a := range acks {
		body.Acks[i] = a.wire()
	}
	var ans []ackAnswer
	if _, err := c.do(ctx, call{method: http.MethodPost, path: "/api/v1/ack/batch", body: body}, &ans); err != nil {
		return nil, err
	}
	out := make([]AckResult, len(ans))
	for i, a := range ans {
		out[i] = a.result()
	}
	return out, nil
}

// LeaseStatus is the outcome of a lease extension.
type LeaseStatus int

// The lease extension outcomes.
const (
	// LeaseExtended: the lease now lasts until ExpiresAt.
	LeaseExtended LeaseStatus = iota
	// LeaseNotFound: unknown or already released (its batch was acked).
	LeaseNotFound
	// LeaseExpired: it ran out before the extension; the batch will be delivered again.
	LeaseExpired
)

var leaseStatusNames = []string{"extended", "not_found", "expired"}

// String names the status in snake_case.
func (s LeaseStatus) String() string { return nameOf(leaseStatusNames, s) }

// MarshalText encodes the status by name.
func (s LeaseStatus) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText decodes a name written by MarshalText.
func (s *LeaseStatus) UnmarshalText(b []byte) error { return parseName(leaseStatusNames, b, s) }

// LeaseResult is the answer of a lease extension.
type LeaseResult struct {
	LeaseID   string      `json:"leaseId"`
	Status    LeaseStatus `json:"status"`
	ExpiresAt time.Time   `json:"expiresAt,omitzero"` // the earliest expiry over the lease's partitions
	Error     string      `json:"error,omitempty"`
}

// ExtendLease keeps a lease alive: its expiry becomes at least now + by (whole seconds,
// rounded up; 0 asks for the broker's default of 60 s). It never shortens a lease and
// cannot revive an expired one.
func (c *Client) ExtendLease(ctx context.Context, leaseID string, by time.Duration) (LeaseResult, error) {
	if leaseID == "" {
		return LeaseResult{}, errors.New("queen: extend needs a lease id (messages popped with AutoAck have none)")
	}
	body := map[string]int64{}
	if by > 0 {
		body["seconds"] = int64(math.Ceil(by.Seconds()))
	}
	var ans []struct {
		LeaseID   string    `json:"leaseId"`
		Success   bool      `json:"success"`
		Error     *string   `json:"error"`
		ExpiresAt time.Time `json:"expiresAt"`
	}
	path := "/api/v1/lease/" + pathEscape(leaseID) + "/extend"
	if _, err := c.do(ctx, call{method: http.MethodPost, path: path, body: body}, &ans); err != nil {
		return LeaseResult{}, err
	}
	if len(ans) != 1 {
		return LeaseResult{}, errors.New("queen: lease answer has no result")
	}
	a := ans[0]
	r := LeaseResult{LeaseID: leaseID, ExpiresAt: a.ExpiresAt, Error: deref(a.Error)}
	switch {
	case a.Success:
		r.Status = LeaseExtended
	case r.Error == "Lease already expired":
		r.Status = LeaseExpired
	default:
		r.Status = LeaseNotFound
	}
	return r, nil
}

// nameOf and parseName map the small enums of this package to and from their names, so
// results printed as JSON (by queenctl) read back into the same values.
func nameOf[T ~int](names []string, v T) string {
	if v >= 0 && int(v) < len(names) {
		return names[v]
	}
	return "unknown"
}

func parseName[T ~int](names []string, b []byte, v *T) error {
	for i, n := range names {
		if n == string(b) {
			*v = T(i)
			return nil
		}
	}
	return fmt.Errorf("queen: unknown value %q, want one of %v", b, names)
}
