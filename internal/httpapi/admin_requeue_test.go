package httpapi_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testserver"
)

// POST /api/v1/dlq/requeue (docs/api/admin-api.md §3.2) and
// POST /api/v1/messages/:partitionId/:transactionId/retry (§2.4).

func TestAdminDLQRequeueRedeliver(t *testing.T) {
	b := admSetup(t, testserver.Options{FakeClock: true})
	b.admPushKeys("p", "a", "b", "c", "d")
	for _, k := range []string{"a", "b"} {
		b.srv.Clock.Advance(time.Second)
		if id := b.admDeadLetter(b.queue, "p", "", "dlq", "x-"+k); id == "" {
			t.Fatal("no id")
		}
	}
	b.admAckAll(b.admPop("p", "", 1), "completed", "") // c: the cursor passes it
	entries, _, _ := b.admDLQ(admQuery("queue", b.queue))
	oldest := entries[1]["dlqId"].(string)

	// By ids: repeats count once, unknown and malformed ids are skipped as sent.
	out := admJSON[obj](b, http.StatusOK, "POST", "/api/v1/dlq/requeue",
		obj{"ids": []string{oldest, oldest, "junk", "00000000-0000-0000-0000-000000000000"}})
	want := obj{"mode": "redeliver", "requeued": 1, "remaining": 0, "skipped": []obj{
		{"id": "junk", "reason": "DLQ entry not found"},
		{"id": "00000000-0000-0000-0000-000000000000", "reason": "DLQ entry not found"}}}
	if !admSameJSON(opsJSON(t, out), opsJSON(t, want)) {
		t.Fatalf("requeue by ids: %v", out)
	}
	// Repeating is harmless.
	out = admJSON[obj](b, http.StatusOK, "POST", "/api/v1/dlq/requeue", obj{"ids": []string{oldest}, "mode": "redeliver"})
	if admNum(t, out["requeued"]) != 0 || admList(t, out["skipped"])[0]["reason"] != "DLQ entry not found" {
		t.Fatalf("repeat: %v", out)
	}
	// a comes back to queue mode before d, alone.
	if got := admKeys(b.admPop("p", "", 10)); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("after requeue: %v", got)
	}
	// By filter: remaining counts what is left; the leased requeue batch keeps its lease.
	out = admJSON[obj](b, http.StatusOK, "POST", "/api/v1/dlq/requeue", obj{"filter": obj{"queue": b.queue}, "limit": 5})
	if !admSameJSON(opsJSON(t, out), opsJSON(t, obj{"mode": "redeliver", "requeued": 1, "skipped": []obj{}, "remaining": 0})) {
		t.Fatalf("requeue by filter: %v", out)
	}
	if _, total, _ := b.admDLQ(admQuery("queue", b.queue)); total != 0 {
		t.Fatalf("entries left: %d", total)
	}
}

func TestAdminDLQRequeueCopy(t *testing.T) {
	b := admSetup(t, testserver.Options{FakeClock: true, EncryptionKey: encKey})
	b.admConfigure(obj{"encryptionEnabled": true})
	b.push("p", obj{"transactionId": "a", "payload": obj{"secret": 1}})
	b.admDeadLetter(b.queue, "p", "", "dlq", "poison")
	entries, _, _ := b.admDLQ(admQuery("queue", b.queue))
	id := entries[0]["dlqId"].(string)
	target := b.queue + ".replay"

	out := admJSON[obj](b, http.StatusOK, "POST", "/api/v1/dlq/requeue",
		obj{"ids": []string{id, "junk"}, "mode": "copy", "toQueue": target})
	admShape(t, out, "mode", "requeued", "skipped", "remaining", "copies")
	copies := admList(t, out["copies"])
	if out["mode"] != "copy" || admNum(t, out["requeued"]) != 1 || len(copies) != 1 ||
		len(admList(t, out["skipped"])) != 1 {
		t.Fatalf("copy: %v", out)
	}
	c := admShape(t, copies[0], "dlqId", "messageId", "transactionId", "queueName", "partitionId")
	if c["dlqId"] != id || c["messageId"] != c["transactionId"] || c["queueName"] != target {
		t.Fatalf("copy entry %v", c)
	}
	// The copy lands in the target queue, in the entry's partition (the default), payload
	// intact; the entry is gone.
	p, ok := b.pop("/api/v1/pop/queue/" + target + "/partition/p")
	if !ok || len(p.Messages) != 1 || p.Messages[0].TransactionID != c["transactionId"] ||
		p.PartitionID != c["partitionId"] || !admSameJSON(p.Messages[0].Data, []byte(`{"secret":1}`)) {
		t.Fatalf("copy delivered %+v", p)
	}
	if _, total, _ := b.admDLQ(admQuery("queue", b.queue)); total != 0 {
		t.Fatalf("entries left: %d", total)
	}

	// A full target skips the entry.
	b.push("p", obj{"transactionId": "b", "payload": 2})
	b.admDeadLetter(b.queue, "p", "", "dlq", "poison")
	full := b.queue + ".full"
	b.push("p", obj{"queue": full, "transactionId": "f", "payload": 0})
	if code, body := b.do("POST", "/api/v1/configure", obj{"queue": full, "options": obj{"maxSize": 1}}); code != http.StatusOK {
		t.Fatalf("configure: %d %s", code, body)
	}
	out = admJSON[obj](b, http.StatusOK, "POST", "/api/v1/dlq/requeue",
		obj{"filter": obj{"queue": b.queue}, "mode": "copy", "toQueue": full, "toPartition": "other"})
	if admNum(t, out["requeued"]) != 0 || admNum(t, out["remaining"]) != 1 || len(admList(t, out["copies"])) != 0 ||
		admList(t, out["skipped"])[0]["reason"] != "queue full" {
		t.Fatalf("full target: %v", out)
	}
}

func TestAdminDLQRequeueValidation(t *testing.T) {
	b := admSetup(t, testserver.Options{})
	for _, c := range []struct {
		body any
		msg  string
	}{
		{obj{}, "Either ids or filter is required"},
		{obj{"ids": []string{"a"}, "filter": obj{}}, "Either ids or filter is required"},
		{obj{"ids": "a"}, "ids must be an array of strings"},
		{obj{"ids": make([]string, 1001)}, "ids exceeds 1000 entries"},
		{obj{"filter": 1}, "filter must be an object"},
		{obj{"filter": obj{"consumerGroup": 1}}, "filter.consumerGroup must be a string"},
		{obj{"filter": obj{"from": "soon"}}, "Invalid filter.from timestamp"},
		{obj{"filter": obj{}, "limit": -1}, "limit must be a positive integer"},
		{obj{"ids": []string{}, "mode": "move"}, "Invalid mode: move"},
		{obj{"ids": []string{}, "mode": "copy"}, "toQueue is required for mode copy"},
		{obj{"ids": []string{}, "mode": "copy", "toQueue": ""}, "toQueue is required for mode copy"},
		{obj{"ids": []string{}, "mode": "copy", "toQueue": strings.Repeat("q", 256)}, "toQueue exceeds 255 characters"},
		{obj{"ids": []string{}, "mode": "copy", "toQueue": "q", "toPartition": strings.Repeat("p", 256)}, "toPartition exceeds 255 characters"},
		{obj{"ids": []string{}, "mode": "copy", "toQueue": "q\x00"}, "toQueue must not contain U+0000"},
		{[]any{}, "request body must be a JSON object"},
	} {
		admError(b, "POST", "/api/v1/dlq/requeue", c.body, http.StatusBadRequest, `{"error":"`+c.msg+`"}`)
	}
	// Redeliver ignores the copy fields; an empty id list requeues nothing.
	out := admJSON[obj](b, http.StatusOK, "POST", "/api/v1/dlq/requeue", obj{"ids": []string{}, "toQueue": 5})
	if !admSameJSON(opsJSON(t, out), opsJSON(t, obj{"mode": "redeliver", "requeued": 0, "skipped": []obj{}, "remaining": 0})) {
		t.Fatalf("empty: %v", out)
	}
}

func TestAdminRetryMessage(t *testing.T) {
	b := admSetup(t, testserver.Options{FakeClock: true})
	b.admConfigure(obj{"retryDelay": 60000})
	pushed := b.admPushKeys("p", "a", "b")
	pid := pushed[0].PartitionID
	path := func(key string) string { return "/api/v1/messages/" + pid + "/" + key + "/retry" }
	b.admDeadLetter(b.queue, "p", "billing", "dlq", "poison")
	b.admAckAll(b.admPop("p", "audit", 1), "failed", "audit") // audit waits out its retry delay

	out := admJSON[obj](b, http.StatusOK, "POST", path("a"), nil)
	want := obj{"success": true, "partitionId": pid, "transactionId": "a", "consumerGroups": []obj{
		{"consumerGroup": "audit", "action": "retry_delay_cleared"}, {"consumerGroup": "billing", "action": "requeued"}},
		"skipped": []obj{}}
	if !admSameJSON(opsJSON(t, out), opsJSON(t, want)) {
		t.Fatalf("retry: %v", out)
	}
	out = admJSON[obj](b, http.StatusOK, "POST", path("a"), obj{"consumerGroup": "billing"})
	if l := admList(t, out["consumerGroups"]); out["success"] != true || len(l) != 1 || l[0]["action"] != "already_requeued" {
		t.Fatalf("repeat: %v", out)
	}
	out = admJSON[obj](b, http.StatusOK, "POST", path("b"), obj{})
	want = obj{"success": false, "partitionId": pid, "transactionId": "b", "consumerGroups": []obj{}, "skipped": []obj{},
		"error": "Message is neither dead-lettered nor waiting for a retry"}
	if !admSameJSON(opsJSON(t, out), opsJSON(t, want)) {
		t.Fatalf("nothing to do: %v", out)
	}
	// Both groups get a again at once.
	if got := admKeys(b.admPop("p", "audit", 1)); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("audit: %v", got)
	}
	if got := admKeys(b.admPop("p", "billing", 5)); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("billing: %v", got)
	}

	admError(b, "POST", path("zzz"), nil, http.StatusNotFound, `{"error":"Message not found"}`)
	admError(b, "POST", "/api/v1/messages/not-a-uuid/a/retry", nil, http.StatusNotFound, `{"error":"Message not found"}`)
	admError(b, "POST", path("a"), obj{"consumerGroup": 1}, http.StatusBadRequest, `{"error":"consumerGroup must be a string"}`)
	admError(b, "POST", path("a"), obj{"consumerGroup": strings.Repeat("g", 256)}, http.StatusBadRequest,
		`{"error":"consumerGroup exceeds 255 characters"}`)
	admError(b, "POST", path("a"), []any{}, http.StatusBadRequest, `{"error":"request body must be a JSON object"}`)
}

// A requeue answers a parked pop of the group: it is delivered the requeued message.
func TestAdminRequeueReachesParkedPop(t *testing.T) {
	b := admSetup(t, testserver.Options{PollInitial: time.Hour, PollMax: time.Hour}) // only a wake-up answers it
	b.admPushKeys("p", "a")
	b.admDeadLetter(b.queue, "p", "g", "dlq", "poison")
	api := newCCAPI(t, b.srv.URL)
	ch := lpParkedPop(t, b.srv, api, "/api/v1/pop/queue/"+b.queue+"?wait=true&timeout=60000&consumerGroup=g")
	entries, _, _ := b.admDLQ(admQuery("queue", b.queue))
	admJSON[obj](b, http.StatusOK, "POST", "/api/v1/dlq/requeue", obj{"ids": []string{entries[0]["dlqId"].(string)}})
	select {
	case r := <-ch:
		if r.err != nil || !r.ok || len(r.p.Messages) != 1 || r.p.Messages[0].TransactionID != "a" {
			t.Fatalf("parked pop: %+v", r)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the parked pop was not woken by the requeue (its fallback poll is an hour away)")
	}
}
