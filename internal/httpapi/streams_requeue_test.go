package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/queen-go/queen/internal/testserver"
)

// The cycle's ack on a requeue batch (docs/api/streams.md §4.3; docs/api/concepts.md §8.2, §9.3):
// rule (b) does not apply to the batch's messages; acking one takes it out of the requeued set,
// the cursor stays; a repeated cycle finds it out of the set and is rejected.
func TestS56_CycleAcksARequeueBatch(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 3)
	ack := s.ackOf(2)
	ack["status"], ack["error"] = "dlq", "poison"
	if r := s.cycle(s.body(obj{"ack": ack})); !r.Success || !r.AckResult.DLQ {
		t.Fatalf("dead-letter: %+v", r)
	}
	out := admJSON[obj](b, http.StatusOK, "POST", "/api/v1/dlq/requeue", obj{"filter": obj{"queue": b.queue}})
	if admNum(t, out["requeued"]) != 1 {
		t.Fatalf("requeue: %v", out)
	}
	if n := countRows(t, "SELECT count(*)::int FROM requeued WHERE partition_id = $1 AND consumer_group = $2",
		s.pop.PartitionID, s.group); n != 1 {
		t.Fatalf("requeued set: %d rows", n)
	}
	cur0, _ := s.cursorOf()

	p, ok := s.popGroup()
	if !ok || len(p.Messages) != 1 || p.Messages[0].TransactionID != "m2" {
		t.Fatalf("requeue batch: %v %+v", ok, p)
	}
	s.pop = p
	body := s.body(obj{"ack": s.ackOf(1), "state_ops": []obj{{"type": "upsert", "key": "k", "value": 1}}})
	r := s.cycle(body)
	if !r.Success || r.AckResult == nil || r.AckResult.DLQ || !r.AckResult.LeaseReleased || r.AckResult.Count != 0 ||
		r.StateOpsApplied != 1 {
		t.Fatalf("cycle on the requeue batch: %+v", r)
	}
	if n := countRows(t, "SELECT count(*)::int FROM requeued WHERE partition_id = $1 AND consumer_group = $2",
		s.pop.PartitionID, s.group); n != 0 {
		t.Fatalf("requeued set after the ack: %d rows", n)
	}
	if cur, lease := s.cursorOf(); cur != cur0 || lease != nil {
		t.Fatalf("cursor %d (was %d), lease %v", cur, cur0, lease)
	}
	// The same cycle again: m2 is out of the set and at or below the cursor.
	s.rolledBack(body, "Message already committed")
	// The group goes on after its cursor.
	p, ok = s.popGroup()
	if !ok || len(p.Messages) != 1 || p.Messages[0].TransactionID != "m3" {
		t.Fatalf("after the requeue batch: %v %+v", ok, p)
	}
}

// A partial ack of a requeue batch with release_lease:true (docs/api/streams.md §4.3): the rest
// of the batch stays in the requeued set, out of the released batch, and is deliverable at
// once; a dead-letter ack of a requeued message writes a new DLQ entry and empties the set.
func TestS57_PartialAckOfARequeueBatchReleases(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 3)
	for k := 1; k <= 2; k++ {
		ack := s.ackOf(k)
		ack["status"] = "dlq"
		if r := s.cycle(s.body(obj{"ack": ack, "release_lease": false})); !r.Success || !r.AckResult.DLQ {
			t.Fatalf("dead-letter m%d: %+v", k, r)
		}
	}
	if r := s.cycle(s.body(obj{"ack": s.ackOf(3)})); !r.Success || !r.AckResult.LeaseReleased {
		t.Fatalf("ack m3: %+v", r)
	}
	out := admJSON[obj](b, http.StatusOK, "POST", "/api/v1/dlq/requeue", obj{"filter": obj{"queue": b.queue}})
	if admNum(t, out["requeued"]) != 2 {
		t.Fatalf("requeue: %v", out)
	}
	p, ok := s.popGroup()
	if !ok || len(p.Messages) != 2 || p.Messages[0].TransactionID != "m1" || p.Messages[1].TransactionID != "m2" {
		t.Fatalf("requeue batch: %v %+v", ok, p)
	}
	s.pop = p
	r := s.cycle(s.body(obj{"ack": s.ackOf(1)}))
	if !r.Success || !r.AckResult.LeaseReleased || r.AckResult.DLQ {
		t.Fatalf("partial ack: %+v", r)
	}
	if n := countRows(t, "SELECT count(*)::int FROM requeued WHERE partition_id = $1 AND consumer_group = $2 AND NOT in_batch",
		s.pop.PartitionID, s.group); n != 1 {
		t.Fatalf("requeued set after the partial ack: %d rows out of a batch, want 1", n)
	}
	if n := countRows(t, "SELECT count(*)::int FROM requeued WHERE partition_id = $1 AND consumer_group = $2",
		s.pop.PartitionID, s.group); n != 1 {
		t.Fatalf("requeued set after the partial ack: %d rows, want 1", n)
	}
	p, ok = s.popGroup()
	if !ok || len(p.Messages) != 1 || p.Messages[0].TransactionID != "m2" {
		t.Fatalf("rest of the requeue batch: %v %+v", ok, p)
	}
	s.pop = p
	ack := s.ackOf(1)
	ack["status"], ack["error"] = "dlq", "again"
	r = s.cycle(s.body(obj{"ack": ack}))
	if !r.Success || !r.AckResult.DLQ || !r.AckResult.LeaseReleased {
		t.Fatalf("dead-letter of a requeued message: %+v", r)
	}
	if d := b.dlqMessages(); d["m2"] != "again" {
		t.Fatalf("dlq %v", d)
	}
	if n := countRows(t, "SELECT count(*)::int FROM requeued WHERE partition_id = $1 AND consumer_group = $2",
		s.pop.PartitionID, s.group); n != 0 {
		t.Fatalf("requeued set: %d rows", n)
	}
	if _, ok := s.popGroup(); ok {
		t.Fatal("a message came back")
	}
}
