package store

// The streams SQL (sql/functions/100_streams.sql, docs/api/streams.md) at the store level:
// registration outcomes, state upserts, the at-most-once ack-bearing cycle, the shard lock and
// the cleanup cascades.

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queen-go/queen/internal/mq"
)

// register registers query name on the test's queue and returns its query_id.
func (b *testBundle) register(name, hash string) string {
	b.t.Helper()
	r, err := b.s.StreamRegister(b.ctx, "", mq.StreamRegistration{Name: name, SourceQueue: b.queue, ConfigHash: hash}, uuid.NewString())
	if err != nil {
		b.t.Fatal(err)
	}
	return r.QueryID
}

// cycle commits c with sink pushes of rows (ids minted here) and requires no error.
func (b *testBundle) cycle(c mq.StreamCycle, rows ...PushRow) mq.StreamCycleOutcome {
	b.t.Helper()
	if c.ConsumerGroup == "" {
		c.ConsumerGroup = mq.QueueMode
	}
	out, err := b.s.StreamCycle(b.ctx, "", c, rows, make([]string, len(rows)), nil)
	if err != nil {
		b.t.Fatalf("cycle: %v", err)
	}
	return out
}

// shardState reads a shard as key → value.
func (b *testBundle) shardState(qid, pid string) map[string]string {
	b.t.Helper()
	rows, err := b.s.StreamState(b.ctx, "", mq.StreamStateQuery{QueryID: qid, PartitionID: pid})
	if err != nil {
		b.t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range rows {
		out[r.Key] = string(r.Value)
	}
	return out
}

func upsert(k, v string) mq.StreamStateOp { return mq.StreamStateOp{Key: k, Value: json.RawMessage(v)} }
func del(k string) mq.StreamStateOp       { return mq.StreamStateOp{Key: k, Delete: true} }

func sameState(t *testing.T, what string, got map[string]string, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: state %v, want %v", what, got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s: state %v, want %v", what, got, want)
		}
	}
}

// partitionOf pushes key into partition and returns the partition's id.
func (b *testBundle) partitionOf(partition, key string) string {
	b.t.Helper()
	return b.pushKeys(partition, key)[0].PartitionID
}

// Registrations: fresh, same, mismatch, reset — and a reset drops the query's shards.
func TestStreamRegisterOutcomes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pid := b.partitionOf("p1", "a")
	reg := func(hash string, reset bool) mq.StreamRegistered {
		t.Helper()
		r, err := b.s.StreamRegister(b.ctx, "", mq.StreamRegistration{Name: "s", SourceQueue: b.queue, ConfigHash: hash, Reset: reset}, uuid.NewString())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	first := reg("h1", false)
	if first.Outcome != mq.StreamFresh {
		t.Fatalf("first registration: %+v", first)
	}
	b.cycle(mq.StreamCycle{QueryID: first.QueryID, PartitionID: pid, StateOps: []mq.StreamStateOp{upsert("k", "1")}})
	for _, c := range []struct {
		hash  string
		reset bool
		want  string
		rows  int
	}{{"h1", false, mq.StreamSame, 1}, {"h2", false, mq.StreamMismatch, 1}, {"h2", true, mq.StreamReset, 0}} {
		r := reg(c.hash, c.reset)
		if r.Outcome != c.want || r.QueryID != first.QueryID {
			t.Fatalf("register %s reset=%v: %+v, want %s of %s", c.hash, c.reset, r, c.want, first.QueryID)
		}
		if got := len(b.shardState(first.QueryID, pid)); got != c.rows {
			t.Fatalf("after %s: %d state rows, want %d", c.want, got, c.rows)
		}
	}
	if n := b.texts(`SELECT partition_id::text FROM stream_shards`); len(n) != 0 {
		t.Fatalf("shards left after a reset: %v", n)
	}
}

// State ops: in array order the last op on a key wins, every op counts, a delete of an absent
// key is harmless, an upsert replaces the value and stamps updated_at with the cycle's now.
func TestStreamCycleStateUpserts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pid := b.partitionOf("p1", "a")
	qid := b.register("s", "h")
	out := b.cycle(mq.StreamCycle{QueryID: qid, PartitionID: pid,
		StateOps: []mq.StreamStateOp{upsert("a", "1"), upsert("b", `{"x":2}`), upsert("a", "3"), del("c")}})
	if out.StateOpsApplied != 4 || out.SourceQueue != b.queue || out.Rollback != "" {
		t.Fatalf("cycle 1: %+v", out)
	}
	sameState(t, "cycle 1", b.shardState(qid, pid), map[string]string{"a": "3", "b": `{"x":2}`})
	b.clock.Advance(time.Minute)
	b.cycle(mq.StreamCycle{QueryID: qid, PartitionID: pid,
		StateOps: []mq.StreamStateOp{del("b"), upsert("a", "4"), upsert("d", "5"), del("d")}})
	sameState(t, "cycle 2", b.shardState(qid, pid), map[string]string{"a": "4"})
	rows, err := b.s.StreamState(b.ctx, "", mq.StreamStateQuery{QueryID: qid, PartitionID: pid})
	if err != nil {
		t.Fatal(err)
	}
	near(t, "updated_at", rows[0].UpdatedAt, b.clock.Now())
}

// An ack-bearing cycle applies at most once: repeating it (an SDK retry) rolls back with
// "Message already committed" and writes neither state nor sink messages a second time.
func TestStreamCycleRepeatedIsNotApplied(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.pushKeys("p1", "m1")
	qid := b.register("s", "h")
	p := b.mustPop(PopRequest{}, "m1")
	m := p.Messages[0]
	c := mq.StreamCycle{QueryID: qid, PartitionID: m.PartitionID, ConsumerGroup: mq.QueueMode,
		StateOps: []mq.StreamStateOp{upsert("n", "1")},
		Ack:      &mq.StreamAck{TransactionID: m.TransactionID, LeaseID: p.LeaseID}}
	first := b.cycle(c, row("sink", "p1", "out-1"))
	if first.Rollback != "" || first.Ack == nil || first.Ack.Count != 1 || len(first.PushResults) != 1 ||
		first.PushResults[0].Status != mq.StatusQueued {
		t.Fatalf("first cycle: %+v", first)
	}
	c.StateOps = []mq.StreamStateOp{upsert("n", "2")}
	again := b.cycle(c, row("sink", "p1", "out-2"))
	if again.Rollback != "Message already committed" || again.SourceQueue != b.queue || again.Ack != nil || len(again.PushResults) != 0 {
		t.Fatalf("repeated cycle: %+v", again)
	}
	sameState(t, "after the repeat", b.shardState(qid, m.PartitionID), map[string]string{"n": "1"})
	if got := b.texts(`SELECT m.transaction_id FROM messages m JOIN partitions p ON p.id = m.partition_id
		JOIN queues q ON q.id = p.queue_id WHERE q.name = 'sink'`); len(got) != 1 || got[0] != "out-1" {
		t.Fatalf("sink messages %v, want [out-1]", got)
	}
}

// The shard lock: a cycle waits for another transaction holding its shard, so cycles of one
// shard run one at a time; and concurrent cycles on one shard and one partition, acking and
// pushing to a shared sink, neither deadlock nor lose an update.
func TestStreamCyclesOfOneShardSerialize(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pid := b.partitionOf("p1", "a")
	qid := b.register("s", "h")
	b.cycle(mq.StreamCycle{QueryID: qid, PartitionID: pid}) // creates the shard row
	tx, err := b.s.pool.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(b.ctx, `SELECT 1 FROM stream_shards WHERE query_id = $1 FOR NO KEY UPDATE`, qid); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := b.s.StreamCycle(b.ctx, "", mq.StreamCycle{QueryID: qid, PartitionID: pid, ConsumerGroup: mq.QueueMode,
			StateOps: []mq.StreamStateOp{upsert("k", "1")}}, nil, nil, nil)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("cycle ran while its shard was held: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := tx.Rollback(b.ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("cycle did not run once the shard was free")
	}

	// Concurrent cycles: each writes a key of its own and the shared one, and pushes to one sink
	// partition (locked as a writer, before the source's KEY SHARE when its id is lower).
	const workers, rounds = 4, 5
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				key := uuid.NewString()
				_, err := b.s.StreamCycle(b.ctx, "", mq.StreamCycle{QueryID: qid, PartitionID: pid, ConsumerGroup: mq.QueueMode,
					StateOps: []mq.StreamStateOp{upsert(key, "1"), upsert("shared", "0")}},
					[]PushRow{row("sink2", "p1", key)}, []string{""}, nil)
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent cycle: %v", err)
	}
	if got := len(b.shardState(qid, pid)); got != 1+1+workers*rounds {
		t.Fatalf("%d state rows, want %d", got, 2+workers*rounds)
	}
}

// Cleanup cascades: deleting a query removes its shards and state rows and reports how many
// rows went, leaving other queries alone; deleting a partition removes the shards of that
// partition for every query.
func TestStreamCleanupCascades(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p1, p2 := b.partitionOf("p1", "a"), b.partitionOf("p2", "b")
	q1, q2 := b.register("s1", "h"), b.register("s2", "h")
	for _, qid := range []string{q1, q2} {
		for _, pid := range []string{p1, p2} {
			b.cycle(mq.StreamCycle{QueryID: qid, PartitionID: pid, StateOps: []mq.StreamStateOp{upsert("x", "1"), upsert("y", "2")}})
		}
	}
	existed, rows, err := b.s.StreamDelete(b.ctx, "", "s1")
	if err != nil || !existed || rows != 4 {
		t.Fatalf("delete s1: %v %d %v", existed, rows, err)
	}
	if existed, _, err := b.s.StreamDelete(b.ctx, "", "s1"); err != nil || existed {
		t.Fatalf("delete s1 again: %v %v", existed, err)
	}
	count := func(sql string, args ...any) string {
		t.Helper()
		return b.texts(sql, args...)[0]
	}
	if n := count(`SELECT count(*)::text FROM stream_shards WHERE query_id = $1`, q1); n != "0" {
		t.Fatalf("%s shards of the deleted query", n)
	}
	if n := count(`SELECT count(*)::text FROM stream_state WHERE query_id = $1`, q2); n != "4" {
		t.Fatalf("other query: %s state rows, want 4", n)
	}
	if _, err := b.s.StreamState(b.ctx, "", mq.StreamStateQuery{QueryID: q1, PartitionID: p1}); err != mq.ErrQueryNotFound {
		t.Fatalf("state of the deleted query: %v", err)
	}
	b.exec(`DELETE FROM partitions WHERE id = $1`, p1)
	if n := count(`SELECT count(*)::text FROM stream_state WHERE partition_id = $1`, p1); n != "0" {
		t.Fatalf("%s state rows of the deleted partition", n)
	}
	if n := count(`SELECT count(*)::text FROM stream_shards WHERE partition_id = $1`, p2); n != "1" {
		t.Fatalf("shards of the other partition: %s, want 1", n)
	}
	if _, err := b.s.StreamCycle(b.ctx, "", mq.StreamCycle{QueryID: q2, PartitionID: p1, ConsumerGroup: mq.QueueMode}, nil, nil, nil); err != mq.ErrPartitionNotFound {
		t.Fatalf("cycle on the deleted partition: %v", err)
	}
}
