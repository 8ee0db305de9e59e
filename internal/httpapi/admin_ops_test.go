package httpapi_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/queen-go/queen/internal/testserver"
)

// GET /api/v1/resources/partitions (docs/api/admin-api.md §1.1) and the DLQ delete routes
// (§3.3): shapes, codes, messages and levels.

// opsPartitions lists partitions and checks the answer's and each row's shape.
func (b *bundle) opsPartitions(query string) ([]obj, int64, obj) {
	b.t.Helper()
	out := admShape(b.t, admGet(b, "/api/v1/resources/partitions"+query), "partitions", "total", "pagination", "statsAge")
	rows := admList(b.t, out["partitions"])
	for _, r := range rows {
		admShape(b.t, r, "id", "name", "queue", "queueId", "namespace", "task", "createdAt", "messages",
			"consumerGroups", "activeLeases", "maxTimeLag", "oldestMessage", "newestMessage", "lastActivity")
		admShape(b.t, r["messages"], "total", "pending", "processing", "completed", "failed", "deadLetter")
	}
	return rows, admNum(b.t, out["total"]), admShape(b.t, out["pagination"], "limit", "offset")
}

func TestAdminPartitionsList(t *testing.T) {
	b := admSetup(t, testserver.Options{FakeClock: true})
	b.admPushKeys("pa", "a", "b", "c")
	b.admPushKeys("pb", "d")
	b.admAckAll(b.admPop("pa", "", 1), "completed", "")
	b.admPop("pa", "", 1) // b stays leased
	b.stRefresh()

	rows, total, page := b.opsPartitions(admQuery("queue", b.queue))
	if got := admField(rows, "name"); !slices.Equal(got, []string{"pa", "pb"}) || total != 2 {
		t.Fatalf("partitions %v total %d", got, total)
	}
	if admNum(t, page["limit"]) != 100 || admNum(t, page["offset"]) != 0 {
		t.Fatalf("pagination %v", page)
	}
	pa := rows[0]
	m := pa["messages"].(obj)
	if pa["queue"] != b.queue || admNum(t, m["total"]) != 3 || admNum(t, m["completed"]) != 1 ||
		admNum(t, m["processing"]) != 1 || admNum(t, m["pending"]) != 1 || admNum(t, m["failed"]) != 0 ||
		admNum(t, pa["consumerGroups"]) != 1 || admNum(t, pa["activeLeases"]) != 1 {
		t.Fatalf("row %v", pa)
	}
	admTime(t, pa["createdAt"])
	admTime(t, pa["oldestMessage"])
	admTime(t, pa["lastActivity"])

	for _, c := range []struct {
		query string
		want  []string
	}{
		{admQuery("queue", b.queue, "sort", "total"), []string{"pa", "pb"}}, // counts: desc by default
		{admQuery("queue", b.queue, "sort", "total", "order", "asc"), []string{"pb", "pa"}},
		{admQuery("queue", b.queue, "order", "desc"), []string{"pb", "pa"}},
		{admQuery("queue", b.queue, "search", "B"), []string{"pb"}},
		{admQuery("queue", b.queue, "limit", 1, "offset", 1), []string{"pb"}},
		{admQuery("queue", b.queue+"-none"), []string{}},
	} {
		rows, _, _ := b.opsPartitions(c.query)
		if got := admField(rows, "name"); !slices.Equal(got, c.want) {
			t.Fatalf("%s: %v, want %v", c.query, got, c.want)
		}
	}
	admError(b, "GET", "/api/v1/resources/partitions?sort=size", nil, http.StatusBadRequest, `{"error":"Invalid sort: size"}`)
	admError(b, "GET", "/api/v1/resources/partitions?order=up", nil, http.StatusBadRequest, `{"error":"Invalid order: up"}`)
	admError(b, "GET", "/api/v1/resources/partitions?search="+strings.Repeat("s", 256), nil, http.StatusBadRequest,
		`{"error":"search exceeds 255 characters"}`)
}

func TestAdminDLQDelete(t *testing.T) {
	b := admSetup(t, testserver.Options{FakeClock: true})
	b.admPushKeys("p", "a", "b", "c", "d")
	for _, reason := range []string{"x", "y", "x", "x"} {
		b.srv.Clock.Advance(1e9)
		b.admDeadLetter(b.queue, "p", "", "dlq", reason)
	}
	entries, _, _ := b.admDLQ(admQuery("queue", b.queue))
	if len(entries) != 4 {
		t.Fatalf("entries %v", entries)
	}
	newest := entries[0]["dlqId"].(string)

	out := admJSON[obj](b, http.StatusOK, "DELETE", "/api/v1/dlq/"+newest, nil)
	if !admSameJSON(opsJSON(t, out), opsJSON(t, obj{"deleted": true, "dlqId": newest, "existed": true})) {
		t.Fatalf("delete: %v", out)
	}
	out = admJSON[obj](b, http.StatusOK, "DELETE", "/api/v1/dlq/"+newest, nil)
	if out["existed"] != false || out["deleted"] != true {
		t.Fatalf("delete again: %v", out)
	}
	if out := admJSON[obj](b, http.StatusOK, "DELETE", "/api/v1/dlq/not-a-uuid", nil); out["existed"] != false {
		t.Fatalf("malformed id: %v", out)
	}
	// By ids: repeats once, unknown and malformed ids skipped as sent.
	second := entries[1]["dlqId"].(string)
	out = admJSON[obj](b, http.StatusOK, "POST", "/api/v1/dlq/delete",
		obj{"ids": []string{second, second, newest, "junk"}, "mode": "copy"})
	if !admSameJSON(opsJSON(t, out), opsJSON(t, obj{"deleted": 1, "remaining": 0, "skipped": []obj{
		{"id": newest, "reason": "DLQ entry not found"}, {"id": "junk", "reason": "DLQ entry not found"}}})) {
		t.Fatalf("delete by ids: %v", out)
	}
	// By filter, oldest first, up to limit; remaining counts the rest.
	out = admJSON[obj](b, http.StatusOK, "POST", "/api/v1/dlq/delete",
		obj{"filter": obj{"queue": b.queue, "error": "x"}, "limit": 1})
	if admNum(t, out["deleted"]) != 1 || admNum(t, out["remaining"]) != 0 || len(admList(t, out["skipped"])) != 0 {
		t.Fatalf("delete by filter: %v", out)
	}
	if left, total, _ := b.admDLQ(admQuery("queue", b.queue)); total != 1 || left[0]["errorMessage"] != "y" {
		t.Fatalf("left %v", left)
	}

	for _, c := range []struct {
		body any
		msg  string
	}{
		{obj{}, "Either ids or filter is required"},
		{obj{"ids": []string{"a"}, "filter": obj{}}, "Either ids or filter is required"},
		{obj{"ids": "a"}, "ids must be an array of strings"},
		{obj{"ids": []any{1}}, "ids must be an array of strings"},
		{obj{"ids": make([]string, 1001)}, "ids exceeds 1000 entries"},
		{obj{"filter": []any{}}, "filter must be an object"},
		{obj{"filter": obj{"queue": 1}}, "filter.queue must be a string"},
		{obj{"filter": obj{"error": true}}, "filter.error must be a string"},
		{obj{"filter": obj{"from": "soon"}}, "Invalid filter.from timestamp"},
		{obj{"filter": obj{"to": "later"}}, "Invalid filter.to timestamp"},
		{obj{"filter": obj{}, "limit": 0}, "limit must be a positive integer"},
		{obj{"filter": obj{}, "limit": 1.5}, "limit must be a positive integer"},
		{[]any{}, "request body must be a JSON object"},
	} {
		admError(b, "POST", "/api/v1/dlq/delete", c.body, http.StatusBadRequest, `{"error":"`+c.msg+`"}`)
	}
}

// opsJSON encodes a value as JSON text.
func opsJSON(t testing.TB, v any) []byte {
	t.Helper()
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestAdminClearQueue(t *testing.T) {
	b := admSetup(t, testserver.Options{FakeClock: true})
	b.admPushKeys("p1", "a", "b", "c")
	b.admPushKeys("p2", "d")
	held := b.admPop("p1", "", 2)
	b.admDeadLetter(b.queue, "p2", "", "dlq", "kept")
	path := "/api/v1/queues/" + b.queue + "/clear"

	out := admJSON[obj](b, http.StatusOK, "DELETE", path+"?partition=p1", nil)
	want := obj{"cleared": true, "queue": b.queue, "partition": "p1", "partitionsCleared": 1, "messagesDeleted": 3,
		"unconsumedDeleted": 3, "complete": true}
	if !admSameJSON(opsJSON(t, out), opsJSON(t, want)) {
		t.Fatalf("clear p1: %v", out)
	}
	// The holder's late ack of a removed message.
	m := held.Messages[0]
	if r := b.ack(obj{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": held.LeaseID}); r.Success ||
		r.Error == nil || *r.Error != "Message not found" {
		t.Fatalf("late ack: %+v", r)
	}
	out = admJSON[obj](b, http.StatusOK, "DELETE", path, nil)
	want = obj{"cleared": true, "queue": b.queue, "partition": nil, "partitionsCleared": 2, "messagesDeleted": 1,
		"unconsumedDeleted": 0, "complete": true}
	if !admSameJSON(opsJSON(t, out), opsJSON(t, want)) {
		t.Fatalf("clear queue: %v", out)
	}
	if _, total, _ := b.admDLQ(admQuery("queue", b.queue)); total != 1 {
		t.Fatalf("DLQ entries must stay: %d", total)
	}
	// Idempotent; the queue still takes pushes and delivers them.
	if out := admJSON[obj](b, http.StatusOK, "DELETE", path, nil); admNum(t, out["messagesDeleted"]) != 0 {
		t.Fatalf("clear again: %v", out)
	}
	b.admPushKeys("p1", "e")
	if got := admKeys(b.admPop("p1", "", 5)); !slices.Equal(got, []string{"e"}) {
		t.Fatalf("after clear: %v", got)
	}

	admError(b, "DELETE", "/api/v1/queues/"+b.queue+"-none/clear", nil, http.StatusNotFound, `{"error":"Queue not found"}`)
	admError(b, "DELETE", path+"?partition=none", nil, http.StatusNotFound, `{"error":"Partition not found"}`)
}

func TestAdminMoveToDLQ(t *testing.T) {
	b := admSetup(t, testserver.Options{FakeClock: true})
	pushed := b.admPushKeys("p", "a", "b", "c")
	pid := pushed[0].PartitionID
	path := func(key string) string { return "/api/v1/messages/" + pid + "/" + key + "/dlq" }

	// Empty body: every consumer; the partition has none, so queue mode.
	out := admJSON[obj](b, http.StatusOK, "POST", path("b"), nil)
	want := obj{"success": true, "partitionId": pid, "transactionId": "b",
		"consumerGroups": []obj{{"consumerGroup": "__QUEUE_MODE__", "action": "moved"}}, "skipped": []obj{}}
	if !admSameJSON(opsJSON(t, out), opsJSON(t, want)) {
		t.Fatalf("move b: %v", out)
	}
	entries, _, _ := b.admDLQ(admQuery("queue", b.queue))
	if len(entries) != 1 || entries[0]["errorMessage"] != "Moved to DLQ manually" || admNum(t, entries[0]["retryCount"]) != 0 {
		t.Fatalf("entry %v", entries)
	}
	// b is passed over; a and c are delivered in order.
	if got := admKeys(b.admPop("p", "", 10)); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("delivered %v", got)
	}
	// Leased now: a skip; a named group that is no consumer: a skip too.
	out = admJSON[obj](b, http.StatusOK, "POST", path("c"), obj{"error": strings.Repeat("é", 5000)})
	want = obj{"success": false, "partitionId": pid, "transactionId": "c", "consumerGroups": []obj{},
		"skipped": []obj{{"consumerGroup": "__QUEUE_MODE__", "reason": "Message is leased"}}, "error": "Message not moved"}
	if !admSameJSON(opsJSON(t, out), opsJSON(t, want)) {
		t.Fatalf("move leased c: %v", out)
	}
	out = admJSON[obj](b, http.StatusOK, "POST", path("a"), obj{"consumerGroup": "stranger", "error": 7})
	if s := admList(t, out["skipped"]); out["success"] != false || len(s) != 1 || s[0]["reason"] != "Not a consumer of this partition" {
		t.Fatalf("stranger: %v", out)
	}

	admError(b, "POST", path("zzz"), nil, http.StatusNotFound, `{"error":"Message not found"}`)
	admError(b, "POST", "/api/v1/messages/not-a-uuid/a/dlq", nil, http.StatusNotFound, `{"error":"Message not found"}`)
	admError(b, "POST", path("a"), obj{"consumerGroup": 1}, http.StatusBadRequest, `{"error":"consumerGroup must be a string"}`)
	admError(b, "POST", path("a"), obj{"consumerGroup": strings.Repeat("g", 256)}, http.StatusBadRequest,
		`{"error":"consumerGroup exceeds 255 characters"}`)
	admError(b, "POST", path("a"), obj{"consumerGroup": "g\x00"}, http.StatusBadRequest,
		`{"error":"consumerGroup must not contain U+0000"}`)
	admError(b, "POST", path("a"), []any{}, http.StatusBadRequest, `{"error":"request body must be a JSON object"}`)
}
