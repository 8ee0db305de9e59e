package queen

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// Queue addresses one queue, and optionally one of its partitions. It is a small value:
// derive it freely (c.Queue("orders").Partition("customer-42")); nothing is sent until a
// method with a context is called.
type Queue struct {
	c         *Client
	name      string
	partition string
}

// Queue addresses the queue named name. The broker creates a queue on its first push; use
// Create to give it options first.
func (c *Client) Queue(name string) Queue { return Queue{c: c, name: name} }

// Partition narrows q to one partition: pushes go there and pops read only from it.
// An empty name means the default partition, "Default", for pushes, and any partition for pops.
func (q Queue) Partition(name string) Queue {
	q.partition = name
	return q
}

// Name is the queue's name.
func (q Queue) Name() string { return q.name }

// Client is the client q sends through.
func (q Queue) Client() *Client { return q.c }

// PartitionName is the partition q is narrowed to, "" when none.
func (q Queue) PartitionName() string { return q.partition }

// Create creates the queue with opts. It is Configure under the name the Queen clients use:
// the broker has one configure operation, which creates a missing queue and otherwise
// replaces its whole configuration (options not given go back to their defaults).
func (q Queue) Create(ctx context.Context, opts ...QueueOption) (QueueConfig, error) {
	return q.Configure(ctx, opts...)
}

// Configure creates the queue or replaces its whole configuration, and returns the effective
// configuration. Options not given go back to their defaults; to change one option keep the
// others with QueueConfig.Options.
func (q Queue) Configure(ctx context.Context, opts ...QueueOption) (QueueConfig, error) {
	if q.name == "" {
		return QueueConfig{}, errors.New("queen: configure needs a queue name")
	}
	body := &configureBody{Queue: q.name, Options: map[string]any{}}
	for _, o := range opts {
		if err := o(body); err != nil {
			return QueueConfig{}, err
		}
	}
	var ans configureAnswer
	if _, err := q.c.do(ctx, call{method: http.MethodPost, path: "/api/v1/configure", body: body}, &ans); err != nil {
		return QueueConfig{}, err
	}
	return ans.config(), nil
}

// Delete removes the queue with its partitions, messages, consumer state, DLQ entries and
// dedup keys. It reports whether the queue existed; deleting a missing queue is not an error.
// It needs the admin role when authentication is on.
func (q Queue) Delete(ctx context.Context) (existed bool, err error) {
	var ans struct {
		Existed bool `json:"existed"`
	}
	_, err = q.c.do(ctx, call{method: http.MethodDelete, path: "/api/v1/resources/queues/" + pathEscape(q.name)}, &ans)
	return ans.Existed, err
}

// QueueInfo is one queue of the queue listing.
type QueueInfo struct {
	ID         string    `json:"id"`
	Name       string    `json:"name"`
	Namespace  string    `json:"namespace"`
	Task       string    `json:"task"`
	CreatedAt  time.Time `json:"createdAt"`
	Partitions int       `json:"partitions"`
	Messages   struct {
		Total      int `json:"total"`
		Pending    int `json:"pending"`
		Processing int `json:"processing"`
	} `json:"messages"`
}

// Queues lists every queue, newest first. Message counts come from the broker's stats job
// and may be a few seconds old.
func (c *Client) Queues(ctx context.Context) ([]QueueInfo, error) {
	var ans struct {
		Queues []QueueInfo `json:"queues"`
	}
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/resources/queues"}, &ans); err != nil {
		return nil, err
	}
	return ans.Queues, nil
}
