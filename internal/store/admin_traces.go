package store

import (
	"context"
	"fmt"

	"github.com/queen-go/queen/internal/mq"
)

// AddTrace stores a trace record; found is false when the message does not exist.
func (s *Store) AddTrace(ctx context.Context, t mq.TraceRecord) (found bool, err error) {
	args := addTraceArgs{ID: t.ID, PID: t.PartitionID, Key: t.TransactionID, Group: t.Group, Event: t.EventType,
		Data: string(t.Data), Worker: t.WorkerID, Names: t.Names, Now: s.nowArg()}
	if _, err = s.queryOne(ctx, sqlAddTrace, args.args(), &found); err != nil {
		return false, fmt.Errorf("add trace: %w", err)
	}
	return found, nil
}

const sqlAddTrace = `SELECT qg_add_trace(p_id => $1::uuid, p_pid => $2::uuid, p_key => $3, p_group => $4,
	p_event => $5, p_data => $6, p_worker => $7, p_names => $8, p_now => $9)`

// addTraceArgs are the parameters of qg_add_trace (see sqlCall).
type addTraceArgs struct {
	ID, PID, Key, Group, Event string
	Data                       string // JSON text
	Worker                     string
	Names                      []string
	Now                        any
}

func (a addTraceArgs) args() []any {
	return []any{a.ID, a.PID, a.Key, a.Group, a.Event, a.Data, a.Worker, a.Names, a.Now}
}

// MessageTraces lists a message's trace records, oldest first. partitionID must be a
// canonical UUID.
func (s *Store) MessageTraces(ctx context.Context, partitionID, transactionID string) ([]mq.Trace, error) {
	out, err := queryAll(ctx, s, "SELECT * FROM qg_message_traces(p_pid => $1::uuid, p_key => $2)", []any{partitionID, transactionID},
		func(r rowScanner, t *mq.Trace) error {
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
func (s *Store) TracesByName(ctx context.Context, name string, p mq.Page) (out []mq.NamedTrace, total int64, err error) {
	err = s.queryBatch(ctx,
		batchQuery{"SELECT qg_trace_name_count(p_name => $1)", []any{name}, scanInto(&total)},
		batchQuery{"SELECT * FROM qg_traces_by_name(p_name => $1, p_limit => $2, p_offset => $3)", []any{name, p.Limit, p.Offset}, func(r rowScanner) error {
			var t mq.NamedTrace
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

// TraceNames returns a page of the trace names holding search (every name when empty), most
// recently seen first, and how many match.
func (s *Store) TraceNames(ctx context.Context, search string, p mq.Page) (out []mq.TraceName, total int64, err error) {
	err = s.queryBatch(ctx,
		batchQuery{"SELECT qg_trace_name_total(p_search => $1)", []any{nullIfEmpty(search)}, scanInto(&total)},
		batchQuery{"SELECT * FROM qg_trace_names(p_search => $1, p_limit => $2, p_offset => $3)",
			[]any{nullIfEmpty(search), p.Limit, p.Offset}, func(r rowScanner) error {
				var n mq.TraceName
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
