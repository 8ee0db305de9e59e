package admin

import (
	"context"

	"github.com/queen-go/queen/internal/budget"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
)

// Giving dead-lettered messages another chance: the DLQ requeue (docs/api/admin-api.md §3.2)
// and the message retry (§2.4), both in one database transaction per call
// (docs/api/concepts.md §9.2). Parked pops of the affected queues are woken on commit: the SQL
// notifies every instance, and this instance's waiters are woken here at once.

// RequeueDLQ requeues the selected entries. By ids, every id sent that named no entry (already
// requeued or deleted, never existed, malformed) is skipped with its text as sent, each once;
// by filter, Remaining counts the matching entries the mode could still act on.
func (a *Admin) RequeueDLQ(ctx context.Context, req mq.DLQRequeueRequest) (mq.DLQRequeueResult, error) {
	// A bulk route: up to 1,000 entries, DB_STATEMENT_TIMEOUT for its whole work
	// (docs/api/operations.md §9.1).
	ctx = budget.Bulk(ctx)
	var res mq.DLQRequeueResult
	var err error
	if req.Mode == mq.RequeueCopy {
		res, err = a.copyDLQ(ctx, req)
	} else {
		res, err = a.redeliverDLQ(ctx, req.Selection)
	}
	if err != nil {
		return res, err
	}
	if res.Skipped == nil {
		res.Skipped = []mq.DLQSkip{}
	}
	if len(res.Queues) > 0 {
		a.data.WakeQueues(ctx, res.Queues...)
	}
	return res, nil
}

func (a *Admin) redeliverDLQ(ctx context.Context, sel mq.DLQSelection) (mq.DLQRequeueResult, error) {
	if sel.Filter != nil {
		return a.store.RedeliverDLQMatching(ctx, *sel.Filter, sel.Limit)
	}
	ids, sent := uniqueIDs(sel.IDs)
	var res mq.DLQRequeueResult
	if len(ids) > 0 {
		var err error
		if res, err = a.store.RedeliverDLQEntries(ctx, ids); err != nil {
			return res, err
		}
	}
	reasons := make(map[string]string, len(res.Skipped))
	for _, k := range res.Skipped {
		reasons[k.ID] = k.Reason
	}
	res.Skipped = res.Skipped[:0]
	for _, s := range sent {
		c := mq.CanonicalUUID(s)
		if c == "" {
			res.Skipped = append(res.Skipped, mq.DLQSkip{ID: s, Reason: mq.ReasonDLQEntryNotFound})
		} else if r, kept := reasons[c]; kept {
			res.Skipped = append(res.Skipped, mq.DLQSkip{ID: s, Reason: r})
		}
	}
	return res, nil
}

// copyDLQ builds each selected entry's copy (its payload copy decrypted, then encrypted again
// when the target queue encrypts) and writes them.
func (a *Admin) copyDLQ(ctx context.Context, req mq.DLQRequeueRequest) (mq.DLQRequeueResult, error) {
	res := mq.DLQRequeueResult{Copies: []mq.DLQCopy{}}
	sel := req.Selection
	var sent []string
	if sel.Filter == nil {
		sel.IDs, sent = uniqueIDs(sel.IDs)
	}
	var sources []store.DLQCopySource
	if sel.Filter != nil || len(sel.IDs) > 0 {
		var err error
		if sources, err = a.store.DLQCopySources(ctx, sel); err != nil {
			return res, err
		}
	}
	if len(sources) > 0 {
		enc, err := a.store.EncryptedQueues(ctx, []string{req.ToQueue})
		if err != nil {
			return res, err
		}
		copies := make([]store.DLQCopy, len(sources))
		for i, e := range sources {
			c := store.DLQCopy{DLQID: e.ID, Queue: req.ToQueue, Partition: req.ToPartition, ID: newID(),
				TraceID: e.TraceID, ProducerSub: req.ProducerSub}
			if c.Partition == "" {
				c.Partition = e.Partition
			}
			c.Payload, c.Encrypted = a.copyPayload(e, enc[req.ToQueue])
			copies[i] = c
		}
		written, skipped, err := a.store.CopyDLQEntries(ctx, copies)
		if err != nil {
			return res, err
		}
		res.Copies, res.Skipped, res.Requeued = written, skipped, int64(len(written))
		if len(written) > 0 {
			res.Queues = []string{req.ToQueue}
		}
	}
	if sel.Filter != nil {
		n, err := a.store.DLQMatchingCount(ctx, *sel.Filter)
		if err != nil {
			return res, err
		}
		res.Remaining = n
		return res, nil
	}
	// By ids: every id sent whose entry was not copied, in request order.
	done := make(map[string]string, len(res.Copies)+len(res.Skipped))
	for _, c := range res.Copies {
		done[c.DLQID] = ""
	}
	for _, k := range res.Skipped {
		done[k.ID] = k.Reason
	}
	res.Skipped = []mq.DLQSkip{}
	for _, s := range sent {
		r, ok := done[mq.CanonicalUUID(s)]
		switch {
		case !ok || mq.CanonicalUUID(s) == "":
			res.Skipped = append(res.Skipped, mq.DLQSkip{ID: s, Reason: mq.ReasonDLQEntryNotFound})
		case r != "":
			res.Skipped = append(res.Skipped, mq.DLQSkip{ID: s, Reason: r})
		}
	}
	return res, nil
}

// copyPayload is the payload of a copy as the target queue stores it: encrypted when the queue
// has encryptionEnabled and a key is loaded, else plain. A payload copy that cannot be
// decrypted (no key, or not this key's) is copied as stored, still marked encrypted.
func (a *Admin) copyPayload(e store.DLQCopySource, encrypt bool) ([]byte, bool) {
	plain := e.Payload
	if e.Encrypted {
		if a.key == nil {
			return e.Payload, true
		}
		p, err := a.key.Open(e.Payload)
		if err != nil {
			a.log.Warn("dlq copy: payload copy not decrypted, copied as stored", "dlqId", e.ID, "err", err)
			return e.Payload, true
		}
		plain = p
	}
	if encrypt && a.key != nil {
		if sealed, err := a.key.Seal(plain); err == nil {
			return sealed, true
		}
	}
	return plain, false
}

// RetryMessage makes one message deliverable again for group (every group of its partition and
// every group with a DLQ entry of it when empty): its DLQ entries requeued in redeliver mode, or
// a pending retry delay cleared. found is false for an unknown message (a partition id that is
// not a UUID names none).
func (a *Admin) RetryMessage(ctx context.Context, partitionID, transactionID, group string) ([]mq.GroupAction, bool, error) {
	pid := mq.CanonicalUUID(partitionID)
	if pid == "" {
		return nil, false, nil
	}
	out, queue, found, err := a.store.RetryMessage(ctx, pid, transactionID, group)
	if err != nil || !found {
		return nil, found, err
	}
	for _, g := range out {
		if g.Action != mq.ActionSkipped && g.Action != mq.ActionAlreadyRequeued {
			a.data.WakeQueues(ctx, queue)
			break
		}
	}
	return out, true, nil
}
