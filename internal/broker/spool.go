package broker

import (
	"context"
	"fmt"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/spool"
	"github.com/queen-go/queen/internal/store"
)

// spooling is the push path's file buffer (docs/api/operations.md §4.1–4.2). A push whose
// database call fails as unavailable — no connection in time, a deadline passed, PostgreSQL
// unreachable — is appended to the spool instead and answered "buffered"; so is every push
// while the spool still holds items not yet replayed, so that order per partition is kept.
// Without a spool (a broker built by hand in tests) such a push answers ErrUnavailable.
type spooling struct {
	sp   *spool.Spool
	kick func() // wakes the drainer once something was spooled
}

// AttachSpool makes pushes that cannot reach the database go to sp, and kick the drainer
// (may be nil) after each spooled push. Call it before Start.
func (b *Broker) AttachSpool(sp *spool.Spool, kick func()) {
	b.spooling.sp, b.spooling.kick = sp, kick
}

// spoolFirst reports whether a push must go to the spool without trying the database: push
// maintenance is on, or older pushes still wait there (a push written now would overtake them).
func (b *Broker) spoolFirst() bool {
	sp := b.spooling.sp
	return sp != nil && (sp.Pending() > 0 || b.PushMaintenance())
}

// spoolPush appends rows (their ids and keys already minted, possibly for a database attempt
// that was abandoned and may have committed: replay then drops them as duplicates) with the
// producer's plain payloads from items, and answers each item buffered once they are durable.
// Encryption is applied on replay: the queue's flag may not be readable now.
func (b *Broker) spoolPush(ctx context.Context, items []mq.PushItem, rows []store.PushRow, producerSub *string) ([]mq.PushResult, error) {
	recs := make([]spool.Record, len(rows))
	for i := range rows {
		recs[i] = spool.Record{Queue: rows[i].Queue, Partition: rows[i].Partition, MessageID: rows[i].ID,
			Key: rows[i].Key, Payload: items[i].Payload, ProducerSub: producerSub}
	}
	if err := b.spooling.sp.Append(ctx, recs); err != nil {
		if ctx.Err() != nil {
			return nil, err // the client went away before the write was taken: nothing kept
		}
		b.log.Warn("spooling a push failed", "items", len(recs), "err", err)
		return nil, fmt.Errorf("%w: %w", mq.ErrBufferWrite, err)
	}
	if b.spooling.kick != nil {
		b.spooling.kick()
	}
	out := make([]mq.PushResult, len(rows))
	for i := range rows {
		out[i] = mq.PushResult{Status: mq.StatusBuffered, Queue: rows[i].Queue, TransactionID: rows[i].Key}
	}
	return out, nil
}

// Replay is the spool drainer's WriteFunc: it writes recs as one push through the normal push
// path (queue creation, encryption, positions, wake-ups) under their minted ids and keys and
// captured producerSub, regardless of the queue's maxSize, and reports how many the database dropped because their key was
// already taken — records whose earlier attempt committed after all, or replayed twice.
func (b *Broker) Replay(ctx context.Context, recs []spool.Record) (duplicates int, err error) {
	rows := make([]store.PushRow, len(recs))
	ptrs := make([]*store.PushRow, len(recs))
	for i, r := range recs {
		part := r.Partition
		if part == "" {
			part = "Default"
		}
		rows[i] = store.PushRow{Queue: r.Queue, Partition: part, Key: r.Key, ID: r.MessageID,
			Payload: r.Payload, ProducerSub: r.ProducerSub,
			// accepted when spooled: maxSize is not applied (docs/api/operations.md §4.2)
			Uncapped: true}
		ptrs[i] = &rows[i]
	}
	// A background job's deadline (DB_STATEMENT_TIMEOUT), not a request's: no client waits for
	// the replay, and a batch abandoned at a short request deadline would be retried on a
	// fresh connection that is as cold as the last.
	ctx = store.Bulk(store.Request(ctx))
	if err := b.seal(ctx, ptrs); err != nil {
		return 0, err
	}
	res, err := b.pushes.submit(ctx, rows)
	if err != nil {
		return 0, err
	}
	var written queueSet
	for _, r := range res {
		switch r.Status {
		case mq.StatusQueued:
			written.add(r.Queue)
		case mq.StatusDuplicate:
			duplicates++
		}
	}
	b.wake(written...)
	return duplicates, nil
}
