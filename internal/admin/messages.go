package admin

import (
	"context"

	"github.com/queen-go/queen/internal/mq"
)

// Admin access to stored messages, DLQ entries and trace records (docs/api/admin-api.md §2-§4).
// Payloads come back decrypted. A partition id that is not a UUID names no partition, so
// lookups by it find nothing without asking the database.

// MessageDetail returns one message with its payload decrypted; found is false when there is
// no such message.
func (a *Admin) MessageDetail(ctx context.Context, partitionID, transactionID string) (mq.MessageDetail, bool, error) {
	pid := mq.CanonicalUUID(partitionID)
	if pid == "" {
		return mq.MessageDetail{}, false, nil
	}
	d, found, err := a.store.MessageDetail(ctx, pid, transactionID)
	if found {
		d.Payload = a.openPayload(d.ID, d.Payload, d.Encrypted)
	}
	return d, found, err
}

// DeleteMessage removes a message, its trace records and DLQ entries; its key stays taken
// until its dedup window ends. found is false when there was no such message.
func (a *Admin) DeleteMessage(ctx context.Context, partitionID, transactionID string) (bool, error) {
	pid := mq.CanonicalUUID(partitionID)
	if pid == "" {
		return false, nil
	}
	return a.store.DeleteMessage(ctx, pid, transactionID)
}

// ListDLQ returns a page of DLQ entries with decrypted payloads, and the total matching.
func (a *Admin) ListDLQ(ctx context.Context, f mq.DLQFilter) ([]mq.DLQEntry, int64, error) {
	entries, total, err := a.store.ListDLQ(ctx, f)
	for i := range entries {
		e := &entries[i]
		e.Payload = a.openPayload(e.MessageID, e.Payload, e.Encrypted)
	}
	return entries, total, err
}

// AddTrace stores a trace record under a fresh UUIDv7 and returns that id; found is false
// when the message does not exist.
func (a *Admin) AddTrace(ctx context.Context, t mq.TraceRecord) (id string, found bool, err error) {
	t.PartitionID = mq.CanonicalUUID(t.PartitionID)
	if t.PartitionID == "" {
		return "", false, nil
	}
	t.ID = newID()
	found, err = a.store.AddTrace(ctx, t)
	return t.ID, found, err
}

// MessageTraces lists a message's trace records, oldest first (none for an unknown message).
func (a *Admin) MessageTraces(ctx context.Context, partitionID, transactionID string) ([]mq.Trace, error) {
	pid := mq.CanonicalUUID(partitionID)
	if pid == "" {
		return nil, nil
	}
	return a.store.MessageTraces(ctx, pid, transactionID)
}

// TracesByName returns a page of the records carrying name, with decrypted message payloads.
func (a *Admin) TracesByName(ctx context.Context, name string, p mq.Page) ([]mq.NamedTrace, int64, error) {
	traces, total, err := a.store.TracesByName(ctx, name, p)
	for i := range traces {
		t := &traces[i]
		if t.Payload != nil {
			t.Payload = a.openPayload(t.TransactionID, t.Payload, t.Encrypted)
		}
	}
	return traces, total, err
}

// TraceNames returns a page of the trace names holding search (all when empty), most recently
// seen first, and how many match.
func (a *Admin) TraceNames(ctx context.Context, search string, p mq.Page) ([]mq.TraceName, int64, error) {
	return a.store.TraceNames(ctx, search, bounded(p))
}
