package httpapi_test

// The empty queue name (docs/api/README.md §2.9 "Empty names";
// docs/api/transaction.md §9 claim 54). A queue named "" could be created by a push, a
// configure or a transaction, and then no route could reach it: a path segment cannot be
// empty, so its detail, pop, clear and delete all answered 404 and the dashboard showed a
// blank row. Every body that names the queue written to or configured now refuses "" at the
// edge, before any database work.

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/queen-go/queen/internal/testserver"
)

// emptyNameBundle is a broker on a schema of its own: the check that no queue "" exists
// afterwards must not see another test's queues, and on a broker without the rule the
// cases would create one that no other test should see.
func emptyNameBundle(t *testing.T) *bundle {
	t.Helper()
	t.Parallel()
	schema := "queen_go_empty_name_" + strconv.FormatInt(queueSeq.Add(1), 36)
	if err := testserver.Migrate(t.Context(), testDSN, schema); err != nil {
		t.Fatal(err)
	}
	return &bundle{t: t, srv: testserver.Start(t, testDSN, testserver.Options{Schema: schema}), queue: testQueueName(t)}
}

// Each route that takes the name of the queue it writes to or configures answers "" with
// exactly its 400, writes nothing and creates no queue.
func TestEmptyQueueNameIsRefused(t *testing.T) {
	b := emptyNameBundle(t)
	q := b.queue
	const uuid = "00000000-0000-7000-8000-000000000000"
	cases := []struct {
		name, path string
		body       any
		want       string
	}{
		{"push", "/api/v1/push", obj{"items": []obj{{"queue": "", "payload": 1}}}, "queue is required"},
		{"push, after a valid item", "/api/v1/push",
			obj{"items": []obj{{"queue": q, "payload": 1}, {"queue": "", "payload": 2}}}, "queue is required"},
		{"push, queue checked before partition", "/api/v1/push",
			obj{"items": []obj{{"queue": "", "partition": 5, "payload": 1}}}, "queue is required"},
		{"configure", "/api/v1/configure", obj{"queue": ""}, "queue is required"},
		{"configure, queue checked before options", "/api/v1/configure", obj{"queue": "", "options": 1}, "queue is required"},
		{"transaction, flat push", "/api/v1/transaction",
			obj{"operations": []obj{{"type": "push", "queue": "", "payload": 1}}}, "queue is required"},
		{"transaction, nested push after a valid item", "/api/v1/transaction",
			obj{"operations": []obj{{"type": "push", "items": []obj{{"queue": q, "payload": 1}, {"queue": ""}}}}}, "queue is required"},
		// A missing queue defaults to "" (docs/api/transaction.md §1.1), which is no queue: it
		// used to be stored in the queue "", and is now refused like "".
		{"transaction, push without queue", "/api/v1/transaction",
			obj{"operations": []obj{{"type": "push", "payload": 1}}}, "queue is required"},
		{"transaction, push with queue null", "/api/v1/transaction",
			obj{"operations": []obj{{"type": "push", "items": []obj{{"queue": nil}}}}}, "Queue must be a string"},
		{"streams register, source_queue", "/streams/v1/queries",
			obj{"name": "n", "source_queue": "", "config_hash": "h"}, "source_queue is required"},
		{"streams cycle, push item", "/streams/v1/cycle",
			obj{"query_id": uuid, "partition_id": uuid, "push_items": []obj{{"queue": "", "payload": 1}}}, "queue is required"},
		{"streams cycle, push item without queue", "/streams/v1/cycle",
			obj{"query_id": uuid, "partition_id": uuid, "push_items": []obj{{"payload": 1}}}, "Queue must be a string"},
		{"dlq requeue, copy to queue", "/api/v1/dlq/requeue",
			obj{"ids": []string{uuid}, "mode": "copy", "toQueue": ""}, "toQueue is required for mode copy"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			valWantError(t, valSend(t, http.MethodPost, b.srv.URL+c.path, c.body), http.StatusBadRequest, c.want)
		})
	}
	code, raw := b.do(http.MethodGet, "/api/v1/resources/queues", nil)
	if code != http.StatusOK {
		t.Fatalf("queue list: %d %s", code, raw)
	}
	list := decode[struct {
		Queues []struct {
			Name string `json:"name"`
		} `json:"queues"`
	}](t, raw)
	if len(list.Queues) != 0 {
		t.Fatalf("refused requests created queues: %s", raw)
	}
}

// The partition name "" is not refused: on a write it means Default (docs/api/concepts.md §3),
// and that stays so on every route that took the queue rule.
func TestEmptyPartitionNameStillMeansDefault(t *testing.T) {
	b := emptyNameBundle(t)
	for _, c := range []struct {
		path string
		body obj
		code int
	}{
		{"/api/v1/push", obj{"items": []obj{{"queue": b.queue, "partition": "", "payload": 1}}}, http.StatusCreated},
		{"/api/v1/transaction", obj{"operations": []obj{{"type": "push", "queue": b.queue, "partition": "", "payload": 2}}}, http.StatusOK},
	} {
		if code, raw := b.do(http.MethodPost, c.path, c.body); code != c.code {
			t.Fatalf("%s: %d %s, want %d", c.path, code, raw, c.code)
		}
	}
	p, ok := b.pop("/api/v1/pop/queue/" + b.queue + "/partition/Default?batch=2")
	if !ok || len(p.Messages) != 2 || string(p.Messages[0].Data) != "1" || string(p.Messages[1].Data) != "2" {
		t.Fatalf("pop from Default: %v %+v, want the payloads 1 and 2", ok, p)
	}
}
