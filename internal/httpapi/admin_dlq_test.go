package httpapi_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testserver"
)

// GET /api/v1/dlq (docs/api/admin-api.md §3).

// admDLQ lists DLQ entries and returns them with the total and the pagination echo.
func (b *bundle) admDLQ(query string) ([]obj, int64, obj) {
	b.t.Helper()
	out := admShape(b.t, admGet(b, "/api/v1/dlq"+query), "messages", "total", "pagination")
	entries := admList(b.t, out["messages"])
	for _, e := range entries {
		admShape(b.t, e, "dlqId", "id", "messageStored", "transactionId", "partitionId", "queue", "partition", "consumerGroup", "errorMessage",
			"retryCount", "data", "traceId", "producerSub", "createdAt", "failedAt")
	}
	return entries, admNum(b.t, out["total"]), admShape(b.t, out["pagination"], "limit", "offset")
}

// admDeadLetter pops one message of a queue's partition for a group and acks it with status
// ("dlq" or "failed") and an error text; it returns the popped message's id.
func (b *bundle) admDeadLetter(queue, partition, group, status, reason string) string {
	b.t.Helper()
	p, ok := b.pop("/api/v1/pop/queue/" + url.PathEscape(queue) + "/partition/" + url.PathEscape(partition) +
		admQuery("consumerGroup", group))
	if !ok {
		b.t.Fatalf("nothing to dead-letter in %s/%s", queue, partition)
	}
	m := p.Messages[0]
	if r := b.ack(obj{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": p.LeaseID,
		"consumerGroup": group, "status": status, "error": reason}); !r.DLQ {
		b.t.Fatalf("ack %s did not dead-letter: %+v", status, r)
	}
	return m.ID
}

func TestAdminDLQList(t *testing.T) {
	b := admSetup(t, testserver.Options{FakeClock: true, EncryptionKey: encKey})
	other, pa, pb, group := b.queue+"-2", "pa-"+b.queue, "pb-"+b.queue, "g-"+b.queue
	b.admConfigure(obj{"encryptionEnabled": true, "retryLimit": 0})
	now := b.srv.Clock.Now()
	base := now.Truncate(time.Second).Add(1500 * time.Millisecond) // entries fall at half past a second
	b.srv.Clock.Advance(base.Sub(now))
	created := b.push(pa, obj{"transactionId": "m1", "payload": obj{"secret": 1}})
	b.push(pb, obj{"transactionId": "m2", "payload": obj{"secret": 2}})
	b.push(pa, obj{"queue": other, "transactionId": "m3", "payload": 3})

	ids := map[string]string{}
	for _, e := range []struct{ name, queue, partition, group, status string }{
		{"e1", b.queue, pa, "", "dlq"},
		{"e2", b.queue, pa, group, "dlq"},
		{"e3", b.queue, pb, "", "failed"}, // retryLimit 0: the first failure dead-letters
		{"e4", other, pa, "", "dlq"},
	} {
		b.srv.Clock.Advance(time.Second)
		ids[e.name] = b.admDeadLetter(e.queue, e.partition, e.group, e.status, e.name)
	}

	entries, total, page := b.admDLQ(admQuery("queue", b.queue))
	if got := admField(entries, "errorMessage"); !slices.Equal(got, []string{"e3", "e2", "e1"}) || total != 3 {
		t.Fatalf("entries %v (total %d), want e3 e2 e1, newest failedAt first", got, total)
	}
	if admNum(t, page["limit"]) != 100 || admNum(t, page["offset"]) != 0 {
		t.Fatalf("default pagination %v", page)
	}
	e2 := entries[1]
	if e2["id"] != ids["e2"] || e2["id"] != created[0].MessageID || e2["transactionId"] != "m1" ||
		e2["partitionId"] != created[0].PartitionID || e2["queue"] != b.queue || e2["partition"] != pa ||
		e2["consumerGroup"] != group || admNum(t, e2["retryCount"]) != 0 || e2["traceId"] != nil ||
		e2["producerSub"] != nil || !admEqualJSON(e2["data"], `{"secret":1}`) {
		t.Fatalf("entry %v", e2)
	}
	if c, f := admTime(t, e2["createdAt"]), admTime(t, e2["failedAt"]); !c.Equal(base.Truncate(time.Millisecond)) ||
		!f.Equal(base.Add(2*time.Second).Truncate(time.Millisecond)) {
		t.Fatalf("createdAt %v failedAt %v: want the message's creation and the move", c, f)
	}
	if id, _ := e2["dlqId"].(string); len(id) != 36 || id == e2["id"] || e2["messageStored"] != true {
		t.Fatalf("entry id and messageStored: %v", e2)
	}
	if entries[0]["consumerGroup"] != "__QUEUE_MODE__" {
		t.Fatalf("queue-mode entry %v", entries[0])
	}

	sec := func(d time.Duration) string { return base.Add(d).UTC().Format("2006-01-02T15:04:05Z") }
	for _, c := range []struct {
		query string
		want  []string
		total int64
	}{
		{admQuery("consumerGroup", group), []string{"e2"}, 1},
		{admQuery("error", "e3"), []string{"e3"}, 1},
		{admQuery("error", "E3"), []string{}, 0},                   // exact
		{admQuery("partition", pa), []string{"e4", "e2", "e1"}, 3}, // in any queue
		{admQuery("partition", pa, "queue", b.queue), []string{"e2", "e1"}, 2},
		{admQuery("queue", b.queue, "consumerGroup", "__QUEUE_MODE__", "partition", pb), []string{"e3"}, 1},
		// from is inclusive; a to without fractional seconds covers its whole second.
		{admQuery("queue", b.queue, "from", base.Add(2*time.Second), "to", sec(3*time.Second)), []string{"e3", "e2"}, 2},
		{admQuery("queue", b.queue, "to", base.Add(2*time.Second)), []string{"e2", "e1"}, 2},
		{admQuery("queue", b.queue, "limit", 1, "offset", 1), []string{"e2"}, 3},
		{admQuery("queue", b.queue, "offset", 7), []string{}, 3},
		{admQuery("queue", b.queue+"-none"), []string{}, 0},
		{admQuery("consumerGroup", group+"-none"), []string{}, 0},
	} {
		entries, total, _ := b.admDLQ(c.query)
		if got := admField(entries, "errorMessage"); !slices.Equal(got, c.want) || total != c.total {
			t.Fatalf("%s: %v (total %d), want %v (total %d)", c.query, got, total, c.want, c.total)
		}
	}
	if _, _, page := b.admDLQ(admQuery("queue", b.queue, "limit", 5000, "offset", 2)); admNum(t, page["limit"]) != 1000 ||
		admNum(t, page["offset"]) != 2 {
		t.Fatalf("pagination %v, want the limit capped at 1000", page)
	}

	admError(b, "GET", "/api/v1/dlq?from=soon", nil, http.StatusBadRequest, `{"error":"Invalid from timestamp"}`)
	admError(b, "GET", "/api/v1/dlq?to=2026-01-01T00:00:00+0100", nil, http.StatusBadRequest, `{"error":"Invalid to timestamp"}`)
}
