package queen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/uuid"
)

// Item is a payload with its per-message settings. Pass it to Push (or to a transaction's
// Push) in place of a bare payload to choose the message's transactionId.
type Item struct {
	// Payload is any value encoding to JSON; a json.RawMessage is sent as it is.
	Payload any
	// TransactionID is the message's idempotency key in its partition: a second push with the
	// same key is reported as a duplicate. Empty: the client mints a UUIDv7, so that a push
	// retried after a lost answer is deduplicated rather than written twice.
	TransactionID string
	// TraceID (a UUID) is stored with the message by transaction pushes, and returned by pop.
	// Plain pushes ignore it, as the broker does.
	TraceID string
}

// pushItem is one element of the wire "items" array (push and transaction push).
type pushItem struct {
	Queue         string `json:"queue"`
	Partition     string `json:"partition,omitempty"`
	Payload       any    `json:"payload"`
	TransactionID string `json:"transactionId"`
	TraceID       string `json:"traceId,omitempty"`
}

// toItems turns Push's arguments into wire items, minting missing keys.
func toItems(queue, partition string, payloads []any) []pushItem {
	items := make([]pushItem, len(payloads))
	for i, p := range payloads {
		it, ok := p.(Item)
		if ptr, isPtr := p.(*Item); isPtr && ptr != nil {
			it, ok = *ptr, true
		}
		if !ok {
			it = Item{Payload: p}
		}
		if it.TransactionID == "" {
			it.TransactionID = newID()
		}
		items[i] = pushItem{Queue: queue, Partition: partition, Payload: it.Payload,
			TransactionID: it.TransactionID, TraceID: it.TraceID}
	}
	return items
}

// newID mints a UUIDv7, the broker's own id format, falling back to v4 if the clock source
// fails (it does not in practice; a key only needs to be unique).
func newID() string {
	if id, err := uuid.NewV7(); err == nil {
		return id.String()
	}
	return uuid.NewString()
}

// PushStatus is what the broker did with one pushed item.
type PushStatus string

// The item statuses of POST /api/v1/push.
const (
	// PushQueued: the message was stored.
	PushQueued PushStatus = "queued"
	// PushDuplicate: its transactionId was already taken in the partition; nothing was
	// written and MessageID names the message that holds the key.
	PushDuplicate PushStatus = "duplicate"
	// PushFailed: not stored; Error says why ("queue full").
	PushFailed PushStatus = "failed"
	// PushBuffered: the broker could not reach its database and spooled the item to disk; it
	// will be written, with this transactionId, when the database is back.
	PushBuffered PushStatus = "buffered"
)

// PushResult is the broker's answer for one pushed item.
type PushResult struct {
	Index         int        `json:"index"`
	Status        PushStatus `json:"status"`
	TransactionID string     `json:"transactionId"`
	MessageID     string     `json:"messageId,omitempty"`
	PartitionID   string     `json:"partitionId,omitempty"`
	Queue         string     `json:"queue"`
	Error         string     `json:"error,omitempty"`
}

// pushAnswer is one element of the push answer, whose casing is mixed on purpose (spec
// docs/api/README.md §2.2): snake_case for stored items, camelCase for spooled ones.
type pushAnswer struct {
	Index         int    `json:"index"`
	Status        string `json:"status"`
	TxSnake       string `json:"transaction_id"`
	TxCamel       string `json:"transactionId"`
	MessageID     string `json:"message_id"`
	PartitionID   string `json:"partition_id"`
	QueueName     string `json:"queueName"`
	Queue         string `json:"queue"`
	Error         string `json:"error"`
	PartitionName string `json:"partition"`
}

// result converts the wire element.
func (a pushAnswer) result() PushResult {
	r := PushResult{Index: a.Index, Status: PushStatus(a.Status), TransactionID: a.TxSnake,
		MessageID: a.MessageID, PartitionID: a.PartitionID, Queue: a.QueueName, Error: a.Error}
	if r.TransactionID == "" {
		r.TransactionID = a.TxCamel
	}
	if r.Queue == "" {
		r.Queue = a.Queue
	}
	return r
}

// PushResults are the per-item results of one push, in request order.
type PushResults []PushResult

// Err is nil when every item was queued, deduplicated or buffered, and a *PushError listing
// the failed items otherwise.
func (rs PushResults) Err() error {
	var failed []PushResult
	for _, r := range rs {
		if r.Status == PushFailed {
			failed = append(failed, r)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return &PushError{Failed: failed}
}

// Count returns how many results have status s.
func (rs PushResults) Count(s PushStatus) int {
	n := 0
	for _, r := range rs {
		if r.Status == s {
			n++
		}
	}
	return n
}

// PushError reports the items of a push that the broker refused.
type PushError struct {
	Failed []PushResult
}

// Error names the first failures.
func (e *PushError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "queen: %d pushed item(s) failed", len(e.Failed))
	for i, r := range e.Failed {
		if i == 3 {
			b.WriteString(", …")
			break
		}
		fmt.Fprintf(&b, "; item %d (%s): %s", r.Index, r.TransactionID, r.Error)
	}
	return b.String()
}

// Push writes payloads to the queue, in order, in one request and one database transaction.
// Each payload is any JSON-encodable value, or an Item (or *Item) to set its transactionId.
// The error is about the request; per-item outcomes are in the results (see PushResults.Err).
func (q Queue) Push(ctx context.Context, payloads ...any) (PushResults, error) {
	if q.name == "" {
		return nil, errors.New("queen: push needs a queue name")
	}
	return q.c.push(ctx, toItems(q.name, q.partition, payloads))
}

// push sends wire items; shared by Queue.Push and Buffer.
func (c *Client) push(ctx context.Context, items []pushItem) (PushResults, error) {
	if len(items) == 0 {
		return PushResults{}, nil
	}
	var ans []pushAnswer
	body := struct {
		Items []pushItem `json:"items"`
	}{items}
	if _, err := c.do(ctx, call{method: http.MethodPost, path: "/api/v1/push", body: body}, &ans); err != nil {
		return nil, err
	}
	out := make(PushResults, len(ans))
	for i, a := range ans {
		out[i] = a.result()
	}
	return out, nil
}

// JSON returns s as a payload that is sent as the JSON value it spells, not as a string (for
// callers such as queenctl that hold payloads as text); it fails when s is not valid JSON.
func JSON(s string) (json.RawMessage, error) {
	if !json.Valid([]byte(s)) {
		return nil, fmt.Errorf("queen: payload is not valid JSON: %.40q", s)
	}
	return json.RawMessage(s), nil
}
