package httpapi_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testserver"
)

// Seeks (docs/api/admin-api.md §7).

// admSeek seeks a group on a queue and returns the answer, requiring 200.
func (b *bundle) admSeek(group string, body any) obj {
	b.t.Helper()
	return admJSON[obj](b, http.StatusOK, "POST", "/api/v1/consumer-groups/"+url.PathEscape(group)+"/queues/"+
		url.PathEscape(b.queue)+"/seek", body)
}

// admDrain pops and acks a group's messages on the bundle's queue until none is left and
// returns the transaction ids received per partition, in delivery order.
func (b *bundle) admDrain(group string) map[string][]string {
	b.t.Helper()
	got := map[string][]string{}
	for range 100 {
		p, ok := b.admPopQueue(b.queue, group)
		if !ok {
			return got
		}
		for _, m := range p.Messages {
			got[m.Partition] = append(got[m.Partition], m.TransactionID)
		}
		b.admAckAll(p, "completed", group)
	}
	b.t.Fatal("the queue never ran dry")
	return nil
}

// A group consumes everything, seeks back to a timestamp and receives again exactly the
// messages created at or after it, in order; leases, batches and retry delays are cleared.
func TestAdminSeekToTimestamp(t *testing.T) {
	b := admSetup(t, testserver.Options{FakeClock: true})
	group := "g-" + b.queue
	b.admConfigure(obj{"retryDelay": 3_600_000})
	b.admPushKeys("p1", "a1")
	b.admPushKeys("p2", "a2")
	b.srv.Clock.Advance(time.Second)
	ts := b.srv.Clock.Now()
	b.admPushKeys("p1", "b1", "b2")
	b.admPushKeys("p2", "c1")
	b.srv.Clock.Advance(time.Second)
	b.admPushKeys("p1", "d1")
	if got := b.admDrain(group); len(got["p1"])+len(got["p2"]) != 6 {
		t.Fatalf("first pass %v", got)
	}

	// A failed batch waiting out its retry delay on p1, a live lease on p2.
	b.admPushKeys("p1", "e1")
	b.admPushKeys("p2", "e2")
	b.admAckAll(b.admPop("p1", group, 1), "failed", group)
	held := b.admPop("p2", group, 1)
	if _, ok := b.admPopQueue(b.queue, group); ok {
		t.Fatal("p1 must wait out its retry delay and p2 is leased")
	}

	out := b.admSeek(group, obj{"timestamp": ts.Format(time.RFC3339Nano)})
	// Every partition counts, configure's empty Default too.
	if !admEqualJSON(out, `{"success":true,"consumerGroup":"`+group+`","queueName":"`+b.queue+`","seekToEnd":false,
		"targetTimestamp":"`+ts.UTC().Format("2006-01-02T15:04:05.000Z")+`","partitionsUpdated":3}`) {
		t.Fatalf("seek: %v", out)
	}
	if r := b.ack(obj{"transactionId": "e2", "partitionId": held.PartitionID, "leaseId": held.LeaseID,
		"consumerGroup": group}); r.Success || r.Error == nil || *r.Error != "Invalid or expired lease" {
		t.Fatalf("ack under a lease the seek cleared: %+v", r)
	}
	got := b.admDrain(group)
	if !slices.Equal(got["p1"], []string{"b1", "b2", "d1", "e1"}) || !slices.Equal(got["p2"], []string{"c1", "e2"}) {
		t.Fatalf("after the seek: %v, want p1 [b1 b2 d1 e1] and p2 [c1 e2]", got)
	}
	// Other groups are untouched.
	if got := b.admDrain("other-" + group); len(got["p1"]) != 5 || len(got["p2"]) != 3 {
		t.Fatalf("another group: %v", got)
	}
}

// toEnd skips everything stored, on every partition, creating the group's cursors.
func TestAdminSeekToEnd(t *testing.T) {
	b := admSetup(t, testserver.Options{})
	group := "g-" + b.queue
	b.admPushKeys("p1", "a", "b")
	b.admPushKeys("p2", "c")
	out := b.admSeek(group, obj{"toEnd": true, "timestamp": "ignored"})
	if !admEqualJSON(out, `{"success":true,"consumerGroup":"`+group+`","queueName":"`+b.queue+`","seekToEnd":true,
		"targetTimestamp":null,"partitionsUpdated":2}`) {
		t.Fatalf("seek: %v", out)
	}
	d := admGet(b, "/api/v1/consumer-groups/"+url.PathEscape(group))
	if parts := admList(t, d[b.queue].(obj)["partitions"]); len(parts) != 2 || admNum(t, parts[0]["offsetLag"]) != 0 ||
		admNum(t, parts[1]["offsetLag"]) != 0 {
		t.Fatalf("cursors after the seek: %v", d)
	}
	if p, ok := b.admPopQueue(b.queue, group); ok {
		t.Fatalf("pop after seeking to the end: %v", admKeys(p))
	}
	b.admPushKeys("p2", "d")
	if p, _ := b.admPopQueue(b.queue, group); !slices.Equal(admKeys(p), []string{"d"}) {
		t.Fatalf("pop after a new push: %v, want [d]", admKeys(p))
	}
}

func TestAdminSeekErrors(t *testing.T) {
	b := admSetup(t, testserver.Options{})
	b.admPushKeys("p", "a")
	path := "/api/v1/consumer-groups/g/queues/" + url.PathEscape(b.queue) + "/seek"
	const neither = `{"error":"Must specify either 'toEnd': true or 'timestamp'"}`
	for body, want := range map[string]string{
		`{}`:                    neither,
		`{"toEnd":false}`:       neither,
		`{"toEnd":"true"}`:      neither,
		`{"timestamp":null}`:    neither,
		`[true]`:                neither,
		`{"timestamp":"later"}`: `{"error":"Invalid timestamp"}`,
		`{"timestamp":17}`:      `{"error":"Invalid timestamp"}`,
		`{"toEnd":false,"timestamp":"2026-02-30T00:00:00Z"}`: `{"error":"Invalid timestamp"}`,
		``: `{"error":"Empty request body"}`,
	} {
		admError(b, "POST", path, body, http.StatusBadRequest, want)
	}
	admError(b, "POST", "/api/v1/consumer-groups/g/queues/"+url.PathEscape(b.queue+"-none")+"/seek", obj{"toEnd": true},
		http.StatusNotFound, `{"error":"Queue not found"}`)
}

// The one-partition form moves the cursor to that partition's end and clears its lease.
func TestAdminSeekPartition(t *testing.T) {
	b := admSetup(t, testserver.Options{})
	b.admConfigure(obj{})
	res := b.admPushKeys("p1", "a", "b")
	b.admPushKeys("p2", "c")
	held := b.admPop("p1", "", 1)
	seek := func(queue, partition string) string {
		return "/api/v1/consumer-groups/__QUEUE_MODE__/queues/" + url.PathEscape(queue) + "/partitions/" +
			url.PathEscape(partition) + "/seek"
	}

	out := admJSON[obj](b, http.StatusOK, "POST", seek(b.queue, "p1"), nil)
	if !admEqualJSON(out, `{"success":true,"consumerGroup":"__QUEUE_MODE__","queueName":"`+b.queue+`",
		"partitionName":"p1","updated":true,"cursorMovedTo":"`+res[1].MessageID+`"}`) {
		t.Fatalf("seek: %v", out)
	}
	// The held message now lies at or below the cursor: its ack is already committed, no effect.
	if r := b.ack(obj{"transactionId": "a", "partitionId": held.PartitionID, "leaseId": held.LeaseID}); !r.AlreadyCommitted {
		t.Fatalf("ack of a message the seek passed: %+v", r)
	}
	d := admGet(b, "/api/v1/consumer-groups/__QUEUE_MODE__")
	if p1 := admList(t, d[b.queue].(obj)["partitions"])[0]; p1["partition"] != "p1" || p1["leaseActive"] != false {
		t.Fatalf("queue mode on p1 after the seek: %v, want its lease cleared", p1)
	}
	if p, _ := b.admPopQueue(b.queue, ""); !slices.Equal(admKeys(p), []string{"c"}) {
		t.Fatalf("pop after the seek: %v, want only p2's c", admKeys(p))
	}
	if out := admJSON[obj](b, http.StatusOK, "POST", seek(b.queue, "Default"), `{"ignored":1}`); out["cursorMovedTo"] != nil {
		t.Fatalf("seek of an empty partition: %v", out)
	}
	for _, path := range []string{seek(b.queue, "p9"), seek(b.queue+"-none", "p1")} {
		admError(b, "POST", path, nil, http.StatusNotFound, `{"success":false,"error":"Partition not found"}`)
	}
}

// A seek back wakes the group's parked pops at once, on this instance through the local hub.
func TestAdminSeekWakesParkedPop(t *testing.T) {
	b := admSetup(t, testserver.Options{PollInitial: time.Minute, PollMax: time.Minute})
	group := "g-" + b.queue
	b.admPushKeys("p", "a")
	b.admDrain(group)

	type answer struct {
		code int
		body string
	}
	done := make(chan answer, 1)
	go func() {
		code, body := admSend("GET", b.srv.URL+"/api/v1/pop/queue/"+url.PathEscape(b.queue)+
			admQuery("consumerGroup", group, "wait", true, "timeout", 60000), nil)
		done <- answer{code, body}
	}()
	lpWaitIdle(t, b.srv, 1) // its first attempt found nothing
	b.admSeek(group, obj{"timestamp": "2000-01-01T00:00:00Z"})
	select {
	case got := <-done: // within 10 s, with the fallback poll a minute away: the seek woke it
		if p := decode[popped](t, []byte(got.body)); got.code != http.StatusOK || !slices.Equal(admKeys(p), []string{"a"}) {
			t.Fatalf("parked pop answered %d %s", got.code, got.body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the parked pop was not woken by the seek")
	}
}
