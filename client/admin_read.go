package queen

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// This file holds the read-side administration calls of the broker (docs/api/admin-api.md):
// queue detail, message browsing, consumer groups, traces and status.

// Counters are the message counts of a queue or partition.
type Counters struct {
	Total      int `json:"total"`
	Pending    int `json:"pending"`
	Processing int `json:"processing"`
	Completed  int `json:"completed"`
	Failed     int `json:"failed"` // reserved by the API; always 0
	DeadLetter int `json:"deadLetter"`
}

// PartitionInfo is one partition of a queue's detail.
type PartitionInfo struct {
	ID            string    `json:"id"`
	Name          string    `json:"name"`
	CreatedAt     time.Time `json:"createdAt"`
	Stats         Counters  `json:"stats"`
	OldestMessage time.Time `json:"oldestMessage"` // zero when the partition holds no message
	NewestMessage time.Time `json:"newestMessage"`
}

// QueueDetail is one queue with its partitions and their counts.
type QueueDetail struct {
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Namespace  string          `json:"namespace"`
	Task       string          `json:"task"`
	CreatedAt  time.Time       `json:"createdAt"`
	Partitions []PartitionInfo `json:"partitions"`
	Totals     Counters        `json:"totals"`
	// Options are the queue's 16 options with their effective values, by their wire names
	// (leaseTime, retryDelay, dedupWindowSeconds…: numbers and booleans, as configure answers
	// them). nil from a broker that does not report them.
	Options map[string]any `json:"options,omitempty"`
}

// Detail reads the queue with its partitions. An unknown queue is an *HTTPError matching
// ErrNotFound.
func (q Queue) Detail(ctx context.Context) (*QueueDetail, error) {
	var d QueueDetail
	if _, err := q.c.do(ctx, call{method: http.MethodGet, path: "/api/v1/resources/queues/" + pathEscape(q.name)}, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// MessageQuery filters the message listing. Zero fields do not filter; without From and To
// the broker lists the last hour.
type MessageQuery struct {
	Queue, Partition, Namespace, Task string
	Status                            string // pending, processing, completed or dead_letter
	From, To                          time.Time
	Limit, Offset                     int // default 200, 0; the broker caps Limit at 1000
}

// StoredMessage is a message as the administration routes show it.
type StoredMessage struct {
	ID             string    `json:"id"`
	TransactionID  string    `json:"transactionId"`
	PartitionID    string    `json:"partitionId"`
	QueuePath      string    `json:"queuePath"`
	Queue          string    `json:"queue"`
	Partition      string    `json:"partition"`
	Namespace      string    `json:"namespace"`
	Task           string    `json:"task"`
	Status         string    `json:"status"`
	TraceID        string    `json:"traceId,omitempty"`
	ProducerSub    string    `json:"producerSub,omitempty"`
	CreatedAt      time.Time `json:"createdAt"`
	LeaseExpiresAt time.Time `json:"leaseExpiresAt"`
	// QueueStatus is the queue-mode state in listings ("" when queue mode never read it).
	QueueStatus string `json:"queueStatus,omitempty"`
}

// Messages lists stored messages, newest first.
func (c *Client) Messages(ctx context.Context, f MessageQuery) ([]StoredMessage, error) {
	v := url.Values{}
	set := func(k, val string) {
		if val != "" {
			v.Set(k, val)
		}
	}
	set("queue", f.Queue)
	set("partition", f.Partition)
	set("ns", f.Namespace)
	set("task", f.Task)
	set("status", f.Status)
	setPage(v, f.From, f.To, f.Limit, f.Offset)
	var ans struct {
		Messages []StoredMessage `json:"messages"`
	}
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/messages", query: v}, &ans); err != nil {
		return nil, err
	}
	return ans.Messages, nil
}

// setPage adds the time window and page parameters the listings share.
func setPage(v url.Values, from, to time.Time, limit, offset int) {
	if !from.IsZero() {
		v.Set("from", FromTime(from))
	}
	if !to.IsZero() {
		v.Set("to", FromTime(to))
	}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	if offset > 0 {
		v.Set("offset", strconv.Itoa(offset))
	}
}

// MessageConsumer is one consumer group's view of a message.
type MessageConsumer struct {
	Name           string    `json:"name"`
	Consumed       bool      `json:"consumed"`
	LeaseExpiresAt time.Time `json:"leaseExpiresAt"`
}

// MessageDetail is one message with its payload and its consumers.
type MessageDetail struct {
	StoredMessage
	Payload        json.RawMessage   `json:"payload"`
	IsEncrypted    bool              `json:"isEncrypted"`
	ErrorMessage   string            `json:"errorMessage,omitempty"`
	RetryCount     int               `json:"retryCount"`
	ConsumerGroups []MessageConsumer `json:"consumerGroups"`
}

// Message reads one message by its partition id and transaction id. An unknown message is an
// *HTTPError matching ErrNotFound.
func (c *Client) Message(ctx context.Context, partitionID, transactionID string) (*MessageDetail, error) {
	var d MessageDetail
	path := "/api/v1/messages/" + pathEscape(partitionID) + "/" + pathEscape(transactionID)
	if _, err := c.do(ctx, call{method: http.MethodGet, path: path}, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// DeleteMessage deletes one message. It reports whether the message existed.
func (c *Client) DeleteMessage(ctx context.Context, partitionID, transactionID string) (bool, error) {
	var ans struct {
		Success bool `json:"success"`
	}
	path := "/api/v1/messages/" + pathEscape(partitionID) + "/" + pathEscape(transactionID)
	_, err := c.do(ctx, call{method: http.MethodDelete, path: path}, &ans)
	return ans.Success, err
}

// ConsumerGroup is one consumer group on one queue, as the group listing shows it.
type ConsumerGroup struct {
	Name              string `json:"name"`
	Queue             string `json:"queueName"`
	Members           int    `json:"members"`
	PartitionsWithLag int    `json:"partitionsWithLag"`
	TotalLag          int    `json:"totalLag"`
	// MaxTimeLag is in seconds.
	MaxTimeLag            int       `json:"maxTimeLag"`
	State                 string    `json:"state"` // Stable, Lagging or Dead
	SubscriptionMode      string    `json:"subscriptionMode,omitempty"`
	SubscriptionTimestamp time.Time `json:"subscriptionTimestamp"`
	SubscriptionCreatedAt time.Time `json:"subscriptionCreatedAt"`
}

// ConsumerGroups lists every consumer group with its lag, one entry per group and queue.
func (c *Client) ConsumerGroups(ctx context.Context) ([]ConsumerGroup, error) {
	var out []ConsumerGroup
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/consumer-groups"}, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// GroupPartition is a consumer group's cursor on one partition.
type GroupPartition struct {
	Queue          string    `json:"queue"`
	Partition      string    `json:"partition"`
	WorkerID       string    `json:"workerId,omitempty"`
	LastConsumedAt time.Time `json:"lastConsumedAt"`
	TotalConsumed  int       `json:"totalConsumed"`
	OffsetLag      int       `json:"offsetLag"`
	TimeLagSeconds int       `json:"timeLagSeconds"`
	LeaseActive    bool      `json:"leaseActive"`
}

// ConsumerGroupDetail lists the group's cursors on every queue it reads, ordered by queue as
// the broker answers. An unknown group is an *HTTPError matching ErrNotFound.
func (c *Client) ConsumerGroupDetail(ctx context.Context, group string) ([]GroupPartition, error) {
	var ans map[string]struct {
		Partitions []GroupPartition `json:"partitions"`
	}
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/consumer-groups/" + pathEscape(group)}, &ans); err != nil {
		return nil, err
	}
	var out []GroupPartition
	for _, name := range sortedKeys(ans) {
		for _, p := range ans[name].Partitions {
			p.Queue = name
			out = append(out, p)
		}
	}
	return out, nil
}

// sortedKeys returns m's keys in order (insertion sort: a group reads few queues).
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		i := len(keys)
		keys = append(keys, k)
		for ; i > 0 && keys[i-1] > k; i-- {
			keys[i] = keys[i-1]
		}
		keys[i] = k
	}
	return keys
}

// GroupLag is one lagging (consumer group, partition) pair.
type GroupLag struct {
	ConsumerGroup      string    `json:"consumer_group"`
	Queue              string    `json:"queue_name"`
	Partition          string    `json:"partition_name"`
	PartitionID        string    `json:"partition_id"`
	WorkerID           string    `json:"worker_id,omitempty"`
	OffsetLag          int       `json:"offset_lag"`
	TimeLagSeconds     int       `json:"time_lag_seconds"`
	OldestUnconsumedAt time.Time `json:"oldest_unconsumed_at"`
	LastConsumedAt     time.Time `json:"last_consumed_at"`
}

// LaggingGroups lists the (group, partition) pairs whose oldest unconsumed message is at
// least minLag old (whole seconds), most lagging first.
func (c *Client) LaggingGroups(ctx context.Context, minLag time.Duration) ([]GroupLag, error) {
	v := url.Values{"minLagSeconds": {strconv.FormatInt(int64(minLag/time.Second), 10)}}
	var out []GroupLag
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/consumer-groups/lagging", query: v}, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteConsumerGroup removes the group's cursors and leases on every queue, and its
// subscriptions. It returns how many partition cursors were removed. It needs the admin
// role when authentication is on.
func (c *Client) DeleteConsumerGroup(ctx context.Context, group string) (int, error) {
	var ans struct {
		DeletedPartitions int `json:"deletedPartitions"`
	}
	_, err := c.do(ctx, call{method: http.MethodDelete, path: "/api/v1/consumer-groups/" + pathEscape(group)}, &ans)
	return ans.DeletedPartitions, err
}

// Trace is one trace event recorded on a message.
type Trace struct {
	ID            string          `json:"id"`
	TransactionID string          `json:"transaction_id,omitempty"`
	PartitionID   string          `json:"partition_id,omitempty"`
	EventType     string          `json:"event_type"`
	Data          json.RawMessage `json:"data"`
	ConsumerGroup string          `json:"consumer_group"`
	WorkerID      string          `json:"worker_id"`
	CreatedAt     time.Time       `json:"created_at"`
	TraceNames    []string        `json:"trace_names"`
	// Queue and Partition are set by TracesByName.
	Queue     string `json:"queue_name,omitempty"`
	Partition string `json:"partition_name,omitempty"`
}

// MessageTraces lists the traces recorded on one message, oldest first.
func (c *Client) MessageTraces(ctx context.Context, partitionID, transactionID string) ([]Trace, error) {
	var ans struct {
		Traces []Trace `json:"traces"`
	}
	path := "/api/v1/traces/" + pathEscape(partitionID) + "/" + pathEscape(transactionID)
	if _, err := c.do(ctx, call{method: http.MethodGet, path: path}, &ans); err != nil {
		return nil, err
	}
	return ans.Traces, nil
}

// TracePage is one page of the traces carrying a name.
type TracePage struct {
	Traces []Trace `json:"traces"`
	Total  int     `json:"total"`
}

// TracesByName lists the traces carrying name, with a page (limit 0: the broker's default).
func (c *Client) TracesByName(ctx context.Context, name string, limit, offset int) (*TracePage, error) {
	v := url.Values{}
	setPage(v, time.Time{}, time.Time{}, limit, offset)
	var p TracePage
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/traces/by-name/" + pathEscape(name), query: v}, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// TraceName is one trace name with its counts.
type TraceName struct {
	Name         string    `json:"trace_name"`
	TraceCount   int       `json:"trace_count"`
	MessageCount int       `json:"message_count"`
	LastSeen     time.Time `json:"last_seen"`
}

// TraceNamePage is one page of the trace names.
type TraceNamePage struct {
	Names []TraceName `json:"trace_names"`
	Total int         `json:"total"`
}

// TraceNames lists the trace names in use, with a page (limit 0: the broker's default).
func (c *Client) TraceNames(ctx context.Context, limit, offset int) (*TraceNamePage, error) {
	v := url.Values{}
	setPage(v, time.Time{}, time.Time{}, limit, offset)
	var p TraceNamePage
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/traces/names", query: v}, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Status is the broker's dashboard summary (GET /api/v1/status) over a time window: the
// parts an operator reads first. Throughput points are left out.
type Status struct {
	TimeRange struct {
		From time.Time `json:"from"`
		To   time.Time `json:"to"`
	} `json:"timeRange"`
	Messages Counters `json:"messages"`
	Leases   struct {
		Active               int `json:"active"`
		PartitionsWithLeases int `json:"partitionsWithLeases"`
	} `json:"leases"`
	DeadLetterQueue struct {
		TotalMessages      int `json:"totalMessages"`
		AffectedPartitions int `json:"affectedPartitions"`
	} `json:"deadLetterQueue"`
	Queues []struct {
		Name          string `json:"name"`
		Partitions    int    `json:"partitions"`
		TotalConsumed int    `json:"totalConsumed"`
	} `json:"queues"`
	Workers []struct {
		Hostname string    `json:"hostname"`
		WorkerID string    `json:"workerId"`
		LastSeen time.Time `json:"lastSeen"`
	} `json:"workers"`
	// StatsAge is how many seconds old the counts are; nil before the stats job first ran.
	StatsAge *int `json:"statsAge"`
}

// Status reads the broker's summary over the window that ends now and lasts window (0: the
// broker's default, one hour).
func (c *Client) Status(ctx context.Context, window time.Duration) (*Status, error) {
	v := url.Values{}
	if window > 0 {
		v.Set("from", FromTime(time.Now().Add(-window)))
	}
	var s Status
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/status", query: v}, &s); err != nil {
		return nil, err
	}
	return &s, nil
}
