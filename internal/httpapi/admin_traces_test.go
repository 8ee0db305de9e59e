package httpapi_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testserver"
)

// Trace records (docs/api/admin-api.md §4).

// admTrace posts a trace record and returns its id, requiring 201.
func (b *bundle) admTrace(body obj) string {
	b.t.Helper()
	out := admShape(b.t, admJSON[obj](b, http.StatusCreated, "POST", "/api/v1/traces", body), "success", "traceId")
	id, _ := out["traceId"].(string)
	if out["success"] != true || !admUUIDv7.MatchString(id) {
		b.t.Fatalf("trace answer %v", out)
	}
	return id
}

var admTraceKeys = []string{"id", "event_type", "data", "consumer_group", "worker_id", "created_at", "trace_names"}

func TestAdminTraces(t *testing.T) {
	b := admSetup(t, testserver.Options{FakeClock: true, EncryptionKey: encKey})
	b.admConfigure(obj{"encryptionEnabled": true})
	// Far in the future, so that this test's names are the most recently seen of the database.
	b.srv.Clock.Advance(150 * 365 * 24 * time.Hour)
	nameA, nameB := "A-"+b.queue, "B-"+b.queue
	res := b.push("p", obj{"transactionId": "m1", "payload": obj{"o": 1}}, obj{"transactionId": "m2", "payload": obj{"o": 2}})
	pid := res[0].PartitionID
	var at []time.Time
	post := func(body obj) string {
		b.srv.Clock.Advance(time.Second)
		at = append(at, b.srv.Clock.Now())
		return b.admTrace(body)
	}
	t1 := post(obj{"transactionId": "m1", "partitionId": pid, "data": obj{"step": 1}, "traceNames": nameA})
	t2 := post(obj{"transactionId": "m1", "partitionId": pid, "data": "two", "consumerGroup": "g", "eventType": "error",
		"traceNames": []any{nameA, nameB, nameA, "", 5}})
	t3 := post(obj{"transactionId": "m2", "partitionId": pid, "data": []int{3}, "traceNames": []string{nameB}})
	post(obj{"transactionId": "m2", "partitionId": pid, "data": obj{"x": nil}})

	traces := admList(t, admShape(t, admGet(b, "/api/v1/traces/"+pid+"/m1"), "traces")["traces"])
	if got := admField(traces, "id"); !slices.Equal(got, []string{t1, t2}) {
		t.Fatalf("traces of m1 %v, want %v oldest first", got, []string{t1, t2})
	}
	for i, want := range []struct{ event, group, data string }{{"info", "__QUEUE_MODE__", `{"step":1}`}, {"error", "g", `"two"`}} {
		tr := admShape(t, traces[i], admTraceKeys...)
		if tr["event_type"] != want.event || tr["consumer_group"] != want.group || tr["worker_id"] != "test" ||
			!admEqualJSON(tr["data"], want.data) || !admTime(t, tr["created_at"]).Equal(at[i].Truncate(time.Millisecond)) {
			t.Fatalf("trace %d: %v", i, tr)
		}
	}
	if !admEqualJSON(traces[1]["trace_names"], `["`+nameA+`","`+nameB+`"]`) {
		t.Fatalf("trace_names %v, want the distinct names in the order given", traces[1]["trace_names"])
	}

	byA := admShape(t, admGet(b, "/api/v1/traces/by-name/"+url.PathEscape(nameA)), "traces", "total", "pagination")
	named := admList(t, byA["traces"])
	if got := admField(named, "id"); !slices.Equal(got, []string{t1, t2}) || admNum(t, byA["total"]) != 2 ||
		!admEqualJSON(byA["pagination"], `{"limit":100,"offset":0}`) {
		t.Fatalf("by name %s: %v", nameA, byA)
	}
	n0 := admShape(t, named[0], append(admTraceKeys, "transaction_id", "partition_id", "queue_name", "partition_name",
		"message_payload")...)
	if n0["transaction_id"] != "m1" || n0["partition_id"] != pid || n0["queue_name"] != b.queue ||
		n0["partition_name"] != "p" || !admEqualJSON(n0["message_payload"], `{"o":1}`) {
		t.Fatalf("named trace %v: want its message's place and decrypted payload", n0)
	}
	byB := admGet(b, "/api/v1/traces/by-name/"+url.PathEscape(nameB)+"?limit=1&offset=1")
	if named := admList(t, byB["traces"]); len(named) != 1 || named[0]["id"] != t3 || admNum(t, byB["total"]) != 2 ||
		!admEqualJSON(named[0]["message_payload"], `{"o":2}`) || !admEqualJSON(byB["pagination"], `{"limit":1,"offset":1}`) {
		t.Fatalf("by name %s, second page: %v", nameB, byB)
	}

	names := admShape(t, admGet(b, "/api/v1/traces/names?limit=2"), "trace_names", "total", "pagination")
	list := admList(t, names["trace_names"])
	if got := admField(list, "trace_name"); !slices.Equal(got, []string{nameB, nameA}) || admNum(t, names["total"]) < 2 ||
		!admEqualJSON(names["pagination"], `{"limit":2,"offset":0}`) {
		t.Fatalf("names %v, want %s then %s (most recently seen first)", names, nameB, nameA)
	}
	for i, want := range []struct {
		traces, messages int64
		last             time.Time
	}{{2, 2, at[2]}, {2, 1, at[1]}} {
		n := admShape(t, list[i], "trace_name", "trace_count", "message_count", "last_seen")
		if admNum(t, n["trace_count"]) != want.traces || admNum(t, n["message_count"]) != want.messages ||
			!admTime(t, n["last_seen"]).Equal(want.last.Truncate(time.Millisecond)) {
			t.Fatalf("name %v, want %+v", n, want)
		}
	}

	// Removing a message removes its trace records.
	admJSON[obj](b, http.StatusOK, "DELETE", "/api/v1/messages/"+pid+"/m2", nil)
	if out := admGet(b, "/api/v1/traces/by-name/"+url.PathEscape(nameB)); admNum(t, out["total"]) != 1 {
		t.Fatalf("by name after deleting m2: %v", out)
	}
	if out := admGet(b, "/api/v1/traces/"+pid+"/m2"); !admEqualJSON(out, `{"traces":[]}`) {
		t.Fatalf("traces of a deleted message: %v", out)
	}
}

func TestAdminTracesErrors(t *testing.T) {
	b := admSetup(t, testserver.Options{})
	pid := b.admPushKeys("p", "m1")[0].PartitionID
	const required = `{"error":"transactionId and partitionId are required"}`
	for _, body := range []any{obj{}, obj{"transactionId": "m1"}, obj{"partitionId": pid},
		obj{"transactionId": 1, "partitionId": pid, "data": 1}, obj{"transactionId": "", "partitionId": pid, "data": 1}, "[1]"} {
		admError(b, "POST", "/api/v1/traces", body, http.StatusBadRequest, required)
	}
	for _, body := range []any{obj{"transactionId": "m1", "partitionId": pid}, `{"transactionId":"m1","partitionId":"` + pid + `","data":null}`} {
		admError(b, "POST", "/api/v1/traces", body, http.StatusBadRequest, `{"error":"data is required"}`)
	}
	admError(b, "POST", "/api/v1/traces", "", http.StatusBadRequest, `{"error":"Empty request body"}`)
	for _, p := range []string{pid, "not-a-uuid", "00000000-0000-0000-0000-000000000000"} {
		admError(b, "POST", "/api/v1/traces", obj{"transactionId": "m9", "partitionId": p, "data": 1},
			http.StatusNotFound, `{"success":false,"error":"Message not found"}`)
	}
	for _, path := range []string{"/api/v1/traces/" + pid + "/m9", "/api/v1/traces/not-a-uuid/m1"} {
		if out := admGet(b, path); !admEqualJSON(out, `{"traces":[]}`) {
			t.Fatalf("%s: %v", path, out)
		}
	}
	// The static routes win over a message whose partition id would be "by-name" or "names".
	if out := admGet(b, "/api/v1/traces/by-name/none-"+url.PathEscape(b.queue)); !admEqualJSON(out,
		`{"traces":[],"total":0,"pagination":{"limit":100,"offset":0}}`) {
		t.Fatalf("unknown trace name: %v", out)
	}
	admShape(t, admGet(b, "/api/v1/traces/names?limit=0"), "trace_names", "total", "pagination")
}
