package store

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/google/uuid"
	"github.com/queen-go/queen/internal/mq"
)

// AckMany settles the single completed acks of a merged call in one statement (qg_ack_many);
// every other request, and every single ack that statement does not match, runs through the
// per-request path. The test builds the same states in two queues, applies one list of
// requests to the first as one merged call and to the second one request at a time, and
// requires the same answers, consumer rows and work index: the merged call must be exactly
// its requests run in turn.
func TestAckManyIsItsRequestsInTurn(t *testing.T) {
	b := setup(t)
	build := func(queue string) [][]mq.AckItem {
		pop := func(partition string, batch int) popped {
			t.Helper()
			p, ok := b.pop(PopRequest{Queue: queue, Partition: partition, Batch: batch})
			if !ok || len(p.Messages) != batch {
				t.Fatalf("pop %s/%s: %+v", queue, partition, p.Messages)
			}
			return p
		}
		var reqs [][]mq.AckItem
		one := func(a mq.AckItem) { reqs = append(reqs, []mq.AckItem{a}) }
		// p0-p3: a batch of one under its lease (p0, p1: nothing after it, so the pair leaves
		// the work index; p2, p3: a next message).
		for i := range 4 {
			part := fmt.Sprintf("p%d", i)
			keys := []string{part + "-a"}
			if i >= 2 {
				keys = append(keys, part+"-b")
			}
			b.pushKeysTo(queue, part, keys...)
			one(ackOf(pop(part, 1), 0, mq.AckCompleted))
		}
		// p4: another lease than the pair's.
		b.pushKeysTo(queue, "p4", "p4-a")
		a := ackOf(pop("p4", 1), 0, mq.AckCompleted)
		a.LeaseID = uuid.NewString()
		one(a)
		// p5: not the end of the leased batch.
		b.pushKeysTo(queue, "p5", "p5-a", "p5-b")
		one(ackOf(pop("p5", 2), 0, mq.AckCompleted))
		// p6: lease-less.
		b.pushKeysTo(queue, "p6", "p6-a", "p6-b")
		a = ackOf(pop("p6", 1), 0, mq.AckCompleted)
		a.LeaseID = ""
		one(a)
		// p7: already acked.
		b.pushKeysTo(queue, "p7", "p7-a", "p7-b")
		p7 := pop("p7", 1)
		b.mustAck(ackOf(p7, 0, mq.AckCompleted))
		one(ackOf(p7, 0, mq.AckCompleted))
		// p8: no such message.
		b.pushKeysTo(queue, "p8", "p8-a")
		a = ackOf(pop("p8", 1), 0, mq.AckCompleted)
		a.TransactionID = "nope"
		one(a)
		// p9: a failure, not a completion.
		b.pushKeysTo(queue, "p9", "p9-a")
		one(ackOf(pop("p9", 1), 0, mq.AckFailed))
		// p10: two requests of one pair, in order (first the batch's start, then its end),
		// and then a third, completing the end again.
		b.pushKeysTo(queue, "p10", "p10-a", "p10-b")
		p10 := pop("p10", 2)
		one(ackOf(p10, 0, mq.AckCompleted))
		one(ackOf(p10, 1, mq.AckCompleted))
		one(ackOf(p10, 1, mq.AckCompleted))
		// p11: a request of two items.
		b.pushKeysTo(queue, "p11", "p11-a", "p11-b")
		p11 := pop("p11", 2)
		reqs = append(reqs, []mq.AckItem{ackOf(p11, 0, mq.AckCompleted), ackOf(p11, 1, mq.AckCompleted)})
		return reqs
	}
	merged, alone := build("merged"), build("alone")

	got, err := b.s.AckMany(b.ctx, merged)
	if err != nil {
		t.Fatal(err)
	}
	for r, req := range alone {
		want := b.ack(req...)
		if len(got[r]) != len(want) {
			t.Fatalf("request %d: %d results, want %d", r, len(got[r]), len(want))
		}
		for i := range want {
			g, w := got[r][i], want[i]
			if str(g.Queue) != "merged" || str(w.Queue) != "alone" {
				t.Fatalf("request %d item %d: queues %s and %s", r, i, str(g.Queue), str(w.Queue))
			}
			g.Queue, w.Queue = nil, nil
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("request %d item %d (%+v): merged %+v (%s), alone %+v (%s)", r, i, req[i],
					g, str(g.Error), w, str(w.Error))
			}
		}
	}
	if !got[0][0].Success || got[4][0].Success || got[12][0].AlreadyCommitted != true {
		t.Fatalf("the scenario is not what it meant to be: %+v %+v %+v", got[0], got[4], got[12])
	}
	for i := range 12 {
		part := fmt.Sprintf("p%d", i)
		m, a := b.state("merged", part, mq.QueueMode), b.state("alone", part, mq.QueueMode)
		if (m.LeaseID == nil) != (a.LeaseID == nil) {
			t.Fatalf("%s: lease %v merged, %v alone", part, m.LeaseID, a.LeaseID)
		}
		m.LeaseID, a.LeaseID = nil, nil
		if !reflect.DeepEqual(m, a) {
			t.Fatalf("%s: consumer row merged %+v, alone %+v", part, m, a)
		}
		listed := func(queue string) []string {
			return b.texts(`SELECT w.next_at::text FROM partition_work w JOIN partitions p ON p.id = w.partition_id
				JOIN queues q ON q.id = p.queue_id WHERE q.name = $1 AND p.name = $2`, queue, part)
		}
		if lm, la := listed("merged"), listed("alone"); !reflect.DeepEqual(lm, la) {
			t.Fatalf("%s: work index merged %v, alone %v", part, lm, la)
		}
	}
	if lm := b.texts(`SELECT p.name FROM partition_work w JOIN partitions p ON p.id = w.partition_id
		JOIN queues q ON q.id = p.queue_id WHERE q.name = 'merged' ORDER BY 1`); fmt.Sprint(lm) == "[]" {
		t.Fatal("nothing left listed: the scenario lost its pairs with a next message")
	}
}
