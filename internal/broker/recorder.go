package broker

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/queen-go/queen/internal/mq"
)

// Recorder counts what the broker does, for the metrics (docs/api/admin-api.md §6, §11). The broker
// calls it once per operation, after the operation, on the caller's goroutine, so an
// implementation must be cheap and safe for concurrent use. Config.Recorder nil records
// nothing. took is the operation's wall time; for a long-polling pop it includes the wait.
type Recorder interface {
	Pushed(tenant string, items []mq.PushItem, out []mq.PushResult, took time.Duration, err error)
	Popped(tenant string, req mq.PopRequest, res mq.PopResult, took time.Duration, err error)
	Acked(tenant string, items []mq.AckItem, res []mq.AckResult, took time.Duration, err error)
	Transacted(tenant string, entries []mq.TxnEntry, out mq.TxnOutcome, took time.Duration, err error)
	// Cycled reports a stream cycle (docs/api/streams.md §4): its sink pushes and its source
	// ack are pushes and acks, so the push and ack figures include cycles.
	Cycled(tenant string, c mq.StreamCycle, out mq.StreamCycleOutcome, took time.Duration, err error)
}

type nopRecorder struct{}

func (nopRecorder) Pushed(string, []mq.PushItem, []mq.PushResult, time.Duration, error)        {}
func (nopRecorder) Popped(string, mq.PopRequest, mq.PopResult, time.Duration, error)           {}
func (nopRecorder) Acked(string, []mq.AckItem, []mq.AckResult, time.Duration, error)           {}
func (nopRecorder) Transacted(string, []mq.TxnEntry, mq.TxnOutcome, time.Duration, error)      {}
func (nopRecorder) Cycled(string, mq.StreamCycle, mq.StreamCycleOutcome, time.Duration, error) {}

// The exported operations time the unexported ones that do the work and tell the recorder.

// Push writes items in one transaction and wakes parked pops of the written queues.
func (b *Broker) Push(ctx context.Context, items []mq.PushItem, producerSub *string) ([]mq.PushResult, error) {
	ctx, span := b.startOp(ctx, "push", attribute.Int("messaging.batch.message_count", len(items)))
	start := time.Now()
	out, err := b.push(ctx, items, producerSub)
	b.cfg.Recorder.Pushed(tenantOf(ctx), items, out, time.Since(start), err)
	endSpan(span, err)
	return out, err
}

// Pop claims deliverable messages, parking (without a database connection) until the
// deadline when r.Wait is set and nothing is deliverable.
func (b *Broker) Pop(ctx context.Context, r mq.PopRequest) (mq.PopResult, error) {
	ctx, span := b.startOp(ctx, "pop", attribute.String("messaging.destination.name", r.Queue),
		attribute.Bool("queen.pop.wait", r.Wait))
	start := time.Now()
	res, err := b.pop(ctx, r)
	b.cfg.Recorder.Popped(tenantOf(ctx), r, res, time.Since(start), err)
	span.SetAttributes(attribute.Int("messaging.batch.message_count", len(res.Messages)))
	endSpan(span, err)
	return res, err
}

// Ack evaluates and applies acknowledgements in one transaction.
func (b *Broker) Ack(ctx context.Context, items []mq.AckItem) ([]mq.AckResult, error) {
	ctx, span := b.startOp(ctx, "ack", attribute.Int("messaging.batch.message_count", len(items)))
	start := time.Now()
	res, err := b.ack(ctx, items)
	b.cfg.Recorder.Acked(tenantOf(ctx), items, res, time.Since(start), err)
	endSpan(span, err)
	return res, err
}

// Transaction applies the entries in one database transaction (docs/api/transaction.md §3).
func (b *Broker) Transaction(ctx context.Context, entries []mq.TxnEntry, requiredLeases []string, producerSub *string) (mq.TxnOutcome, error) {
	ctx, span := b.startOp(ctx, "transaction", attribute.Int("queen.transaction.entries", len(entries)))
	start := time.Now()
	out, err := b.transaction(ctx, entries, requiredLeases, producerSub)
	b.cfg.Recorder.Transacted(tenantOf(ctx), entries, out, time.Since(start), err)
	if out.Rollback != "" {
		span.SetAttributes(attribute.String("queen.transaction.rollback", out.Rollback))
	}
	endSpan(span, err)
	return out, err
}
