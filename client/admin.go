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

// Health is the broker's GET /health answer.
type Health struct {
	Status             string `json:"status"`   // "healthy" or "unhealthy"
	Database           string `json:"database"` // "connected" or "disconnected"
	Server             string `json:"server"`
	Version            string `json:"version"`
	WorkerID           string `json:"worker_id"`
	MaintenanceMode    bool   `json:"maintenanceMode"`
	PopMaintenanceMode bool   `json:"popMaintenanceMode"`
}

// Healthy reports whether the broker reached its database.
func (h Health) Healthy() bool { return h.Status == "healthy" }

// Health asks the broker for its state, trying each instance once and without backoff, so
// the answer describes now. An unhealthy broker answers 503: the Health is returned with the
// *HTTPError.
func (c *Client) Health(ctx context.Context) (Health, error) {
	var h Health
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/health", noRetry: true}, &h)
	var he *HTTPError
	if errors.As(err, &he) {
		_ = json.Unmarshal(he.Body, &h)
	}
	return h, err
}

// DLQQuery filters the dead-letter listing. Zero fields do not filter.
type DLQQuery struct {
	ConsumerGroup string // "__QUEUE_MODE__" for queue mode
	Partition     string
	From, To      time.Time // inclusive bounds on FailedAt
	Limit, Offset int       // default 100, 0; the broker caps Limit at 1000
}

// DLQEntry is one dead-lettered message of one consumer group.
type DLQEntry struct {
	DLQID         string          `json:"dlqId"` // the entry's own id (RequeueDLQ names entries by it)
	ID            string          `json:"id"`
	TransactionID string          `json:"transactionId"`
	PartitionID   string          `json:"partitionId"`
	Queue         string          `json:"queue"`
	Partition     string          `json:"partition"`
	ConsumerGroup string          `json:"consumerGroup"`
	ErrorMessage  string          `json:"errorMessage"`
	RetryCount    int             `json:"retryCount"`
	Data          json.RawMessage `json:"data"`
	TraceID       string          `json:"traceId,omitempty"`
	ProducerSub   string          `json:"producerSub,omitempty"`
	CreatedAt     time.Time       `json:"createdAt"`
	FailedAt      time.Time       `json:"failedAt"`
}

// DLQPage is one page of the dead-letter listing, newest failure first.
type DLQPage struct {
	Messages []DLQEntry `json:"messages"`
	Total    int        `json:"total"` // entries matching the filters, ignoring Limit/Offset
}

// DLQ lists the queue's dead-lettered messages (all queues when q has no name; narrowed to
// its partition when q has one). Brokers without DLQ browsing answer ErrUnsupported.
func (q Queue) DLQ(ctx context.Context, f DLQQuery) (*DLQPage, error) {
	v := url.Values{}
	set := func(k, val string) {
		if val != "" {
			v.Set(k, val)
		}
	}
	set("queue", q.name)
	set("partition", q.partition)
	if f.Partition != "" {
		v.Set("partition", f.Partition)
	}
	set("consumerGroup", f.ConsumerGroup)
	if !f.From.IsZero() {
		v.Set("from", FromTime(f.From))
	}
	if !f.To.IsZero() {
		v.Set("to", FromTime(f.To))
	}
	if f.Limit > 0 {
		v.Set("limit", strconv.Itoa(f.Limit))
	}
	if f.Offset > 0 {
		v.Set("offset", strconv.Itoa(f.Offset))
	}
	var page DLQPage
	if _, err := q.c.do(ctx, call{method: http.MethodGet, path: "/api/v1/dlq", query: v}, &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// SeekTarget is where Seek moves a consumer group's cursor: SeekEnd or SeekTime(t).
type SeekTarget struct {
	toEnd bool
	at    time.Time
}

// SeekEnd skips everything stored so far.
var SeekEnd = SeekTarget{toEnd: true}

// SeekTime replays (or skips to) the messages created at or after t.
func SeekTime(t time.Time) SeekTarget { return SeekTarget{at: t} }

// SeekResult reports a seek.
type SeekResult struct {
	ConsumerGroup     string `json:"consumerGroup"`
	Queue             string `json:"queueName"`
	Partition         string `json:"partitionName,omitempty"`
	PartitionsUpdated int    `json:"partitionsUpdated"`
}

// Seek moves the consumer group's cursor on every partition of the queue (or, for a queue
// narrowed to a partition, on that partition, which supports only SeekEnd). Live leases of
// the group there are cleared and retry counters reset. Brokers without consumer-group
// administration answer ErrUnsupported.
func (q Queue) Seek(ctx context.Context, group string, to SeekTarget) (SeekResult, error) {
	if q.name == "" || group == "" {
		return SeekResult{}, errors.New("queen: seek needs a queue and a consumer group")
	}
	path := "/api/v1/consumer-groups/" + pathEscape(group) + "/queues/" + pathEscape(q.name)
	var body any
	switch {
	case q.partition != "" && !to.toEnd:
		return SeekResult{}, errors.New("queen: a partition can only be sought to its end")
	case q.partition != "":
		path += "/partitions/" + pathEscape(q.partition) + "/seek"
	case to.toEnd:
		path, body = path+"/seek", map[string]bool{"toEnd": true}
	default:
		path, body = path+"/seek", map[string]string{"timestamp": FromTime(to.at)}
	}
	var ans struct {
		SeekResult
		Updated bool `json:"updated"` // the partition route's answer instead of a count
	}
	if _, err := q.c.do(ctx, call{method: http.MethodPost, path: path, body: body}, &ans); err != nil {
		return SeekResult{}, err
	}
	if ans.Updated {
		ans.PartitionsUpdated = 1
	}
	return ans.SeekResult, nil
}

// DeleteConsumerGroup removes the group's cursors and leases on this queue, and its
// subscription, so an abandoned group no longer holds messages unconsumed. Its DLQ entries
// stay. It needs the admin role when authentication is on.
func (q Queue) DeleteConsumerGroup(ctx context.Context, group string) error {
	path := "/api/v1/consumer-groups/" + pathEscape(group) + "/queues/" + pathEscape(q.name)
	_, err := q.c.do(ctx, call{method: http.MethodDelete, path: path}, nil)
	return err
}
