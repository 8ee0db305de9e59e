package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

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

// pushResultJSON is one element of the push answer; its casing is the API reference's (docs/api/data-api.md §2.3).
type pushResultJSON struct {
	Index         int              `json:"index"`
	TransactionID string           `json:"transaction_id"`
	Status        string           `json:"status"`
	MessageID     string           `json:"message_id,omitempty"`
	PartitionID   string           `json:"partition_id,omitempty"`
	TraceID       *json.RawMessage `json:"trace_id,omitempty"`
	Error         string           `json:"error,omitempty"`
	QueueName     string           `json:"queueName"`
}

var jsonNull = json.RawMessage("null")

func (s *Server) push(w http.ResponseWriter, r *http.Request) {
	items, ok := readBatch(w, r, parsePushFast, parsePushItems)
	if !ok {
		return
	}
	if len(items) == 0 {
		writeJSON(w, http.StatusCreated, []pushResultJSON{})
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
		writeJSON(w, http.StatusCreated, pushAnswer(items, res))
	}
}

// pushAnswer is the push answer body: one entry per item, in request order.
func pushAnswer(items []mq.PushItem, res []mq.PushResult) []pushResultJSON {
	out := make([]pushResultJSON, len(res))
	for i, o := range res {
		e := pushResultJSON{Index: i, TransactionID: o.TransactionID, Status: o.Status, QueueName: items[i].Queue}
		switch o.Status {
		case mq.StatusQueued:
			e.MessageID, e.PartitionID, e.TraceID = o.MessageID, o.PartitionID, &jsonNull
		case mq.StatusDuplicate:
			e.MessageID = o.MessageID
		default:
			e.Error = "queue full"
		}
		out[i] = e
	}
	return out
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
	q, ok := asString(it.Queue)
	if msg := nameError(q, ok, "Queue must be a string", "queue"); msg != "" {
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
