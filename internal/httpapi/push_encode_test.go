package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/queen-go/queen/internal/mq"
)

// pushResultReference is the push answer's element as encoding/json wrote it before writePush
// (docs/api/data-api.md §2.3): the reference the hand-written answer must match.
type pushResultReference struct {
	Index         int              `json:"index"`
	TransactionID string           `json:"transaction_id"`
	Status        string           `json:"status"`
	MessageID     string           `json:"message_id,omitempty"`
	PartitionID   string           `json:"partition_id,omitempty"`
	TraceID       *json.RawMessage `json:"trace_id,omitempty"`
	Error         string           `json:"error,omitempty"`
	QueueName     string           `json:"queueName"`
}

// pushReference builds the reference answer, as the handler did before writePush.
func pushReference(items []mq.PushItem, res []mq.PushResult) []pushResultReference {
	out := make([]pushResultReference, len(res))
	for i, o := range res {
		e := pushResultReference{Index: i, TransactionID: o.TransactionID, Status: o.Status, QueueName: items[i].Queue}
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

func checkPushEncoding(t *testing.T, items []mq.PushItem, res []mq.PushResult) {
	t.Helper()
	want := httptest.NewRecorder()
	writeJSON(want, http.StatusCreated, pushReference(items, res))
	got := httptest.NewRecorder()
	writePush(got, items, res)
	if got.Body.String() != want.Body.String() || got.Code != want.Code ||
		!reflect.DeepEqual(got.Header(), want.Header()) {
		t.Fatalf("writePush:\n got %d %v %s\nwant %d %v %s", got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
	}
}

func TestPushEncodingMatchesEncodingJSON(t *testing.T) {
	items := []mq.PushItem{{Queue: "orders"}, {Queue: "q\\\"ünï\" <html> & \u2028 \x01"}, {Queue: "x"}, {Queue: "y"}, {Queue: "z"}}
	res := []mq.PushResult{
		{Status: mq.StatusQueued, TransactionID: "plain", MessageID: "0193a5c2-7d1e-7c3a-9b7e-2f1d4c5b6a79", PartitionID: "p1"},
		{Status: mq.StatusDuplicate, TransactionID: "tab\there é", MessageID: "m2", PartitionID: "p2"},
		{Status: mq.StatusFailed, TransactionID: "full"},
		{Status: mq.StatusQueued, TransactionID: ""},
		{Status: mq.StatusDuplicate, TransactionID: "k"},
	}
	checkPushEncoding(t, items, res)
	checkPushEncoding(t, []mq.PushItem{}, []mq.PushResult{})
	checkPushEncoding(t, items[:1], res[:1])
}

func FuzzPushEncoding(f *testing.F) {
	f.Add("orders", "key", "id", "pid", 0)
	f.Add("\xff\"\\", "\u2029", "", "<", 2)
	f.Fuzz(func(t *testing.T, queue, key, id, pid string, status int) {
		st := [...]string{mq.StatusQueued, mq.StatusDuplicate, mq.StatusFailed}[uint(status)%3]
		checkPushEncoding(t, []mq.PushItem{{Queue: queue}}, []mq.PushResult{{Status: st, TransactionID: key, MessageID: id, PartitionID: pid}})
	})
}
