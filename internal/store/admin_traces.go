package store

import (
	"context"
	"fmt"
	"time"
)

// TraceRecord is a trace event to store on a message (admin-api.md §4.1).
type TraceRecord struct {
	ID                         string // UUIDv7
	PartitionID, TransactionID string // PartitionID a canonical UUID
	Group, EventType           string
	Data                       []byte // JSON text
	WorkerID                   string
	Names                      []string
}

// Trace is a stored trace record.
type Trace struct {
	ID, EventType, Group, WorkerID string
	Data                           []byte
	CreatedAt                      time.Time
	Names                          []string
}

// NamedTrace is a trace record found by name, with where its message lives and the message's
// payload as stored (nil once the message is gone).
type NamedTrace struct {
	Trace
	TransactionID, PartitionID string
	Queue, Partition           *string
	Payload                    []byte
	Encrypted                  bool
}

// TraceName is one trace name with its record and message counts.
type TraceName struct {
	Name             string
	Traces, Messages int64
	LastSeen         time.Time
}

// AddTrace stores a trace record; found is false when the message does not exist.
func (s *Store) AddTrace(ctx context.Context, t TraceRecord) (found bool, err error) {
	args := []any{t.ID, t.PartitionID, t.TransactionID, t.Group, t.EventType, string(t.Data), t.WorkerID, t.Names, s.nowArg()}
	if _, err = s.queryOne(ctx, "SELECT qg_add_trace($1::uuid, $2::uuid, $3, $4, $5, $6, $7, $8, $9)", args, &found); err != nil {
		return false, fmt.Errorf("add trace: %w", err)
	}
	return found, nil
}

// MessageTraces lists a message's trace records, oldest first. partitionID must be a
// canonical UUID.
func (s *Store) MessageTraces(ctx context.Context, partitionID, transactionID string) ([]Trace, error) {
	out, err := queryAll(ctx, s, "SELECT * FROM qg_message_traces($1::uuid, $2)", []any{partitionID, transactionID},
		func(r rowScanner, t *Trace) error {
			var data *string
			err := r.Scan(&t.ID, &t.EventType, &data, &t.Group, &t.WorkerID, &t.CreatedAt, &t.Names)
			t.Data = jsonText(data)
			return err
		})
	if err != nil {
		return nil, fmt.Errorf("read traces: %w", err)
	}
	return out, nil
}

// TracesByName returns a page of the records carrying name, oldest first, and their total.
func (s *Store) TracesByName(ctx context.Context, name string, p Page) (out []NamedTrace, total int64, err error) {
	err = s.queryBatch(ctx,
		batchQuery{"SELECT qg_trace_name_count($1)", []any{name}, scanInto(&total)},
		batchQuery{"SELECT * FROM qg_traces_by_name($1, $2, $3)", []any{name, p.Limit, p.Offset}, func(r rowScanner) error {
			var t NamedTrace
			var data, payload *string
			if err := r.Scan(&t.ID, &t.TransactionID, &t.PartitionID, &t.EventType, &data, &t.Group, &t.WorkerID,
				&t.CreatedAt, &t.Queue, &t.Partition, &payload, &t.Encrypted, &t.Names); err != nil {
				return err
			}
			t.Data = jsonText(data)
			if payload != nil {
				t.Payload = []byte(*payload)
			}
			out = append(out, t)
			return nil
		}})
	if err != nil {
		return nil, 0, fmt.Errorf("read traces by name: %w", err)
	}
	return out, total, nil
}

// TraceNames returns a page of trace names, most recently seen first, and how many exist.
func (s *Store) TraceNames(ctx context.Context, p Page) (out []TraceName, total int64, err error) {
	err = s.queryBatch(ctx,
		batchQuery{"SELECT qg_trace_name_total()", nil, scanInto(&total)},
		batchQuery{"SELECT * FROM qg_trace_names($1, $2)", []any{p.Limit, p.Offset}, func(r rowScanner) error {
			var n TraceName
			if err := r.Scan(&n.Name, &n.Traces, &n.Messages, &n.LastSeen); err != nil {
				return err
			}
			out = append(out, n)
			return nil
		}})
	if err != nil {
		return nil, 0, fmt.Errorf("read trace names: %w", err)
	}
	return out, total, nil
}
