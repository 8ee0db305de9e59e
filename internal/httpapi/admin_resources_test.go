package httpapi_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testkit"
	"github.com/queen-go/queen/internal/testserver"
)

// Resources (docs/api/admin-api.md §1).

var admCounterKeys = []string{"total", "pending", "processing", "completed", "failed", "deadLetter"}

// admQueueOf returns the queue's element of the queue listing; nil when it is not listed.
func admQueueOf(b *bundle, name string) (obj, int) {
	b.t.Helper()
	queues := admList(b.t, admGet(b, "/api/v1/resources/queues")["queues"])
	for i, q := range queues {
		if q["name"] == name {
			return q, i
		}
	}
	return nil, -1
}

func TestAdminQueuesList(t *testing.T) {
	b := admSetup(t, testserver.Options{})
	older := b.queue + ".older"
	b.push("", obj{"queue": older, "payload": 1})
	b.admPushKeys("p1", "a", "b")
	b.admPushKeys("p2", "c")
	b.admAckAll(b.admPop("p1", "", 1), "completed", "") // a: completed
	b.admPop("p1", "", 1)                               // b: leased, so processing
	b.lsRefresh()                                       // counters come from the stats job

	q, at := admQueueOf(b, b.queue)
	admShape(t, q, "id", "name", "namespace", "task", "createdAt", "partitions", "messages", "deadLetter", "maxTimeLag")
	admTime(t, q["createdAt"])
	if q["namespace"] != b.queue || q["task"] != "" || admNum(t, q["partitions"]) != 2 {
		t.Fatalf("queue %v", q)
	}
	m := admShape(t, q["messages"], "total", "pending", "processing")
	if admNum(t, m["total"]) != 3 || admNum(t, m["pending"]) != 1 || admNum(t, m["processing"]) != 1 {
		t.Fatalf("messages %v, want 3 total, 1 pending (c), 1 processing (b)", m)
	}
	o, olderAt := admQueueOf(b, older)
	if o["namespace"] != b.queue || o["task"] != "older" {
		t.Fatalf("derived labels of %s: %v", older, o)
	}
	if at > olderAt {
		t.Fatalf("queue listed at %d after the older queue at %d: want newest first", at, olderAt)
	}
}

func TestAdminQueueDetail(t *testing.T) {
	b := admSetup(t, testserver.Options{FakeClock: true})
	b.admConfigure(obj{})
	first := b.admPushKeys("p1", "a")
	b.srv.Clock.Advance(time.Second)
	b.admPushKeys("p1", "b", "c")
	b.admPushKeys("p2", "d")
	a := b.admPop("p1", "", 1)
	b.admAckAll(a, "completed", "")
	b.admAckAll(b.admPop("p1", "", 1), "dlq", "") // b: dead-lettered, so consumed
	c := b.admPop("p1", "", 1)                    // c: processing
	b.lsRefresh()                                 // counters come from the stats job

	d := admGet(b, "/api/v1/resources/queues/"+url.PathEscape(b.queue))
	admShape(t, d, "id", "name", "namespace", "task", "createdAt", "options", "partitions", "partitionCount", "pagination", "totals")
	if d["name"] != b.queue || d["namespace"] != b.queue || d["task"] != "" {
		t.Fatalf("detail %v", d)
	}
	parts := admList(t, d["partitions"])
	if got := admField(parts, "name"); !slices.Equal(got, []string{"Default", "p1", "p2"}) {
		t.Fatalf("partitions %v, want Default (configure), p1, p2 in creation order", got)
	}
	wantStats := map[string][6]int64{"Default": {}, "p1": {3, 0, 1, 2, 0, 1}, "p2": {1, 1, 0, 0, 0, 0}}
	for _, p := range parts {
		admShape(t, p, "id", "name", "createdAt", "stats", "oldestMessage", "newestMessage", "lastActivity", "maxTimeLag")
		admCounters(t, p["stats"], wantStats[p["name"].(string)])
		if p["name"] == "Default" && (p["oldestMessage"] != nil || p["newestMessage"] != nil) {
			t.Fatalf("empty partition %v: oldest and newest must be null", p)
		}
		if p["name"] == "p1" {
			if p["id"] != first[0].PartitionID {
				t.Fatalf("p1 id %v, want %s", p["id"], first[0].PartitionID)
			}
			admSameMilli(t, p["oldestMessage"], a.Messages[0].CreatedAt)
			admSameMilli(t, p["newestMessage"], c.Messages[0].CreatedAt)
		}
	}
	admCounters(t, d["totals"], [6]int64{4, 1, 1, 2, 0, 1})

	admError(b, "GET", "/api/v1/resources/queues/"+url.PathEscape(b.queue+"-missing"), nil,
		http.StatusNotFound, `{"error":"Queue not found"}`)
}

// admCounters requires a six-counter object with the values total, pending, processing,
// completed, failed, deadLetter.
func admCounters(t testing.TB, v any, want [6]int64) {
	t.Helper()
	m := admShape(t, v, admCounterKeys...)
	for i, k := range admCounterKeys {
		if admNum(t, m[k]) != want[i] {
			t.Fatalf("counters %v, want %v (in order %v)", m, want, admCounterKeys)
		}
	}
}

// admSameMilli requires a response timestamp to be a popped createdAt cut to milliseconds.
func admSameMilli(t testing.TB, v any, popped string) {
	t.Helper()
	p, err := time.Parse(time.RFC3339Nano, popped)
	if err != nil {
		t.Fatal(err)
	}
	if got := admTime(t, v); !got.Equal(p.Truncate(time.Millisecond)) {
		t.Fatalf("timestamp %v, want %s to the millisecond", v, popped)
	}
}

func TestAdminDeleteQueueRemovesEverything(t *testing.T) {
	b := admSetup(t, testserver.Options{})
	part, group, name := "p-"+b.queue, "g-"+b.queue, "n-"+b.queue
	res := b.admPushKeys(part, "k1", "k2", "k3")
	p := b.admPop(part, group, 3)
	b.ack(obj{"transactionId": "k1", "partitionId": p.PartitionID, "leaseId": p.LeaseID, "consumerGroup": group,
		"status": "dlq"})
	admJSON[obj](b, http.StatusCreated, "POST", "/api/v1/traces",
		obj{"transactionId": "k2", "partitionId": res[1].PartitionID, "data": 1, "traceNames": name})
	if out := admJSON[obj](b, 200, "DELETE", "/api/v1/messages/"+res[2].PartitionID+"/k3", nil); out["success"] != true {
		t.Fatalf("delete k3: %v", out) // leaves a dedup tombstone behind
	}

	out := admJSON[obj](b, 200, "DELETE", "/api/v1/resources/queues/"+url.PathEscape(b.queue), nil)
	admShape(t, out, "deleted", "queue", "existed")
	if out["deleted"] != true || out["queue"] != b.queue || out["existed"] != true {
		t.Fatalf("delete: %v", out)
	}

	admError(b, "GET", "/api/v1/resources/queues/"+url.PathEscape(b.queue), nil, 404, `{"error":"Queue not found"}`)
	if dlq := admGet(b, "/api/v1/dlq"+admQuery("partition", part, "consumerGroup", group)); admNum(t, dlq["total"]) != 0 {
		t.Fatalf("DLQ entries survived the queue: %v", dlq)
	}
	if tr := admGet(b, "/api/v1/traces/by-name/"+url.PathEscape(name)); admNum(t, tr["total"]) != 0 {
		t.Fatalf("trace records survived the queue: %v", tr)
	}
	groups := admList(t, admJSON[any](b, 200, "GET", "/api/v1/consumer-groups", nil))
	if left := admWhere(groups, "queueName", b.queue); len(left) != 0 {
		t.Fatalf("consumer state survived the queue: %v", left)
	}
	if r := b.ack(obj{"transactionId": "k2", "partitionId": p.PartitionID, "leaseId": p.LeaseID,
		"consumerGroup": group}); r.Success || r.Error == nil || *r.Error != "Message not found" {
		t.Fatalf("ack after deletion: %+v, want Message not found", r)
	}
	// Every key is free again, the tombstoned one included.
	for _, r := range b.admPushKeys(part, "k1", "k3") {
		if r.Status != "queued" {
			t.Fatalf("push after deletion: %+v", r)
		}
	}
	if q, _ := admQueueOf(b, b.queue); admNum(t, q["partitions"]) != 1 || q["id"] == nil {
		t.Fatalf("recreated queue %v", q)
	}

	again := admJSON[obj](b, 200, "DELETE", "/api/v1/resources/queues/"+url.PathEscape(b.queue+"-never"), nil)
	if again["deleted"] != true || again["existed"] != false || again["queue"] != b.queue+"-never" {
		t.Fatalf("delete of an unknown queue: %v", again)
	}
}

// Deleting a queue while pushes hold its partition locks must neither deadlock nor fail: the
// deletion takes the locks in the writers' order. Every push writes to every partition, so a
// deletion that locked partitions in another order would meet a pusher holding some of them.
func TestAdminDeleteQueueDuringPushes(t *testing.T) {
	b := admSetup(t, testserver.Options{})
	const pushers, rounds, partitions = 6, 40, 12
	var wg sync.WaitGroup
	var pushed atomic.Int64 // pushes answered
	errs := make(chan error, pushers*rounds+rounds)
	for w := range pushers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				items := make([]obj, partitions)
				for p := range partitions {
					// Partition order differs per pusher; the broker sorts its locks anyway.
					items[p] = obj{"queue": b.queue, "partition": fmt.Sprint("p", (p+w)%partitions), "payload": i}
				}
				if code, body := admSend("POST", b.srv.URL+"/api/v1/push", obj{"items": items}); code != 201 {
					errs <- fmt.Errorf("push: %d %s", code, body)
				}
				pushed.Add(1)
			}
		}()
	}
	for range rounds {
		before := pushed.Load()
		if code, body := admSend("DELETE", b.srv.URL+"/api/v1/resources/queues/"+url.PathEscape(b.queue), nil); code != 200 {
			errs <- fmt.Errorf("delete: %d %s", code, body)
		}
		// A push recreates the queue before the next deletion, unless the pushers are done.
		testkit.Eventually(t, 30*time.Second, time.Millisecond, func() error {
			if n := pushed.Load(); n == before && n < pushers*rounds {
				return fmt.Errorf("no push answered since the deletion (%d of %d)", n, pushers*rounds)
			}
			return nil
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
