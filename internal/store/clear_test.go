package store

// Queue clear (qg_clear_targets, qg_clear_batch; docs/api/admin-api.md §1.2).

import (
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// clearAll clears queue (one partition when given) in batches of limit, as the admin does.
func (b *testBundle) clearAll(queue, partition string, limit int) (removed, unconsumed int64, batches int) {
	b.t.Helper()
	targets, qf, pf, err := b.s.ClearTargets(b.ctx, queue, partition)
	if err != nil || !qf || !pf {
		b.t.Fatalf("targets: %v %v %v", qf, pf, err)
	}
	run := "00000000-0000-7000-8000-0000000000c1"
	for _, t := range targets {
		for done := false; !done; {
			var r, u int64
			r, u, done, err = b.s.ClearBatch(b.ctx, run, t, limit, 0)
			if err != nil {
				b.t.Fatal(err)
			}
			removed, unconsumed, batches = removed+r, unconsumed+u, batches+1
		}
	}
	return removed, unconsumed, batches
}

func (b *testBundle) storedKeys(queue string) []string {
	b.t.Helper()
	var keys []string
	rows, err := b.s.pool.Query(b.ctx, `SELECT m.transaction_id FROM messages m JOIN partitions p ON p.id = m.partition_id
		JOIN queues q ON q.id = p.queue_id WHERE q.name = $1 ORDER BY p.name, m.position`, queue)
	if err != nil {
		b.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			b.t.Fatal(err)
		}
		keys = append(keys, k)
	}
	return keys
}

func TestClearQueue(t *testing.T) {
	b := setup(t)
	b.pushKeys("p1", "a", "b", "c", "d", "e")
	b.pushKeys("p2", "f")
	p := b.mustPop(PopRequest{Partition: "p1", Batch: 2}, "a", "b")
	b.mustAck(ackOf(p, 1, mq.AckCompleted)) // cursor 2
	held := b.mustPop(PopRequest{Partition: "p1", Batch: 2}, "c", "d")
	b.mustPop(PopRequest{Partition: "p1", Group: "g", Batch: 1}, "a")
	b.exec(`INSERT INTO traces (id, partition_id, transaction_id, consumer_group, event_type, worker_id, created_at)
		SELECT gen_random_uuid(), m.partition_id, m.transaction_id, 'x', 'info', 'w', now() FROM messages m`)
	d := b.mustPop(PopRequest{Partition: "p2", Batch: 1}, "f")
	b.mustAck(ackOf(d, 0, mq.AckDLQ))

	// Batches of 2: p1 (5 messages) takes three, p2 (1) one.
	removed, unconsumed, batches := b.clearAll(b.queue, "", 2)
	if removed != 6 || batches != 4 {
		t.Fatalf("removed %d in %d batches", removed, batches)
	}
	// Unconsumed: g registered on the queue with cursors at 0 on both partitions, so every
	// message was unconsumed for it.
	if unconsumed != 6 {
		t.Fatalf("unconsumed %d, want 6", unconsumed)
	}
	if keys := b.storedKeys(b.queue); len(keys) != 0 {
		t.Fatalf("left %v", keys)
	}
	var traces, tombstones, history int64
	b.s.pool.QueryRow(b.ctx, `SELECT (SELECT count(*) FROM traces), (SELECT count(*) FROM dedup_tombstones),
		(SELECT coalesce(sum(removed), 0) FROM retention_history WHERE kind = 'clear')`).Scan(&traces, &tombstones, &history)
	if traces != 0 || tombstones != 6 || history != 6 {
		t.Fatalf("traces %d tombstones %d history %d", traces, tombstones, history)
	}
	// Kept: consumers with their cursors (lease and batch dropped), DLQ entries, partitions.
	if s := b.state(b.queue, "p1", mq.QueueMode); !s.Found || s.Cursor != 2 || s.LeaseID != nil || s.BatchEnd != nil {
		t.Fatalf("queue mode on p1 %+v", s)
	}
	if len(b.dlq(b.queue)) != 1 || !slices.Equal(b.partitionNames(b.queue), []string{"p1", "p2"}) {
		t.Fatalf("dlq %v partitions %v", b.dlq(b.queue), b.partitionNames(b.queue))
	}
	// The holder's late ack: Message not found. A key stays taken within its window.
	rejected(t, b.ack(ackOf(held, 0, mq.AckCompleted))[0], "Message not found")
	if r := b.pushRows(row(b.queue, "p1", "a"))[0]; r.Status != mq.StatusDuplicate {
		t.Fatalf("push of a cleared key: %+v", r)
	}
	// New messages are delivered as usual.
	b.pushKeys("p1", "n1")
	b.mustPop(PopRequest{Partition: "p1"}, "n1")

	// Clearing again removes n1 only; once more, nothing.
	if removed, _, _ := b.clearAll(b.queue, "", 2); removed != 1 {
		t.Fatalf("second clear removed %d, want n1", removed)
	}
	if removed, _, _ := b.clearAll(b.queue, "", 2); removed != 0 {
		t.Fatalf("third clear removed %d", removed)
	}
}

func TestClearOnePartitionKeepsLaterMessages(t *testing.T) {
	b := setup(t)
	b.pushKeys("p1", "a", "b")
	b.pushKeys("p2", "c")
	targets, _, _, err := b.s.ClearTargets(b.ctx, b.queue, "p1")
	if err != nil || len(targets) != 1 || targets[0].Upto != 2 {
		t.Fatalf("targets %+v %v", targets, err)
	}
	b.pushKeys("p1", "later") // written after the call started
	b.clock.Advance(time.Second)
	if _, _, done, err := b.s.ClearBatch(b.ctx, "00000000-0000-7000-8000-0000000000c2", targets[0], 10, time.Minute); err != nil || !done {
		t.Fatalf("batch: %v %v", done, err)
	}
	if keys := b.storedKeys(b.queue); !slices.Equal(keys, []string{"later", "c"}) {
		t.Fatalf("left %v, want later (p1) and c (p2)", keys)
	}

	if _, qf, pf, _ := b.s.ClearTargets(b.ctx, b.queue, "nope"); !qf || pf {
		t.Fatalf("unknown partition: queue %v partition %v", qf, pf)
	}
	if _, qf, _, _ := b.s.ClearTargets(b.ctx, "nope", ""); qf {
		t.Fatal("unknown queue found")
	}
}
