package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
)

// Helpers of the streams tests (docs/api/streams.md).

type streamRegistered struct {
	Success    bool   `json:"success"`
	QueryID    string `json:"query_id"`
	Name       string `json:"name"`
	ConfigHash string `json:"config_hash"`
	Fresh      bool   `json:"fresh"`
	Reset      bool   `json:"reset"`
	Error      string `json:"error"`
}

type streamCycled struct {
	Success         bool     `json:"success"`
	QueryID         string   `json:"query_id"`
	PartitionID     string   `json:"partition_id"`
	QueueName       string   `json:"queueName"`
	StateOpsApplied int      `json:"state_ops_applied"`
	PushResults     []pushed `json:"push_results"`
	AckResult       *struct {
		Success       bool  `json:"success"`
		Count         int64 `json:"count"`
		LeaseReleased bool  `json:"lease_released"`
		DLQ           bool  `json:"dlq"`
	} `json:"ack_result"`
	Error string `json:"error"`
}

type streamRow struct {
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	UpdatedAt string          `json:"updated_at"`
}

// register registers name over b's queue with hash and returns the answer, requiring want.
func (b *bundle) register(name, hash string, extra obj, want int) streamRegistered {
	b.t.Helper()
	body := obj{"name": name, "source_queue": b.queue, "config_hash": hash}
	for k, v := range extra {
		body[k] = v
	}
	code, out := b.do("POST", "/streams/v1/queries", body)
	if code != want {
		b.t.Fatalf("register %s: %d %s, want %d", name, code, out, want)
	}
	return decode[streamRegistered](b.t, out)
}

// cycle sends a cycle and requires 200.
func (b *bundle) cycle(body obj) streamCycled {
	b.t.Helper()
	code, out := b.do("POST", "/streams/v1/cycle", body)
	if code != http.StatusOK {
		b.t.Fatalf("cycle: %d %s", code, out)
	}
	return decode[streamCycled](b.t, out)
}

// state reads a shard and requires 200.
func (b *bundle) state(body obj) []streamRow {
	b.t.Helper()
	code, out := b.do("POST", "/streams/v1/state/get", body)
	if code != http.StatusOK {
		b.t.Fatalf("state/get: %d %s", code, out)
	}
	v := decode[struct {
		Success bool        `json:"success"`
		Rows    []streamRow `json:"rows"`
	}](b.t, out)
	if !v.Success {
		b.t.Fatalf("state/get: %s", out)
	}
	return v.Rows
}

// stream is a registered query over b's queue with a batch of n messages popped by its group
// from partition "P" (n = 0: nothing pushed or popped).
type stream struct {
	*bundle
	queryID, group string
	pop            popped
}

func newStream(t *testing.T, b *bundle, n int) *stream {
	t.Helper()
	s := &stream{bundle: b, group: "streams." + b.queue}
	s.queryID = b.register(b.queue, "h1", nil, http.StatusOK).QueryID
	if n == 0 {
		return s
	}
	items := make([]obj, n)
	for i := range items {
		items[i] = obj{"payload": obj{"n": i + 1}, "transactionId": "m" + strconv.Itoa(i+1)}
	}
	b.push("P", items...)
	p, ok := b.pop("/api/v1/pop/queue/" + b.queue + "?batch=" + strconv.Itoa(n) + "&consumerGroup=" + s.group)
	if !ok || len(p.Messages) != n {
		t.Fatalf("pop: %v %+v", ok, p)
	}
	s.pop = p
	return s
}

// ackOf is an ack of message k (1-based) of the popped batch under its lease.
func (s *stream) ackOf(k int) obj {
	return obj{"transactionId": s.pop.Messages[k-1].TransactionID, "leaseId": s.pop.LeaseID, "status": "completed", "count": k}
}

// body is a cycle body for the popped partition, extended by extra.
func (s *stream) body(extra obj) obj {
	body := obj{"query_id": s.queryID, "partition_id": s.pop.PartitionID, "consumer_group": s.group}
	for k, v := range extra {
		body[k] = v
	}
	return body
}
