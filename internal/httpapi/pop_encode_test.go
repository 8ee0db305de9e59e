package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// popRefMessage and popRef are the pop answer as structs: what encoding/json wrote before
// writePop, kept as the reference writePop must match byte for byte.
type popRefMessage struct {
	ID            string          `json:"id"`
	TransactionID string          `json:"transactionId"`
	TraceID       *string         `json:"traceId"`
	Data          json.RawMessage `json:"data"`
	ProducerSub   *string         `json:"producerSub"`
	CreatedAt     string          `json:"createdAt"`
	PartitionID   string          `json:"partitionId"`
	Partition     string          `json:"partition"`
	Queue         string          `json:"queue"`
	LeaseID       string          `json:"leaseId"`
	ConsumerGroup string          `json:"consumerGroup"`
	RetryCount    int             `json:"retryCount"`
}

type popRef struct {
	Success           bool            `json:"success"`
	Queue             string          `json:"queue"`
	Partition         string          `json:"partition"`
	PartitionID       string          `json:"partitionId"`
	LeaseID           string          `json:"leaseId"`
	ConsumerGroup     string          `json:"consumerGroup"`
	PartitionsClaimed int             `json:"partitionsClaimed"`
	Messages          []popRefMessage `json:"messages"`
}

func popReference(res mq.PopResult) popRef {
	out := popRef{Success: true, LeaseID: res.LeaseID, ConsumerGroup: res.Group, PartitionsClaimed: res.Claimed,
		Messages: make([]popRefMessage, len(res.Messages))}
	first := res.Messages[0]
	out.Queue, out.Partition, out.PartitionID = first.Queue, first.Partition, first.PartitionID
	for i, m := range res.Messages {
		out.Messages[i] = popRefMessage{ID: m.ID, TransactionID: m.TransactionID, TraceID: m.TraceID,
			Data: m.Payload, ProducerSub: m.ProducerSub, CreatedAt: formatMicro(m.CreatedAt),
			PartitionID: m.PartitionID, Partition: m.Partition, Queue: m.Queue, LeaseID: res.LeaseID,
			ConsumerGroup: res.Group, RetryCount: m.RetryCount}
	}
	return out
}

// checkPopEncoding fails unless writePop answers exactly what writeJSON answers for the
// reference structs.
func checkPopEncoding(t *testing.T, res mq.PopResult) {
	t.Helper()
	want := httptest.NewRecorder()
	writeJSON(want, http.StatusOK, popReference(res))
	got := httptest.NewRecorder()
	writePop(got, res)
	if got.Body.String() != want.Body.String() || got.Code != want.Code ||
		!reflect.DeepEqual(got.Header(), want.Header()) {
		t.Fatalf("writePop:\n got %d %v %s\nwant %d %v %s", got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
	}
}

func TestPopEncodingMatchesEncodingJSON(t *testing.T) {
	trace, sub := "0193a5c2-7d1e-7c3a-9b7e-2f1d4c5b6a79", "svc-\"billing\"\n"
	created := time.Date(2025, 3, 14, 9, 26, 53, 589793000, time.FixedZone("x", 3600))
	res := mq.PopResult{LeaseID: "lease", Group: "__QUEUE_MODE__", Claimed: 2, Messages: []mq.Message{
		{ID: "a", TransactionID: "plain", Payload: []byte(`{"a":1}`), CreatedAt: created, PartitionID: "p1", Partition: "Default", Queue: "orders"},
		{ID: "b", TransactionID: "tab\there <html> & é \u2028 \x01", TraceID: &trace, ProducerSub: &sub,
			Payload: []byte(" {\"k\" : [1, 2,\n\t\"a b\"] } "), CreatedAt: created.Add(time.Microsecond), PartitionID: "p2",
			Partition: "ünï", Queue: "q\\", RetryCount: 3},
		{ID: "c", TransactionID: "", Payload: nil, PartitionID: "p2", Partition: "x", Queue: "y"},
		{ID: "d", TransactionID: "s", Payload: []byte(`"<a>\u0000"`), PartitionID: "p2", Partition: "x", Queue: "y"},
	}}
	checkPopEncoding(t, res)
	checkPopEncoding(t, benchPopResult(100))
}

func FuzzPopEncoding(f *testing.F) {
	f.Add("key", "partition", []byte(`{"a": [1, "x y"]}`), 0)
	f.Add("\xff\"\\", "\u2029", []byte(`null`), 7)
	f.Fuzz(func(t *testing.T, key, name string, payload []byte, retries int) {
		if !json.Valid(payload) {
			return // the database stores only valid JSON
		}
		checkPopEncoding(t, mq.PopResult{LeaseID: key, Group: name, Claimed: 1, Messages: []mq.Message{
			{ID: name, TransactionID: key, TraceID: &key, ProducerSub: &name, Payload: payload,
				PartitionID: key, Partition: name, Queue: key, RetryCount: retries}}})
	})
}
