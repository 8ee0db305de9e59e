package queen

import (
	"context"
	"net/http"
)

// DLQRequeue selects dead-lettered entries to give another chance (POST /api/v1/dlq/requeue):
// by IDs (their DLQIDs), or, when IDs is nil, every entry matching the filter fields, up to
// Limit (default and maximum 1000), oldest failure first. With ToQueue set the entries are
// copied as new messages into ToQueue (ToPartition, or each entry's own partition); without
// it each message goes back to the consumer group that dead-lettered it.
type DLQRequeue struct {
	DLQSelection

	ToQueue, ToPartition string
}

// DLQRequeueResult is the broker's answer to a requeue.
type DLQRequeueResult struct {
	Mode      string `json:"mode"` // redeliver or copy
	Requeued  int    `json:"requeued"`
	Remaining int    `json:"remaining"` // by filter: matching entries still left
	Skipped   []struct {
		ID     string `json:"id"`
		Reason string `json:"reason"`
	} `json:"skipped"`
	Copies []struct {
		DLQID         string `json:"dlqId"`
		MessageID     string `json:"messageId"`
		TransactionID string `json:"transactionId"`
		QueueName     string `json:"queueName"`
		PartitionID   string `json:"partitionId"`
	} `json:"copies,omitempty"`
}

// RequeueDLQ requeues dead-lettered entries. Repeating a call is safe: requeued entries are
// gone. Brokers without the route answer ErrUnsupported.
func (c *Client) RequeueDLQ(ctx context.Context, r DLQRequeue) (*DLQRequeueResult, error) {
	body := r.body()
	if r.ToQueue != "" {
		body["mode"], body["toQueue"] = "copy", r.ToQueue
		if r.ToPartition != "" {
			body["toPartition"] = r.ToPartition
		}
	}
	var out DLQRequeueResult
	if _, err := c.do(ctx, call{method: http.MethodPost, path: "/api/v1/dlq/requeue", body: body}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RetryResult is the broker's answer to RetryMessage: per consumer group, what it did
// (requeued, retry_delay_cleared or already_requeued), and the groups it could not requeue.
type RetryResult struct {
	Success        bool `json:"success"`
	ConsumerGroups []struct {
		ConsumerGroup string `json:"consumerGroup"`
		Action        string `json:"action"`
	} `json:"consumerGroups"`
	Skipped []struct {
		ConsumerGroup string `json:"consumerGroup"`
		Reason        string `json:"reason"`
	} `json:"skipped"`
	Error string `json:"error,omitempty"` // why nothing was done
}

// RetryMessage makes a dead-lettered or failed message deliverable again, for group (every
// group when empty). An unknown message is an *HTTPError with status 404.
func (c *Client) RetryMessage(ctx context.Context, partitionID, transactionID, group string) (*RetryResult, error) {
	body := map[string]any{}
	if group != "" {
		body["consumerGroup"] = group
	}
	path := "/api/v1/messages/" + pathEscape(partitionID) + "/" + pathEscape(transactionID) + "/retry"
	var out RetryResult
	if _, err := c.do(ctx, call{method: http.MethodPost, path: path, body: body}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
