package httpapi

import (
	"encoding/json"
	"math"

	"github.com/queen-go/queen/internal/mq"
)

// Validation of the streams bodies, in the order of docs/api/streams.md §3, §4.1 and §5. A
// non-empty message is the 400 answer; nothing has been done.

// requiredName is a required string field: missing, not a string or "" answers "<field> is
// required"; over 255 characters "<field> exceeds 255 characters".
func requiredName(raw json.RawMessage, field string) (string, string) {
	v, ok := asString(raw)
	if !ok || v == "" {
		return "", field + " is required"
	}
	if tooLong(v) {
		return "", field + " exceeds 255 characters"
	}
	return v, ""
}

// optionalName is an optional string field: absent, null or "" is none.
func optionalName(raw json.RawMessage, field string) (string, string) {
	v, ok := optString(raw)
	if !ok {
		return "", field + " must be a string"
	}
	if tooLong(v) {
		return "", field + " exceeds 255 characters"
	}
	return v, ""
}

// optBool is an optional boolean: absent or null gives def.
func optBool(raw json.RawMessage, def bool, field string) (bool, string) {
	if isNull(raw) {
		return def, ""
	}
	var b bool
	if k := jsonKind(raw); (k != 't' && k != 'f') || json.Unmarshal(raw, &b) != nil {
		return false, field + " must be a boolean"
	}
	return b, ""
}

// requiredUUID is a required UUID field, returned in canonical (lower-case) form.
func requiredUUID(raw json.RawMessage, field string) (string, string) {
	v, ok := asString(raw)
	if !ok {
		return "", field + " is required"
	}
	c := mq.CanonicalUUID(v)
	if c == "" {
		return "", field + " must be a UUID"
	}
	return c, ""
}

func parseStreamRegistration(f map[string]json.RawMessage) (mq.StreamRegistration, string) {
	var r mq.StreamRegistration
	var msg string
	if r.Name, msg = requiredName(f["name"], "name"); msg != "" {
		return r, msg
	}
	if r.SourceQueue, msg = requiredName(f["source_queue"], "source_queue"); msg != "" {
		return r, msg
	}
	if r.ConfigHash, msg = requiredName(f["config_hash"], "config_hash"); msg != "" {
		return r, msg
	}
	if r.SinkQueue, msg = optionalName(f["sink_queue"], "sink_queue"); msg != "" {
		return r, msg
	}
	r.Reset, msg = optBool(f["reset"], false, "reset")
	return r, msg
}

// optArray is an optional array: absent or null is empty.
func optArray(raw json.RawMessage, msg string) ([]json.RawMessage, string) {
	if isNull(raw) {
		return nil, ""
	}
	var out []json.RawMessage
	if !isArray(raw) || json.Unmarshal(raw, &out) != nil {
		return nil, msg
	}
	return out, ""
}

func parseStreamCycle(f map[string]json.RawMessage) (mq.StreamCycle, string) {
	var c mq.StreamCycle
	var msg string
	if c.QueryID, msg = requiredUUID(f["query_id"], "query_id"); msg != "" {
		return c, msg
	}
	if c.PartitionID, msg = requiredUUID(f["partition_id"], "partition_id"); msg != "" {
		return c, msg
	}
	if c.ConsumerGroup, msg = optionalName(f["consumer_group"], "consumer_group"); msg != "" {
		return c, msg
	}
	if c.ConsumerGroup == "" {
		c.ConsumerGroup = mq.QueueMode
	}
	if c.ReleaseLease, msg = optBool(f["release_lease"], true, "release_lease"); msg != "" {
		return c, msg
	}
	ops, msg := optArray(f["state_ops"], "state_ops must be an array")
	if msg != "" {
		return c, msg
	}
	items, msg := optArray(f["push_items"], "push_items must be an array")
	if msg != "" {
		return c, msg
	}
	ackRaw := f["ack"]
	if !isNull(ackRaw) && !isObject(ackRaw) {
		return c, "ack must be an object"
	}
	for _, raw := range ops {
		op, msg := parseStateOp(raw)
		if msg != "" {
			return c, msg
		}
		c.StateOps = append(c.StateOps, op)
	}
	for _, raw := range items {
		e, msg := parseCycleItem(raw)
		if msg != "" {
			return c, msg
		}
		c.PushItems = append(c.PushItems, e)
	}
	if !isNull(ackRaw) {
		a, msg := parseCycleAck(ackRaw)
		if msg != "" {
			return c, msg
		}
		c.Ack = &a
	}
	return c, ""
}

type stateOpJSON struct {
	Type  json.RawMessage `json:"type"`
	Key   json.RawMessage `json:"key"`
	Value json.RawMessage `json:"value"`
}

func parseStateOp(raw json.RawMessage) (mq.StreamStateOp, string) {
	var o stateOpJSON
	if !isObject(raw) || json.Unmarshal(raw, &o) != nil {
		return mq.StreamStateOp{}, "Unknown state_op type: null"
	}
	t, ok := asString(o.Type)
	if !ok {
		t = "null"
	}
	if t != "upsert" && t != "delete" {
		return mq.StreamStateOp{}, "Unknown state_op type: " + t
	}
	key, ok := asString(o.Key)
	if !ok {
		return mq.StreamStateOp{}, "state_op key must be a string"
	}
	op := mq.StreamStateOp{Delete: t == "delete", Key: key}
	if !op.Delete {
		op.Value = o.Value
		if o.Value == nil {
			op.Value = json.RawMessage("{}") // absent; null is a value
		}
	}
	return op, ""
}

// parseCycleItem validates one push item as a transaction push item (docs/api/transaction.md
// §1.1, §2 checks 8-12), except that a missing queue is streams.md §4.1's "Queue must be a
// string" rather than the transaction's "queue is required".
func parseCycleItem(raw json.RawMessage) (mq.TxnEntry, string) {
	var it txnPushJSON
	if !isObject(raw) || json.Unmarshal(raw, &it) != nil {
		return mq.TxnEntry{}, "Each item must be an object"
	}
	if len(it.Queue) == 0 {
		return mq.TxnEntry{}, "Queue must be a string"
	}
	return txnPushItem(&it)
}

type cycleAckJSON struct {
	TransactionID json.RawMessage `json:"transactionId"`
	LeaseID       json.RawMessage `json:"leaseId"`
	Status        json.RawMessage `json:"status"`
	Count         json.RawMessage `json:"count"`
	Error         json.RawMessage `json:"error"`
}

func parseCycleAck(raw json.RawMessage) (mq.StreamAck, string) {
	var a cycleAckJSON
	if json.Unmarshal(raw, &a) != nil {
		return mq.StreamAck{}, "ack must be an object"
	}
	var out mq.StreamAck
	tx, ok := asString(a.TransactionID)
	if !ok || tx == "" {
		return out, "ack.transactionId is required"
	}
	out.TransactionID = tx
	lease, ok := optString(a.LeaseID)
	if !ok {
		return out, "ack.leaseId must be a string"
	}
	out.LeaseID = mq.LeaseRef(lease)
	if !isNull(a.Status) {
		st, ok := asString(a.Status)
		switch {
		case !ok:
			return out, "Unknown ack.status: null"
		case st == "completed" || st == "success":
		case st == "dlq" || st == "failed":
			out.DeadLetter = true
		default:
			return out, "Unknown ack.status: " + st
		}
	}
	if !isNull(a.Count) {
		var n float64
		if jsonKind(a.Count) == '"' || json.Unmarshal(a.Count, &n) != nil || n < 0 || n != math.Trunc(n) {
			return out, "ack.count must be a non-negative integer"
		}
	}
	out.Error, _ = asString(a.Error) // non-strings are ignored
	return out, ""
}

func parseStreamStateQuery(f map[string]json.RawMessage) (mq.StreamStateQuery, string) {
	var q mq.StreamStateQuery
	var msg string
	if q.QueryID, msg = requiredUUID(f["query_id"], "query_id"); msg != "" {
		return q, msg
	}
	if q.PartitionID, msg = requiredUUID(f["partition_id"], "partition_id"); msg != "" {
		return q, msg
	}
	if raw := f["keys"]; !isNull(raw) {
		keys, ok := parseRequiredLeases(raw) // the same shape: an array of strings
		if !ok {
			return q, "keys must be an array of strings"
		}
		if len(keys) > 0 {
			q.Keys = keys
		}
	}
	prefix, ok := optString(f["key_prefix"])
	if !ok {
		return q, "key_prefix must be a string"
	}
	q.KeyPrefix = prefix
	if raw := f["ripe_at_or_before"]; !isNull(raw) {
		var t float64
		if jsonKind(raw) == '"' || json.Unmarshal(raw, &t) != nil {
			return q, "ripe_at_or_before must be a number"
		}
		q.RipeAtOrBefore = &t
	}
	return q, ""
}
