package queen

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

// This file holds the typed calls of the /streams/v1 routes (docs/api/streams.md). The Stream
// builder of the streams sub-package runs on them; they are exported so that tools can list,
// inspect and delete stream queries, and so that other runtimes can be written on top.

// ErrConfigHashMismatch matches the 409 a registration gets when the stored query of that
// name has another config_hash and reset was not asked for (docs/api/streams.md §3).
var ErrConfigHashMismatch = errors.New("queen: config_hash mismatch")

// StreamRegistration is a query registration to send (docs/api/streams.md §3).
type StreamRegistration struct {
	Name        string `json:"name"`
	SourceQueue string `json:"source_queue"`
	SinkQueue   string `json:"sink_queue,omitempty"`
	ConfigHash  string `json:"config_hash"`
	// Reset consents to discarding the state of a query whose chain changed. It does nothing
	// when the hash is unchanged.
	Reset bool `json:"reset"`
}

// StreamRegistered is the answer to a registration.
type StreamRegistered struct {
	QueryID    string `json:"query_id"`
	Name       string `json:"name"`
	ConfigHash string `json:"config_hash"`
	// Fresh is true when the registration created the query.
	Fresh bool `json:"fresh"`
	// Reset is true when the registration wiped the state of a changed chain.
	Reset bool `json:"reset"`
}

// StreamMismatchError is a 409 registration: the stored query has another config_hash.
// It matches ErrConfigHashMismatch.
type StreamMismatchError struct {
	// QueryID is the stored query's id; Name the registration's name.
	QueryID, Name string
	// Message is the broker's explanation.
	Message string
}

// Error returns the broker's message with the remedy.
func (e *StreamMismatchError) Error() string { return "queen: " + e.Message }

// Is matches ErrConfigHashMismatch.
func (e *StreamMismatchError) Is(target error) bool { return target == ErrConfigHashMismatch }

// RegisterStreamQuery creates or re-registers a stream query (POST /streams/v1/queries).
// A changed chain without Reset is a *StreamMismatchError.
func (c *Client) RegisterStreamQuery(ctx context.Context, r StreamRegistration) (StreamRegistered, error) {
	var out struct {
		StreamRegistered
		Success *bool  `json:"success"`
		Error   string `json:"error"`
	}
	_, err := c.do(ctx, call{method: http.MethodPost, path: "/streams/v1/queries", body: r}, &out)
	var he *HTTPError
	if errors.As(err, &he) && he.StatusCode == http.StatusConflict {
		var body struct {
			QueryID string `json:"query_id"`
			Name    string `json:"name"`
			Error   string `json:"error"`
		}
		_ = json.Unmarshal(he.Body, &body)
		if body.Error == "" {
			body.Error = he.Message
		}
		return StreamRegistered{}, &StreamMismatchError{QueryID: body.QueryID, Name: body.Name, Message: body.Error}
	}
	if err != nil {
		return StreamRegistered{}, err
	}
	if out.Success != nil && !*out.Success {
		return StreamRegistered{}, errors.New("queen: stream registration failed: " + out.Error)
	}
	return out.StreamRegistered, nil
}

// StateOp is one state change of a cycle: an upsert of Key to Value, or a delete of Key.
type StateOp struct {
	// Type is "upsert" or "delete".
	Type string `json:"type"`
	Key  string `json:"key"`
	// Value is the upserted JSON value (ignored by deletes).
	Value any `json:"value,omitempty"`
}

// StreamPushItem is a message a cycle writes to a sink queue.
type StreamPushItem struct {
	Queue     string `json:"queue"`
	Partition string `json:"partition,omitempty"`
	Payload   any    `json:"payload"`
	// TransactionID makes the write idempotent in its partition: a cycle repeated with the
	// same id reports "duplicate" instead of writing the message twice.
	TransactionID string `json:"transactionId,omitempty"`
	TraceID       string `json:"traceId,omitempty"`
}

// CycleAck is the source acknowledgement of a cycle (docs/api/streams.md §4.3).
type CycleAck struct {
	TransactionID string `json:"transactionId"`
	LeaseID       string `json:"leaseId,omitempty"`
	// Status is "completed" (default) or "dlq"/"failed" to dead-letter the acked message.
	Status string `json:"status,omitempty"`
	// Count is informational: how many messages the caller believes the ack covers.
	Count int    `json:"count"`
	Error string `json:"error,omitempty"`
}

// Cycle is one atomic processing step of a stream (POST /streams/v1/cycle): state changes,
// sink messages and the source ack, all applied or none.
type Cycle struct {
	QueryID       string           `json:"query_id"`
	PartitionID   string           `json:"partition_id"`
	ConsumerGroup string           `json:"consumer_group,omitempty"`
	StateOps      []StateOp        `json:"state_ops"`
	PushItems     []StreamPushItem `json:"push_items"`
	// Ack is nil for a cycle that acknowledges nothing (an idle flush).
	Ack *CycleAck `json:"ack"`
	// ReleaseLease false keeps the source lease after a partial ack (a gate's denied tail
	// comes back when the lease runs out, in order).
	ReleaseLease bool `json:"release_lease"`
}

// CycleResult is the answer to a cycle. Success false is a rollback: nothing was applied.
type CycleResult struct {
	Success         bool   `json:"success"`
	QueryID         string `json:"query_id"`
	PartitionID     string `json:"partition_id"`
	Queue           string `json:"queueName"`
	StateOpsApplied int    `json:"state_ops_applied"`
	PushResults     []struct {
		Index         int    `json:"index"`
		TransactionID string `json:"transaction_id"`
		Status        string `json:"status"`
		MessageID     string `json:"message_id"`
		PartitionID   string `json:"partition_id"`
		Queue         string `json:"queueName"`
	} `json:"push_results"`
	AckResult *struct {
		Success       bool `json:"success"`
		Count         int  `json:"count"`
		LeaseReleased bool `json:"lease_released"`
		DLQ           bool `json:"dlq"`
	} `json:"ack_result"`
	Error string `json:"error"`
}

// CommitCycle sends one cycle. A rollback is a result with Success false and a nil error;
// the error is for answers that are not a cycle outcome (validation, unknown query, network).
func (c *Client) CommitCycle(ctx context.Context, cy Cycle) (CycleResult, error) {
	if cy.StateOps == nil {
		cy.StateOps = []StateOp{}
	}
	if cy.PushItems == nil {
		cy.PushItems = []StreamPushItem{}
	}
	var out CycleResult
	_, err := c.do(ctx, call{method: http.MethodPost, path: "/streams/v1/cycle", body: cy}, &out)
	return out, err
}

// StateQuery selects rows of one state shard (POST /streams/v1/state/get). Empty filters
// select everything; filters combine with AND.
type StateQuery struct {
	QueryID     string   `json:"query_id"`
	PartitionID string   `json:"partition_id"`
	Keys        []string `json:"keys,omitempty"`
	KeyPrefix   string   `json:"key_prefix,omitempty"`
	// RipeAtOrBefore, when not nil, keeps rows whose value has a numeric windowEnd ≤ it (ms).
	RipeAtOrBefore *int64 `json:"ripe_at_or_before,omitempty"`
}

// StateRow is one stored state row.
type StateRow struct {
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// StreamState reads rows of one shard, ordered by key.
func (c *Client) StreamState(ctx context.Context, q StateQuery) ([]StateRow, error) {
	var out struct {
		Success *bool      `json:"success"`
		Rows    []StateRow `json:"rows"`
		Error   string     `json:"error"`
	}
	if _, err := c.do(ctx, call{method: http.MethodPost, path: "/streams/v1/state/get", body: q}, &out); err != nil {
		return nil, err
	}
	if out.Success != nil && !*out.Success {
		return nil, errors.New("queen: state read failed: " + out.Error)
	}
	return out.Rows, nil
}

// StreamQuery is one registration as GET /streams/v1/queries lists it.
type StreamQuery struct {
	QueryID     string    `json:"query_id"`
	Name        string    `json:"name"`
	SourceQueue string    `json:"source_queue"`
	SinkQueue   *string   `json:"sink_queue"`
	ConfigHash  string    `json:"config_hash"`
	StateRows   int64     `json:"state_rows"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// StreamQueries lists the registered stream queries by name.
func (c *Client) StreamQueries(ctx context.Context) ([]StreamQuery, error) {
	var out struct {
		Queries []StreamQuery `json:"queries"`
	}
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/streams/v1/queries"}, &out)
	return out.Queries, err
}

// DeleteStreamQuery deletes a query and all its state (its consumer group stays). It reports
// whether the query existed and how many state rows went with it.
func (c *Client) DeleteStreamQuery(ctx context.Context, name string) (existed bool, rows int64, err error) {
	var out struct {
		Existed bool  `json:"existed"`
		Rows    int64 `json:"state_rows_deleted"`
	}
	_, err = c.do(ctx, call{method: http.MethodDelete, path: "/streams/v1/queries/" + pathEscape(name)}, &out)
	return out.Existed, out.Rows, err
}
