package store

import (
	"context"
	"fmt"
	"time"

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

// traceRow is a row of qg_message_traces.
type traceRow struct {
	ID        string    `db:"id"`
	EventType string    `db:"event_type"`
	Data      *string   `db:"data"`
	Group     string    `db:"consumer_group"`
	WorkerID  string    `db:"worker_id"`
	CreatedAt time.Time `db:"created_at"`
	Names     []string  `db:"trace_names"`
}

func (r traceRow) trace() mq.Trace {
	return mq.Trace{ID: r.ID, EventType: r.EventType, Group: r.Group, WorkerID: r.WorkerID, Data: jsonText(r.Data),
		CreatedAt: r.CreatedAt, Names: r.Names}
}

// namedTraceRow is a row of qg_traces_by_name: a trace record with its message.
type namedTraceRow struct {
	traceRow
	TransactionID string  `db:"transaction_id"`
	PartitionID   string  `db:"partition_id"`
	Queue         *string `db:"queue_name"`
	Partition     *string `db:"partition_name"`
	Payload       *string `db:"payload"`
	Encrypted     bool    `db:"encrypted"`
}

// traceNameRow is a row of qg_trace_names; its fields are mq.TraceName's.
type traceNameRow struct {
	Name     string    `db:"trace_name"`
	Traces   int64     `db:"trace_count"`
	Messages int64     `db:"message_count"`
	LastSeen time.Time `db:"last_seen"`
}

var (
	traceRows      = callOf[traceRow]("SELECT * FROM qg_message_traces(p_pid => $1::uuid, p_key => $2)")
	namedTraceRows = callOf[namedTraceRow]("SELECT * FROM qg_traces_by_name(p_name => $1, p_limit => $2, p_offset => $3)")
	traceNameRows  = callOf[traceNameRow]("SELECT * FROM qg_trace_names(p_search => $1, p_limit => $2, p_offset => $3)")
)

// MessageTraces lists a message's trace records, oldest first. partitionID must be a
// canonical UUID.
func (s *Store) MessageTraces(ctx context.Context, partitionID, transactionID string) ([]mq.Trace, error) {
	out, err := collect(ctx, s, traceRows, []any{partitionID, transactionID}, traceRow.trace)
	if err != nil {
		return nil, fmt.Errorf("read traces: %w", err)
	}
	return out, nil
}

// TracesByName returns a page of the records carrying name, oldest first, and their total.
func (s *Store) TracesByName(ctx context.Context, name string, p mq.Page) (out []mq.NamedTrace, total int64, err error) {
	err = s.queryBatch(ctx,
		batchQuery{"SELECT qg_trace_name_count(p_name => $1)", []any{name}, scanInto(&total)},
		namedTraceRows.call([]any{name, p.Limit, p.Offset}, func(r namedTraceRow) {
			t := mq.NamedTrace{Trace: r.trace(), TransactionID: r.TransactionID, PartitionID: r.PartitionID,
				Queue: r.Queue, Partition: r.Partition, Encrypted: r.Encrypted}
			if r.Payload != nil {
				t.Payload = []byte(*r.Payload)
			}
			out = append(out, t)
		}))
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
		traceNameRows.call([]any{nullIfEmpty(search), p.Limit, p.Offset}, func(r traceNameRow) {
			out = append(out, mq.TraceName(r))
		}))
	if err != nil {
		return nil, 0, fmt.Errorf("read trace names: %w", err)
	}
	return out, total, nil
}
