package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queen-go/queen/internal/budget"
	"github.com/queen-go/queen/internal/mq"
)

// Streams (docs/api/streams.md): typed calls of sql/functions/100_streams.sql.

const sqlStreamRegister = `SELECT query_id::text, outcome
	FROM qg_stream_register(p_tenant => $1, p_name => $2, p_source => $3, p_sink => $4, p_hash => $5,
		p_reset => $6, p_id => $7::uuid, p_now => $8)`

// streamRegisterArgs are the parameters of qg_stream_register (see sqlCall).
type streamRegisterArgs struct {
	Tenant, Name, Source string
	Sink                 *string
	Hash                 string
	Reset                bool
	ID                   string
	Now                  any
}

func (a streamRegisterArgs) args() []any {
	return []any{a.Tenant, a.Name, a.Source, a.Sink, a.Hash, a.Reset, a.ID, a.Now}
}

// StreamRegister registers a stream query (docs/api/streams.md §3); id is the query_id a fresh
// registration takes.
func (s *Store) StreamRegister(ctx context.Context, tenant string, r mq.StreamRegistration, id string) (mq.StreamRegistered, error) {
	var out mq.StreamRegistered
	args := streamRegisterArgs{Tenant: tenant, Name: r.Name, Source: r.SourceQueue, Sink: strPtr(r.SinkQueue),
		Hash: r.ConfigHash, Reset: r.Reset, ID: id, Now: s.nowArg()}
	err := s.withConn(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		return c.QueryRow(ctx, sqlStreamRegister, args.args()...).Scan(&out.QueryID, &out.Outcome)
	})
	if err != nil {
		return out, fmt.Errorf("stream register: %w", err)
	}
	return out, nil
}

const sqlStreamCycle = `SELECT kind, i, status, message_id::text AS message_id, partition_id::text AS partition_id,
		coalesce(queue_name, '') AS queue_name, n, released, dlq
	FROM qg_stream_cycle(p_call => $1)`

// streamCycleArgs are the parameters of qg_stream_cycle (see sqlCall): the whole cycle as one
// JSON object.
type streamCycleArgs struct {
	Call cycleCall
}

func (a streamCycleArgs) args() []any { return []any{a.Call} }

// cycleCall is qg_stream_cycle's argument, the composite qg_cycle_call as JSON, each key the
// type's field name (TestJSONCallsMatchTheirTypes): the shard, the state ops (OpTypes to
// OpValues), the sink pushes (Queues to Sub), the ack (AckKey to Release), the clock.
type cycleCall struct {
	QueryID     string    `json:"query_id"`
	PartitionID string    `json:"partition_id"`
	Group       string    `json:"consumer_group"`
	Tenant      string    `json:"tenant"`
	OpTypes     []string  `json:"op_types"`
	OpKeys      []string  `json:"op_keys"`
	OpValues    []*string `json:"op_values"`
	pushArrays
	Sub       *string `json:"sub"`
	AckKey    *string `json:"ack_key"`
	AckLease  *string `json:"ack_lease"`
	AckStatus string  `json:"ack_status"`
	AckError  *string `json:"ack_error"`
	Release   bool    `json:"release"`
	Now       any     `json:"now"`
}

// cycleRow is one row of qg_stream_cycle, read by column name: the cycle's ("cycle"), the
// ack's ("ack") or a sink push's.
type cycleRow struct {
	Kind        string  `db:"kind"`
	Index       int     `db:"i"`
	Status      *string `db:"status"`
	MessageID   *string `db:"message_id"`
	PartitionID *string `db:"partition_id"`
	Queue       string  `db:"queue_name"`
	N           int64   `db:"n"`
	Released    bool    `db:"released"`
	DLQ         bool    `db:"dlq"`
}

var cycleRows = readQuery[cycleRow]{sqlStreamCycle}

// StreamCycle commits one cycle (docs/api/streams.md §4.2) in one transaction. pushes are the
// sink items as the broker prepared them (ids minted, payloads sealed), traces their trace ids
// ("" for none). A rollback is an outcome (Rollback set, nothing applied); mq.ErrQueryNotFound
// and mq.ErrPartitionNotFound are the 404s; other errors mean the database was unusable.
func (s *Store) StreamCycle(ctx context.Context, tenant string, c mq.StreamCycle, pushes []PushRow, traces []string, sub *string) (mq.StreamCycleOutcome, error) {
	ctx = budget.Ensure(ctx)
	cols := pushColumns(pushes)
	args := cycleCall{QueryID: c.QueryID, PartitionID: c.PartitionID, Group: c.ConsumerGroup, Tenant: tenant,
		OpTypes: make([]string, len(c.StateOps)), OpKeys: make([]string, len(c.StateOps)),
		OpValues:   make([]*string, len(c.StateOps)),
		pushArrays: pushArraysOf(cols, make([]*string, len(pushes))), Sub: sub,
		AckStatus: "completed", Release: c.ReleaseLease, Now: s.nowArg()}
	for i, op := range c.StateOps {
		args.OpKeys[i] = op.Key
		if op.Delete {
			args.OpTypes[i] = "delete"
			continue
		}
		v := string(op.Value)
		args.OpTypes[i], args.OpValues[i] = "upsert", &v
	}
	for i, t := range traces {
		args.Traces[i] = strPtr(t)
	}
	if a := c.Ack; a != nil {
		key := a.TransactionID
		args.AckKey, args.AckLease = &key, strPtr(a.LeaseID)
		if a.DeadLetter {
			reason := a.Error
			if reason == "" {
				reason = mq.StreamCycleFailure
			}
			args.AckStatus, args.AckError = "dlq", &reason
		}
	}
	var out mq.StreamCycleOutcome
	run := func() error {
		out = mq.StreamCycleOutcome{}
		return s.queryRows(ctx, sqlStreamCycle, streamCycleArgs{args}.args(), cycleRows.each(func(r cycleRow) {
			switch r.Kind {
			case "cycle":
				out.SourceQueue, out.StateOpsApplied = r.Queue, int(r.N)
			case "ack":
				out.Ack = &mq.StreamAckResult{Count: r.N, LeaseReleased: r.Released, DLQ: r.DLQ}
			default:
				out.PushResults = append(out.PushResults, mq.StreamPushResult{Index: r.Index, Status: deref(r.Status),
					MessageID: deref(r.MessageID), PartitionID: deref(r.PartitionID), Queue: r.Queue})
			}
		}))
	}
	err := s.runCreating(ctx, cols.queues, cols.parts, run)
	if err == nil {
		return out, nil
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || (errors.Is(err, mq.ErrUnavailable) && !isServerTimeout(pgErr.Code)) {
		return mq.StreamCycleOutcome{}, fmt.Errorf("stream cycle: %w", err)
	}
	switch mq.Code(pgErr.Code) {
	case mq.CodeQueryNotFound:
		return mq.StreamCycleOutcome{}, mq.ErrQueryNotFound
	case mq.CodePartitionNotFound:
		return mq.StreamCycleOutcome{}, mq.ErrPartitionNotFound
	}
	var detail []string
	if pgErr.Detail != "" {
		_ = json.Unmarshal([]byte(pgErr.Detail), &detail) // a malformed DETAIL names nothing
	}
	text, ok := mq.StreamRollbackText(mq.Code(pgErr.Code), detail)
	if !ok {
		text = pgErr.Message // the database's own message (docs/api/streams.md §4.4)
	}
	// The answer names the source queue even when nothing was applied.
	queue, qerr := s.streamSourceQueue(ctx, tenant, c.PartitionID)
	if qerr != nil {
		return mq.StreamCycleOutcome{}, fmt.Errorf("stream cycle: %w", qerr)
	}
	return mq.StreamCycleOutcome{SourceQueue: queue, Rollback: text}, nil
}

var sqlStreamSourceQueue = queryOf[streamSourceRow]("stream_source_queue")

// streamSourceRow is a row of stream_source_queue.
type streamSourceRow struct {
	Name string `db:"name"`
}

// streamSourceQueue names the queue of a partition ("" when it is gone).
func (s *Store) streamSourceQueue(ctx context.Context, tenant, partitionID string) (string, error) {
	var name string
	err := s.queryRows(ctx, sqlStreamSourceQueue.sql, named(pgx.StrictNamedArgs{"partition_id": partitionID, "tenant": tenant}),
		sqlStreamSourceQueue.each(func(r streamSourceRow) { name = r.Name }))
	return name, err
}

const sqlStreamState = `SELECT key, value, updated_at
	FROM qg_stream_state(p_query_id => $1::uuid, p_partition_id => $2::uuid, p_tenant => $3, p_keys => $4,
		p_prefix => $5, p_ripe => $6::numeric)`

// streamStateRow is a row of qg_stream_state, read by column name.
type streamStateRow struct {
	Key       string    `db:"key"`
	Value     string    `db:"value"`
	UpdatedAt time.Time `db:"updated_at"`
}

var streamStateRows = readQuery[streamStateRow]{sqlStreamState}

// streamStateArgs are the parameters of qg_stream_state (see sqlCall).
type streamStateArgs struct {
	QueryID, PartitionID, Tenant string
	Keys                         []string
	Prefix                       *string
	Ripe                         *float64
}

func (a streamStateArgs) args() []any {
	return []any{a.QueryID, a.PartitionID, a.Tenant, a.Keys, a.Prefix, a.Ripe}
}

// StreamState reads one shard (docs/api/streams.md §5); mq.ErrQueryNotFound for an unknown query.
func (s *Store) StreamState(ctx context.Context, tenant string, q mq.StreamStateQuery) ([]mq.StreamStateRow, error) {
	args := streamStateArgs{QueryID: q.QueryID, PartitionID: q.PartitionID, Tenant: tenant, Keys: q.Keys,
		Prefix: strPtr(q.KeyPrefix), Ripe: q.RipeAtOrBefore}
	out := []mq.StreamStateRow{}
	err := s.queryRows(ctx, sqlStreamState, args.args(), streamStateRows.each(func(r streamStateRow) {
		out = append(out, mq.StreamStateRow{Key: r.Key, Value: json.RawMessage(r.Value), UpdatedAt: r.UpdatedAt})
	}))
	if pgCode(err) == string(mq.CodeQueryNotFound) {
		return nil, mq.ErrQueryNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("stream state: %w", err)
	}
	return out, nil
}

// streamQueryRow is a row of qg_stream_queries, read by column name.
type streamQueryRow struct {
	QueryID     string    `db:"query_id"`
	Name        string    `db:"name"`
	SourceQueue string    `db:"source_queue"`
	SinkQueue   *string   `db:"sink_queue"`
	ConfigHash  string    `db:"config_hash"`
	StateRows   int64     `db:"state_rows"`
	CreatedAt   time.Time `db:"created_at"`
	UpdatedAt   time.Time `db:"updated_at"`
}

var streamQueryRows = readQuery[streamQueryRow]{`SELECT query_id::text AS query_id, name, source_queue, sink_queue, config_hash,
	state_rows, created_at, updated_at FROM qg_stream_queries(p_tenant => $1)`}

// StreamQueries lists the tenant's registrations by name (docs/api/streams.md §6).
func (s *Store) StreamQueries(ctx context.Context, tenant string) ([]mq.StreamQuery, error) {
	out := []mq.StreamQuery{}
	err := s.queryRows(ctx, streamQueryRows.sql, []any{tenant}, streamQueryRows.each(func(r streamQueryRow) {
		out = append(out, mq.StreamQuery{QueryID: r.QueryID, Name: r.Name, SourceQueue: r.SourceQueue, SinkQueue: r.SinkQueue,
			ConfigHash: r.ConfigHash, StateRows: r.StateRows, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt})
	}))
	if err != nil {
		return nil, fmt.Errorf("stream queries: %w", err)
	}
	return out, nil
}

// StreamDelete deletes a registration and its state rows (docs/api/streams.md §6); existed is
// false for an unknown name.
func (s *Store) StreamDelete(ctx context.Context, tenant, name string) (existed bool, rows int64, err error) {
	var n *int64
	err = s.withConn(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		return c.QueryRow(ctx, "SELECT qg_stream_delete(p_tenant => $1, p_name => $2)", tenant, name).Scan(&n)
	})
	if err != nil {
		return false, 0, fmt.Errorf("stream delete: %w", err)
	}
	if n == nil {
		return false, 0, nil
	}
	return true, *n, nil
}
