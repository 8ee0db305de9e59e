package httpapi_test

// Behaviour tests over pidReal HTTP for the input validation and the edge answers of the data
// routes (docs/api/data-api.md, docs/api/README.md §2): every 400 message is exact, every status code is the one
// the API reference lists, and a rejected request writes nothing.

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/queen-go/queen/internal/testserver"
)

func TestValidationPushErrors(t *testing.T) {
	b := fakeSetup(t)
	q := b.queue
	item := func(kv ...any) obj {
		o := obj{}
		for i := 0; i < len(kv); i += 2 {
			o[kv[i].(string)] = kv[i+1]
		}
		return o
	}
	items := func(it ...any) obj { return obj{"items": it} }
	cases := []struct {
		name string
		body any
		msg  string
	}{
		{"no items", `{}`, "items array is required"},
		{"items null", `{"items":null}`, "items array is required"},
		{"items object", `{"items":{"queue":"x","payload":1}}`, "items array is required"},
		{"items string", `{"items":"[]"}`, "items array is required"},
		{"body array", `[{"queue":"x","payload":1}]`, "items array is required"},
		{"item number", items(5), "Each item must be an object"},
		{"item null", items(nil), "Each item must be an object"},
		{"item string", items("x"), "Each item must be an object"},
		{"item array", items([]any{}), "Each item must be an object"},
		{"queue missing", items(item("payload", 1)), "Queue must be a string"},
		{"queue null", items(item("queue", nil, "payload", 1)), "Queue must be a string"},
		{"queue number", items(item("queue", 1, "payload", 1)), "Queue must be a string"},
		{"queue 256", items(item("queue", valName(t, "", 256), "payload", 1)), "queue exceeds 255 characters"},
		{"partition number", items(item("queue", q, "partition", 1, "payload", 1)), "Partition must be a string"},
		{"partition bool", items(item("queue", q, "partition", false, "payload", 1)), "Partition must be a string"},
		{"partition object", items(item("queue", q, "partition", obj{}, "payload", 1)), "Partition must be a string"},
		{"partition 256", items(item("queue", q, "partition", valName(t, "", 256), "payload", 1)), "partition exceeds 255 characters"},
		{"payload missing", items(item("queue", q)), "payload is required"},
		{"data is no alias", items(item("queue", q, "data", obj{"a": 1})), "payload is required"},
		{"transactionId number", items(item("queue", q, "payload", 1, "transactionId", 7)), "TransactionId must be a string"},
		{"transactionId bool", items(item("queue", q, "payload", 1, "transactionId", true)), "TransactionId must be a string"},
		{"transactionId 256", items(item("queue", q, "payload", 1, "transactionId", valName(t, "", 256))), "transactionId exceeds 255 characters"},
		{"first bad item wins", items(item("queue", q, "payload", 1), item("queue", q, "partition", 2, "payload", 1),
			item("queue", 3, "payload", 1)), "Partition must be a string"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			valWantError(t, valSend(t, "POST", b.srv.URL+"/api/v1/push", c.body), http.StatusBadRequest, c.msg)
		})
	}
}

func TestValidationPushValidatesAllItemsFirst(t *testing.T) {
	b := setup(t, testserver.Options{})
	first, second := b.queue+"-first", b.queue+"-second"
	body := obj{"items": []obj{
		{"queue": first, "payload": 1},
		{"queue": second, "partition": "p", "payload": 2},
		{"queue": b.queue, "payload": 3, "transactionId": 4},
	}}
	valWantError(t, b.valDo("POST", "/api/v1/push", body), http.StatusBadRequest, "TransactionId must be a string")
	valWantNoContent(t, b.valDo("GET", valPopPath(first, ""), nil))
	valWantNoContent(t, b.valDo("GET", valPopPath(second, ""), nil))
	valWantNoContent(t, b.valDo("GET", valPopPath(b.queue, ""), nil))
	// The rejected request left nothing behind that could get in the way of a good one.
	b.push("", obj{"queue": first, "payload": 1})
	if p, ok := b.pop(valPopPath(first, "batch=10")); !ok || len(p.Messages) != 1 {
		t.Fatalf("pop after a good push: %+v", p)
	}
}

func TestValidationPushEmptyItems(t *testing.T) {
	b := setup(t, testserver.Options{})
	r := b.valDo("POST", "/api/v1/push", `{"items":[]}`)
	if r.code != http.StatusCreated || string(r.body) != "[]" || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("empty push: %d %q %v", r.code, r.body, r.header)
	}
}

func TestValidationPushNameLengths(t *testing.T) {
	b := setup(t, testserver.Options{})
	queue := valName(t, b.queue+"-", 255)
	partition := valName(t, "p-", 255)
	key := valName(t, "k-", 255)
	res := b.push("", obj{"queue": queue, "partition": partition, "transactionId": key, "payload": "long"})
	if res[0].Status != "queued" || res[0].TransactionID != key || res[0].QueueName != queue {
		t.Fatalf("push answer %+v", res)
	}
	p, ok := b.pop("/api/v1/pop/queue/" + url.PathEscape(queue) + "/partition/" + url.PathEscape(partition))
	if !ok || p.Queue != queue || p.Partition != partition || len(p.Messages) != 1 || p.Messages[0].TransactionID != key {
		t.Fatalf("pop %+v", p)
	}
}

func TestValidationPushDefaults(t *testing.T) {
	b := setup(t, testserver.Options{})
	res := b.push("",
		obj{"partition": nil, "payload": "null partition"},
		obj{"partition": "", "payload": "empty partition", "transactionId": ""},
		obj{"payload": "no partition", "transactionId": nil},
		obj{"payload": nil, "transactionId": "given", "traceId": uuid.NewString(), "producerSub": "x", "bufferMs": 5},
	)
	for i, r := range res {
		if r.Status != "queued" || r.Index != i || r.PartitionID != res[0].PartitionID || r.TraceID != nil {
			t.Fatalf("item %d: %+v", i, r)
		}
		if i < 3 && (r.TransactionID != r.MessageID || !valUUIDv7Re.MatchString(r.MessageID)) {
			t.Fatalf("item %d: transaction_id %q should be the minted id %q", i, r.TransactionID, r.MessageID)
		}
	}
	if res[3].TransactionID != "given" {
		t.Fatalf("item 3: %+v", res[3])
	}
	p, ok := b.pop("/api/v1/pop/queue/" + b.queue + "/partition/Default?batch=10")
	if !ok || len(p.Messages) != 4 || p.PartitionID != res[0].PartitionID {
		t.Fatalf("Default partition pop %+v", p)
	}
	for i, m := range p.Messages {
		if m.ID != res[i].MessageID || m.TransactionID != res[i].TransactionID || m.TraceID != nil {
			t.Fatalf("message %d: %+v, pushed %+v", i, m, res[i])
		}
	}
	if string(p.Messages[3].Data) != "null" {
		t.Fatalf("null payload came back as %s", p.Messages[3].Data)
	}
}

func TestValidationPushResponseShapes(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.valConfigure(obj{"queue": b.queue, "options": obj{"maxSize": 2}})
	body := obj{"items": []obj{
		{"queue": b.queue, "partition": "p", "payload": 1, "transactionId": "k-1"},
		{"queue": b.queue, "partition": "p", "payload": 2, "transactionId": "k-1"},
		{"queue": b.queue, "partition": "p", "payload": 3, "transactionId": "k-2"},
		{"queue": b.queue, "partition": "p", "payload": 4, "transactionId": "k-3"},
	}}
	r := b.valDo("POST", "/api/v1/push", body)
	if r.code != http.StatusCreated {
		t.Fatalf("push: %d %s", r.code, r.body)
	}
	res := decode[[]map[string]any](t, r.body)
	if len(res) != 4 {
		t.Fatalf("push answer %s", r.body)
	}
	queued, dup, full := res[0], res[1], res[3]
	valKeys(t, queued, "index", "transaction_id", "status", "message_id", "partition_id", "trace_id", "queueName")
	mid, _ := queued["message_id"].(string)
	pid, _ := queued["partition_id"].(string)
	if queued["index"] != 0.0 || queued["transaction_id"] != "k-1" || queued["status"] != "queued" ||
		!valUUIDv7Re.MatchString(mid) || !valUUIDRe.MatchString(pid) || queued["trace_id"] != nil ||
		queued["queueName"] != b.queue {
		t.Fatalf("queued element %v", queued)
	}
	valKeys(t, dup, "index", "transaction_id", "status", "message_id", "queueName")
	if dup["index"] != 1.0 || dup["transaction_id"] != "k-1" || dup["status"] != "duplicate" ||
		dup["message_id"] != mid || dup["queueName"] != b.queue {
		t.Fatalf("duplicate element %v", dup)
	}
	if res[2]["status"] != "queued" {
		t.Fatalf("third element %v", res[2])
	}
	valKeys(t, full, "index", "transaction_id", "status", "error", "queueName")
	if full["index"] != 3.0 || full["transaction_id"] != "k-3" || full["status"] != "failed" ||
		full["error"] != "queue full" || full["queueName"] != b.queue {
		t.Fatalf("failed element %v", full)
	}

	// A duplicate in a later request has the same shape and names the stored message.
	r = b.valDo("POST", "/api/v1/push", obj{"items": []obj{{"queue": b.queue, "partition": "p", "payload": 5, "transactionId": "k-2"}}})
	res = decode[[]map[string]any](t, r.body)
	if r.code != http.StatusCreated || len(res) != 1 {
		t.Fatalf("second push: %d %s", r.code, r.body)
	}
	valKeys(t, res[0], "index", "transaction_id", "status", "message_id", "queueName")
	if res[0]["status"] != "duplicate" || res[0]["index"] != 0.0 {
		t.Fatalf("later duplicate %v", res[0])
	}
}

// ---------------------------------------------------------------------------------------------
// Body errors common to every route that takes a body (docs/api/README.md §2.4)

func TestValidationBodyErrors(t *testing.T) {
	b := fakeSetup(t)
	routes := []string{"/api/v1/configure", "/api/v1/push", "/api/v1/ack", "/api/v1/ack/batch"}
	for _, route := range routes {
		t.Run(strings.TrimPrefix(route, "/api/v1/"), func(t *testing.T) {
			t.Parallel()
			url := b.srv.URL + route
			valWantError(t, valSend(t, "POST", url, nil), http.StatusBadRequest, "Empty request body")
			valWantError(t, valSend(t, "POST", url, ""), http.StatusBadRequest, "Empty request body")
			valWantError(t, valSend(t, "POST", url, " \r\n\t "), http.StatusBadRequest, "Empty request body")
			for _, bad := range []string{`{`, `{"queue":}`, `nope`, `{"items":[]} trailing`, `{'a':1}`} {
				valWantInvalidJSON(t, valSend(t, "POST", url, bad))
			}
		})
	}
}

// ---------------------------------------------------------------------------------------------
// Pop
