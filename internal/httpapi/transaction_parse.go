package httpapi

import (
	"encoding/json"

	"github.com/queen-go/queen/internal/mq"
)

// parseTransaction validates a transaction body in the order of docs/api/transaction.md §2 and
// flattens it (§3 step 3). A non-empty message is the 400 answer; nothing has been done.
func parseTransaction(body json.RawMessage) ([]mq.TxnEntry, []string, string) {
	var tb txnBody
	if !isObject(body) || json.Unmarshal(body, &tb) != nil || !isArray(tb.Operations) {
		return nil, nil, "operations array required"
	}
	var rawOps []json.RawMessage
	if json.Unmarshal(tb.Operations, &rawOps) != nil {
		return nil, nil, "operations array required"
	}
	if len(rawOps) == 0 {
		return nil, nil, "operations array cannot be empty"
	}
	ops := make([]txnOpJSON, len(rawOps))
	types := make([]string, len(rawOps))
	for i, raw := range rawOps {
		if isObject(raw) && json.Unmarshal(raw, &ops[i]) == nil {
			types[i], _ = asString(ops[i].Type)
		}
		if types[i] != "push" && types[i] != "ack" {
			name := "null"
			if t, ok := asString(ops[i].Type); ok && isObject(raw) {
				name = t
			}
			return nil, nil, "Unknown operation type: " + name
		}
	}
	required, ok := parseRequiredLeases(tb.RequiredLeases)
	if !ok {
		return nil, nil, "requiredLeases must be an array of strings"
	}
	var entries []mq.TxnEntry
	for i, op := range ops {
		if types[i] == "ack" {
			// Check 13; a group holding U+0000 is refused at the same place rather than
			// falling back to queue mode (docs/api/README.md §2.9, docs/decisions.md).
			if msg := optName(op.ConsumerGroup, "consumerGroup", "consumerGroup"); msg != "" {
				return nil, nil, msg
			}
			tx, _ := asString(op.TransactionID)
			pid, _ := asString(op.PartitionID)
			a := ackItem(tx, pid, op.ackJSON, "")
			entries = append(entries, mq.TxnEntry{Ack: &a})
			continue
		}
		items, msg := txnPushItems(&op)
		if msg != "" {
			return nil, nil, msg
		}
		entries = append(entries, items...)
	}
	return entries, required, ""
}

// txnPushJSON is a push item with its key, which txnItemJSON leaves to ackJSON in txnOpJSON.
type txnPushJSON struct {
	txnItemJSON
	TransactionID json.RawMessage `json:"transactionId"`
}

// txnPushItems validates one push operation: nested (it has "items") or flat (the operation
// is the item).
func txnPushItems(op *txnOpJSON) ([]mq.TxnEntry, string) {
	if op.Items == nil {
		// The operation was decoded with every item field, so it need not be decoded again.
		e, msg := txnPushItem(&txnPushJSON{op.txnItemJSON, op.TransactionID})
		return []mq.TxnEntry{e}, msg
	}
	return parseEach(op.Items, "items must be an array", "Each item must be an object", txnPushItem)
}

// txnPushItem validates one push item (docs/api/transaction.md §1.1, §2 checks 8-12).
func txnPushItem(it *txnPushJSON) (mq.TxnEntry, string) {
	// transaction.md §1.1 defaults a missing queue to "", which is no queue at all: both are
	// "queue is required"; null and other non-strings keep row 9's "Queue must be a string".
	if len(it.Queue) == 0 {
		return mq.TxnEntry{}, "queue is required"
	}
	q, msg := itemQueue(it.Queue)
	if msg != "" {
		return mq.TxnEntry{}, msg
	}
	p, ok := optString(it.Partition)
	if msg := nameError(p, ok, "Partition must be a string", "partition"); msg != "" {
		return mq.TxnEntry{}, msg
	}
	tx, ok := optString(it.TransactionID)
	if msg := nameError(tx, ok, "TransactionId must be a string", "transactionId"); msg != "" {
		return mq.TxnEntry{}, msg
	}
	trace, ok := optString(it.TraceID)
	if !ok || (trace != "" && mq.CanonicalUUID(trace) == "") {
		return mq.TxnEntry{}, "TraceId must be a valid UUID"
	}
	payload := it.Payload
	if payload == nil {
		payload = it.Data // alias; payload wins when both are present
	}
	if payload == nil {
		payload = json.RawMessage("{}")
	}
	return mq.TxnEntry{Push: mq.PushItem{Queue: q, Partition: p, TransactionID: tx, Payload: payload},
		TraceID: mq.CanonicalUUID(trace)}, ""
}

// parseRequiredLeases accepts absent, null, or an array of strings.
func parseRequiredLeases(raw json.RawMessage) ([]string, bool) {
	if isNull(raw) {
		return nil, true
	}
	var raws []json.RawMessage
	if !isArray(raw) || json.Unmarshal(raw, &raws) != nil {
		return nil, false
	}
	out := make([]string, len(raws))
	for i, r := range raws {
		s, ok := asString(r)
		if !ok {
			return nil, false
		}
		out[i] = s
	}
	return out, true
}
