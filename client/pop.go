package queen

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Message is one delivered message. Its JSON form is the broker's, so a message printed by
// queenctl can be read back (for example to ack it).
type Message struct {
	ID            string          `json:"id"`
	TransactionID string          `json:"transactionId"`
	TraceID       string          `json:"traceId,omitempty"`
	Data          json.RawMessage `json:"data"`
	ProducerSub   string          `json:"producerSub,omitempty"`
	CreatedAt     time.Time       `json:"createdAt"`
	PartitionID   string          `json:"partitionId"`
	Partition     string          `json:"partition"`
	Queue         string          `json:"queue"`
	LeaseID       string          `json:"leaseId"` // "" when popped with AutoAck
	ConsumerGroup string          `json:"consumerGroup"`
	RetryCount    int             `json:"retryCount"` // failed deliveries of its batch so far
}

// Decode unmarshals the payload into v.
func (m *Message) Decode(v any) error { return json.Unmarshal(m.Data, v) }

// Batch is what one pop delivered: messages from up to PartitionsClaimed partitions under
// one lease. It is empty (no messages) when nothing was deliverable.
type Batch struct {
	LeaseID           string
	ConsumerGroup     string
	PartitionsClaimed int
	Messages          []*Message
}

// Empty reports whether the pop delivered nothing.
func (b *Batch) Empty() bool { return len(b.Messages) == 0 }

// SubscriptionMode is where a named consumer group starts reading a queue the first time it
// pops it. It is ignored for queue mode (no consumer group).
type SubscriptionMode string

// The subscription modes of a pop.
const (
	// SubscriptionAll starts at the first stored message.
	SubscriptionAll SubscriptionMode = "all"
	// SubscriptionNew starts after the messages stored when the group registers.
	SubscriptionNew SubscriptionMode = "new"
	// SubscriptionNewOnly is the Queen alias of SubscriptionNew.
	SubscriptionNewOnly SubscriptionMode = "new-only"
)

// FromNow is the PopOptions.SubscriptionFrom value meaning "messages from now on".
const FromNow = "now"

// FromTime is the PopOptions.SubscriptionFrom value meaning "messages created at or after t".
func FromTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// PopOptions tune a pop. The zero value pops at most one message at once, in queue mode.
type PopOptions struct {
	// Batch is the most messages to return (default: the broker's, 1).
	Batch int
	// Wait long-polls up to this long when nothing is deliverable (0: answer at once; the
	// broker caps it at 2 minutes).
	Wait time.Duration
	// ConsumerGroup reads as this group; empty means queue mode.
	ConsumerGroup string
	// SubscriptionMode and SubscriptionFrom (FromNow or FromTime) place a named group's
	// cursor when it first reads the queue; SubscriptionFrom wins when both are set.
	SubscriptionMode SubscriptionMode
	SubscriptionFrom string
	// AutoAck marks the batch consumed as it is delivered: no lease, no ack, at most once.
	AutoAck bool
	// Partitions is the most partitions one pop may claim (default 1). Ignored when the
	// queue is narrowed to one partition.
	Partitions int
}

// query encodes the options as the pop routes read them.
func (o PopOptions) query() url.Values {
	q := url.Values{}
	if o.Batch > 0 {
		q.Set("batch", strconv.Itoa(o.Batch))
	}
	if o.Wait > 0 {
		q.Set("wait", "true")
		q.Set("timeout", strconv.FormatInt(o.Wait.Milliseconds(), 10))
	}
	if o.ConsumerGroup != "" {
		q.Set("consumerGroup", o.ConsumerGroup)
	}
	if o.SubscriptionMode != "" {
		q.Set("subscriptionMode", string(o.SubscriptionMode))
	}
	if o.SubscriptionFrom != "" {
		q.Set("subscriptionFrom", o.SubscriptionFrom)
	}
	if o.AutoAck {
		q.Set("autoAck", "true")
	}
	if o.Partitions > 1 {
		q.Set("partitions", strconv.Itoa(o.Partitions))
	}
	return q
}

// Pop leases and returns the next messages of the queue (of its partition when narrowed).
// Ack each message, or the batch's last one, before the queue's lease time runs out, or
// extend the lease; otherwise the batch is delivered again.
func (q Queue) Pop(ctx context.Context, o PopOptions) (*Batch, error) {
	if q.name == "" {
		return nil, errors.New("queen: pop needs a queue name")
	}
	path := "/api/v1/pop/queue/" + pathEscape(q.name)
	if q.partition != "" {
		path += "/partition/" + pathEscape(q.partition)
	}
	return q.c.pop(ctx, path, o.query(), o.Wait)
}

// PopNamespace pops across every queue whose namespace and task match (either may be empty,
// not both), higher-priority queues first.
func (c *Client) PopNamespace(ctx context.Context, namespace, task string, o PopOptions) (*Batch, error) {
	if namespace == "" && task == "" {
		return nil, errors.New("queen: namespace pop needs a namespace or a task")
	}
	q := o.query()
	if namespace != "" {
		q.Set("namespace", namespace)
	}
	if task != "" {
		q.Set("task", task)
	}
	return c.pop(ctx, "/api/v1/pop", q, o.Wait)
}

// pop runs one pop request; a 204 is an empty batch.
func (c *Client) pop(ctx context.Context, path string, q url.Values, wait time.Duration) (*Batch, error) {
	var ans struct {
		LeaseID           string     `json:"leaseId"`
		ConsumerGroup     string     `json:"consumerGroup"`
		PartitionsClaimed int        `json:"partitionsClaimed"`
		Messages          []*Message `json:"messages"`
	}
	if _, err := c.do(ctx, call{method: http.MethodGet, path: path, query: q, extra: wait}, &ans); err != nil {
		return nil, err
	}
	return &Batch{LeaseID: ans.LeaseID, ConsumerGroup: ans.ConsumerGroup,
		PartitionsClaimed: ans.PartitionsClaimed, Messages: ans.Messages}, nil
}
