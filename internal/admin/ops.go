package admin

import (
	"context"

	"github.com/queen-go/queen/internal/mq"
)

// Operator routes of docs/api/admin-api.md §1.1 (partition listing) and §3.3 (DLQ deletion).

// DeleteDLQEntry removes one DLQ entry; existed is false when there was none (a malformed id
// names none, so it is answered without the database).
func (a *Admin) DeleteDLQEntry(ctx context.Context, id string) (existed bool, err error) {
	cid := mq.CanonicalUUID(id)
	if cid == "" {
		return false, nil
	}
	return a.store.DeleteDLQEntry(ctx, cid)
}

// DeleteDLQ removes the selected DLQ entries. By ids, every id that named no entry (already
// removed, never existed, or malformed) is skipped with its text as sent, each once; by
// filter, up to sel.Limit entries go, oldest failedAt first, and Remaining counts the rest.
func (a *Admin) DeleteDLQ(ctx context.Context, sel mq.DLQSelection) (mq.DLQDeleteResult, error) {
	res := mq.DLQDeleteResult{Skipped: []mq.DLQSkip{}}
	if sel.Filter != nil {
		var err error
		res.Deleted, res.Remaining, err = a.store.DeleteDLQMatching(ctx, *sel.Filter, sel.Limit)
		return res, err
	}
	ids, sent := uniqueIDs(sel.IDs)
	var deleted []string
	if len(ids) > 0 {
		var err error
		if deleted, err = a.store.DeleteDLQEntries(ctx, ids); err != nil {
			return res, err
		}
	}
	gone := make(map[string]bool, len(deleted))
	for _, id := range deleted {
		gone[id] = true
	}
	res.Deleted = int64(len(deleted))
	for _, s := range sent {
		if c := mq.CanonicalUUID(s); c == "" || !gone[c] {
			res.Skipped = append(res.Skipped, mq.DLQSkip{ID: s, Reason: mq.ReasonDLQEntryNotFound})
		}
	}
	return res, nil
}

// uniqueIDs drops repeated ids (by their canonical form, so two spellings of one UUID count
// once): ids are the canonical UUIDs to act on, sent the distinct strings in request order.
func uniqueIDs(in []string) (ids, sent []string) {
	seen := map[string]bool{}
	for _, s := range in {
		key := mq.CanonicalUUID(s)
		if key == "" {
			key = "\x00" + s // malformed: distinct by its text, never a UUID
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		sent = append(sent, s)
		if key[0] != 0 {
			ids = append(ids, key)
		}
	}
	return ids, sent
}

// MoveToDLQ dead-letters one stored message for group (every consumer of its partition when
// empty), leaving every other message where it is (docs/api/concepts.md §9.1). found is false
// for an unknown message (a partition id that is not a UUID names none).
func (a *Admin) MoveToDLQ(ctx context.Context, partitionID, transactionID, group, reason string) ([]mq.GroupAction, bool, error) {
	pid := mq.CanonicalUUID(partitionID)
	if pid == "" {
		return nil, false, nil
	}
	return a.store.MoveToDLQ(ctx, pid, transactionID, group, reason)
}
