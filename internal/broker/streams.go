package broker

import (
	"context"
	"time"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/tenant"
)

// Streams (docs/api/streams.md): the server side of Queen's stream processing. The operators run
// in the client SDKs; the broker registers queries, reads shards and commits cycles. A cycle
// writes its sink items as a push does (ids minted here, payloads sealed for encrypted
// queues, the producer's sub) and acks through the data path's ack code, in one transaction.

// StreamRegister registers a stream query (docs/api/streams.md §3).
func (b *Broker) StreamRegister(ctx context.Context, r mq.StreamRegistration) (mq.StreamRegistered, error) {
	dctx, span := b.startDB(ctx, "stream_register")
	out, err := b.store.StreamRegister(dctx, tenantOf(ctx), r, newID())
	endSpan(span, err)
	return out, err
}

// StreamCycle commits one processing step (docs/api/streams.md §4): all of it or, on a
// rollback (Rollback set), none of it. Parked pops of the sink queues, and of the source
// queue when its lease was released, are woken after the commit.
func (b *Broker) StreamCycle(ctx context.Context, c mq.StreamCycle, producerSub *string) (mq.StreamCycleOutcome, error) {
	ctx, span := b.startOp(ctx, "stream_cycle")
	start := time.Now()
	out, err := b.streamCycle(ctx, c, producerSub)
	b.cfg.Recorder.Cycled(tenantOf(ctx), c, out, time.Since(start), err)
	endSpan(span, err)
	return out, err
}

func (b *Broker) streamCycle(ctx context.Context, c mq.StreamCycle, producerSub *string) (mq.StreamCycleOutcome, error) {
	rows := make([]store.PushRow, len(c.PushItems))
	ptrs := make([]*store.PushRow, len(rows))
	traces := make([]string, len(rows))
	keys := make([]string, len(rows))
	for i, e := range c.PushItems {
		rows[i] = b.pushRow(e.Push)
		rows[i].ProducerSub = producerSub
		ptrs[i], traces[i], keys[i] = &rows[i], e.TraceID, rows[i].Key
	}
	if err := b.seal(ctx, ptrs); err != nil {
		return mq.StreamCycleOutcome{}, err
	}
	dctx, span := b.startDB(ctx, "stream_cycle")
	out, err := b.store.StreamCycle(dctx, tenantOf(ctx), c, rows, traces, producerSub)
	endSpan(span, err)
	if err != nil || out.Rollback != "" {
		return out, err
	}
	var written queueSet
	for i := range out.PushResults {
		r := &out.PushResults[i]
		r.TransactionID, r.TraceID = keys[r.Index], traces[r.Index]
		if r.Status == mq.StatusQueued {
			written.add(r.Queue)
		}
	}
	b.wake(ctx, written...)
	if out.Ack != nil && out.Ack.LeaseReleased {
		var rel releases
		rel.add(out.SourceQueue, c.PartitionID, c.ConsumerGroup)
		b.wakeReleased(ctx, rel)
	}
	return out, nil
}

// StreamState reads one shard (docs/api/streams.md §5).
func (b *Broker) StreamState(ctx context.Context, q mq.StreamStateQuery) ([]mq.StreamStateRow, error) {
	dctx, span := b.startDB(ctx, "stream_state")
	out, err := b.store.StreamState(dctx, tenantOf(ctx), q)
	endSpan(span, err)
	return out, err
}

// StreamQueries lists the registrations (docs/api/streams.md §6).
func (b *Broker) StreamQueries(ctx context.Context) ([]mq.StreamQuery, error) {
	return b.store.StreamQueries(ctx, tenantOf(ctx))
}

// StreamDelete deletes a registration and its state rows (docs/api/streams.md §6).
func (b *Broker) StreamDelete(ctx context.Context, name string) (existed bool, rows int64, err error) {
	return b.store.StreamDelete(ctx, tenantOf(ctx), name)
}

// tenantOf is the tenant ctx is scoped to: streams registrations and their state are per tenant.
func tenantOf(ctx context.Context) string {
	t, _ := tenant.Of(ctx)
	return t
}
