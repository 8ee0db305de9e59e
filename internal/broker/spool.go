package broker

import (
	"context"
	"fmt"

	"github.com/queen-go/queen/internal/budget"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/spool"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/tenant"
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

// spoolFirst reports whether a push of rows must go to the spool without trying the database:
// push maintenance is on, or older pushes to one of its partitions still wait there (a push
// written now would overtake them). Pushes to other partitions go to the database: order is
// per partition (docs/api/concepts.md), and a partition's spooled pushes, a large one that
// passed its deadline for instance, then hold back no other.
func (b *Broker) spoolFirst(ctx context.Context, rows []store.PushRow) bool {
	sp := b.spooling.sp
	if sp == nil {
		return false
	}
	if b.PushMaintenance() {
		return true
	}
	if sp.Pending() == 0 {
		return false
	}
	for i := range rows {
		if i > 0 && rows[i].Queue == rows[i-1].Queue && rows[i].Partition == rows[i-1].Partition {
			continue
		}
		if sp.Holds(tenant.KeyOf(ctx, rows[i].Queue), rows[i].Partition) {
			return true
		}
	}
	return false
}

// spoolPush appends rows (their ids and keys already minted, possibly for a database attempt
// that was abandoned and may have committed: replay then drops them as duplicates) with the
// producer's plain payloads from items, and answers each item buffered once they are durable.
// Encryption is applied on replay: the queue's flag may not be readable now.
func (b *Broker) spoolPush(ctx context.Context, items []mq.PushItem, rows []store.PushRow, producerSub *string) ([]mq.PushResult, error) {
	recs := make([]spool.Record, len(rows))
	for i := range rows {
		// A queue of another tenant than the default one is recorded as its tenant.Key (names
		// hold no U+0000), so a spool of a broker of one tenant reads as it always did.
		recs[i] = spool.Record{Queue: tenant.KeyOf(ctx, rows[i].Queue), Partition: rows[i].Partition, MessageID: rows[i].ID,
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
// already taken — records whose earlier attempt committed after all, or replayed twice. Its
// work has a request's deadline (DB_REQUEST_TIMEOUT): a batch that passes it on a healthy
// database is retried in halves by the drainer, down to one record, which goes to ReplaySlow
// (docs/api/operations.md §9.7).
func (b *Broker) Replay(ctx context.Context, recs []spool.Record) (duplicates int, err error) {
	return b.replay(budget.Request(ctx), recs)
}

// ReplaySlow is Replay under DB_STATEMENT_TIMEOUT, for a single record that passed
// DB_REQUEST_TIMEOUT on a healthy database.
func (b *Broker) ReplaySlow(ctx context.Context, recs []spool.Record) (duplicates int, err error) {
	return b.replay(budget.Bulk(budget.Request(ctx)), recs)
}

// replay writes recs straight to the store, not through the push coalescer: the partitions
// of spooled records take no direct pushes while they wait (spoolFirst), so there is no
// request to order them against, and the call keeps the deadline replay chose.
func (b *Broker) replay(ctx context.Context, recs []spool.Record) (duplicates int, err error) {
	// Each tenant's records are written in its own scope, in order: a tenant's run that fails
	// leaves the earlier runs committed, and the drainer's retry finds them duplicates.
	for len(recs) > 0 {
		t, _ := tenant.Split(recs[0].Queue)
		n := 1
		for n < len(recs) {
			if u, _ := tenant.Split(recs[n].Queue); u != t {
				break
			}
			n++
		}
		d, err := b.replayTenant(tenant.With(ctx, t), recs[:n])
		duplicates += d
		if err != nil {
			return duplicates, err
		}
		recs = recs[n:]
	}
	return duplicates, nil
}

// replayTenant writes recs, all of ctx's tenant.
func (b *Broker) replayTenant(ctx context.Context, recs []spool.Record) (duplicates int, err error) {
	rows := make([]store.PushRow, len(recs))
	ptrs := make([]*store.PushRow, len(recs))
	for i, r := range recs {
		part := r.Partition
		if part == "" {
			part = "Default"
		}
		_, queue := tenant.Split(r.Queue)
		rows[i] = store.PushRow{Queue: queue, Partition: part, Key: r.Key, ID: r.MessageID,
			Payload: r.Payload, ProducerSub: r.ProducerSub,
			// accepted when spooled: maxSize is not applied (docs/api/operations.md §4.2)
			Uncapped: true}
		ptrs[i] = &rows[i]
	}
	if err := b.seal(ctx, ptrs); err != nil {
		return 0, err
	}
	res, err := b.store.Push(ctx, rows)
	if err != nil {
		return 0, err
	}
	if len(res) != len(rows) {
		return 0, fmt.Errorf("replay: push returned %d results for %d records", len(res), len(rows))
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
	b.wake(ctx, written...)
	return duplicates, nil
}
