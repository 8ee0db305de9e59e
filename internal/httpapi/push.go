package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"

	"github.com/queen-go/queen/internal/mq"
)

type pushBody struct {
	Items json.RawMessage `json:"items"`
}

type pushItemJSON struct {
	Queue         json.RawMessage `json:"queue"`
	Partition     json.RawMessage `json:"partition"`
	Payload       json.RawMessage `json:"payload"`
	TransactionID json.RawMessage `json:"transactionId"`
}

func (s *Server) push(w http.ResponseWriter, r *http.Request) {
	items, ok := readBatch(w, r, parsePushFast, parsePushItems)
	if !ok {
		return
	}
	if len(items) == 0 {
		writePush(w, nil, nil)
		return
	}
	res, err := s.data.Push(r.Context(), items, producerSub(r))
	switch {
	case errors.Is(err, mq.ErrPushMaintenance):
		pushRefused(w)
	case errors.Is(err, mq.ErrBufferWrite):
		writeJSON(w, http.StatusServiceUnavailable, spoolFailedAnswer(items))
	case err != nil:
		s.fail(w, r, err)
	case len(res) > 0 && res[0].Status == mq.StatusBuffered:
		// A push is spooled whole or not at all.
		writeJSON(w, http.StatusCreated, bufferedAnswer(items, res))
	default:
		writePush(w, items, res)
	}
}

// writePush answers 201 with the push answer: one entry per item, in request order, with
// the API reference's casing (docs/api/data-api.md §2.3):
//
//	{"index":0,"transaction_id":…,"status":"queued","message_id":…,"partition_id":…,"trace_id":null,"queueName":…}
//
// A duplicate has message_id and no partition_id or trace_id; a refused item has "error"
// instead of both. Written by hand like the pop answer (pop_encode.go): for single-message
// pushes encoding/json's reflection was a quarter of the handler's CPU. The output is byte for
// byte what encoding/json wrote from the former answer struct (TestPushEncodingMatchesEncodingJSON).
func writePush(w http.ResponseWriter, items []mq.PushItem, res []mq.PushResult) {
	p := pushBufs.Get().(*[]byte)
	out := appendPush((*p)[:0], items, res)
	writeBody(w, http.StatusCreated, out)
	if cap(out) <= maxPooledBuf {
		*p = out
		pushBufs.Put(p)
	}
}

// pushBufs recycles the answer buffers of writePush (see encodeBufs).
var pushBufs = sync.Pool{New: func() any { return new([]byte) }}

// appendPush appends the push answer of res (one result per item).
func appendPush(b []byte, items []mq.PushItem, res []mq.PushResult) []byte {
	b = append(b, '[')
	for i, o := range res {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(append(b, `{"index":`...), int64(i), 10)
		b = appendField(b, `,"transaction_id":`, o.TransactionID)
		b = appendField(b, `,"status":`, o.Status)
		switch o.Status {
		case mq.StatusQueued:
			b = appendOptField(b, `,"message_id":`, o.MessageID)
			b = appendOptField(b, `,"partition_id":`, o.PartitionID)
			b = append(b, `,"trace_id":null`...)
		case mq.StatusDuplicate:
			b = appendOptField(b, `,"message_id":`, o.MessageID)
		default:
			b = append(b, `,"error":"queue full"`...)
		}
		b = appendField(b, `,"queueName":`, items[i].Queue)
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendOptField is appendField for a member left out when s is empty (omitempty).
func appendOptField(b []byte, prefix, s string) []byte {
	if s == "" {
		return b
	}
	return appendField(b, prefix, s)
}

// parsePushFast reads a push body in one pass (readRecords) when every item is valid;
// ok=false leaves the body, and its answer, to the exact path.
func parsePushFast(body []byte) (items []mq.PushItem, ok bool) {
	_, recs, ok := readRecords(body, "items", nil, pushItemFields)
	if !ok {
		return nil, false
	}
	items = make([]mq.PushItem, 0, len(recs)/len(pushItemFields))
	for f := 0; f < len(recs); f += len(pushItemFields) {
		it := pushItemJSON{Queue: recs[f], Partition: recs[f+1], Payload: recs[f+2], TransactionID: recs[f+3]}
		item, msg := pushItem(&it)
		if msg != "" {
			return nil, false
		}
		items = append(items, item)
	}
	return items, true
}

// pushItemFields are the members of a push item, in readRecords' order.
var pushItemFields = []string{"queue", "partition", "payload", "transactionId"}

// parsePushItems validates every item before anything is written; the first failure is the
// answer (docs/api/data-api.md §2.1).
func parsePushItems(body json.RawMessage) ([]mq.PushItem, string) {
	var pb pushBody
	if !isObject(body) || json.Unmarshal(body, &pb) != nil || !isArray(pb.Items) {
		return nil, "items array is required"
	}
	return parseEach(pb.Items, "items array is required", "Each item must be an object", pushItem)
}

// pushItem validates one push item, in the order of docs/api/data-api.md §2.1.
func pushItem(it *pushItemJSON) (mq.PushItem, string) {
	q, msg := itemQueue(it.Queue)
	if msg != "" {
		return mq.PushItem{}, msg
	}
	p, ok := optString(it.Partition)
	if msg := nameError(p, ok, "Partition must be a string", "partition"); msg != "" {
		return mq.PushItem{}, msg
	}
	if len(it.Payload) == 0 {
		return mq.PushItem{}, "payload is required"
	}
	tx, ok := optString(it.TransactionID)
	if msg := nameError(tx, ok, "TransactionId must be a string", "transactionId"); msg != "" {
		return mq.PushItem{}, msg
	}
	return mq.PushItem{Queue: q, Partition: p, TransactionID: tx, Payload: it.Payload}, ""
}

// itemQueue reads the queue of a push item, on /api/v1/push, in a transaction and in a streams
// cycle alike: missing, null or not a string is "Queue must be a string"; "" is "queue is
// required" (docs/api/README.md §2.9, Empty names), because no path can carry an empty segment
// and a queue named "" could never be popped, inspected, cleared or deleted.
func itemQueue(raw json.RawMessage) (string, string) {
	q, ok := asString(raw)
	if msg := nameError(q, ok, "Queue must be a string", "queue"); msg != "" {
		return "", msg
	}
	if q == "" {
		return "", "queue is required"
	}
	return q, ""
}

// nameError checks a decoded name field: notString when it was no string (ok=false), the
// length error for field when it is too long, "" when it is fine.
func nameError(s string, ok bool, notString, field string) string {
	switch {
	case !ok:
		return notString
	case tooLong(s):
		return field + " exceeds 255 characters"
	}
	return ""
}
