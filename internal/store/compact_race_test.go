package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/testkit"
)

// holdRewrite runs qg_compact_hot(set) in a transaction of its own that it leaves open, so the
// rewrite holds its tables' exclusive locks; commit ends it.
func (b *testBundle) holdRewrite(set string) (commit func()) {
	b.t.Helper()
	conn, err := pgx.Connect(b.ctx, testDSN)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { _ = conn.Close(context.Background()) })
	if _, err := conn.Exec(b.ctx, "SET search_path TO "+pgx.Identifier{testSchema(b.t)}.Sanitize()); err != nil {
		b.t.Fatal(err)
	}
	tx, err := conn.Begin(b.ctx)
	if err != nil {
		b.t.Fatal(err)
	}
	var rows int64
	if err := tx.QueryRow(b.ctx, "SELECT rows FROM qg_compact_hot($1, 1000)", set).Scan(&rows); err != nil || rows < 0 {
		b.t.Fatalf("rewrite %s: %d, %v", set, rows, err)
	}
	return func() {
		if err := tx.Commit(b.ctx); err != nil {
			b.t.Fatal(err)
		}
	}
}

// waitForLock returns once a session waits for a lock on table.
func (b *testBundle) waitForLock(table string) {
	b.t.Helper()
	testkit.Eventually(b.t, 30*time.Second, 5*time.Millisecond, func() error {
		var n int
		if err := b.s.pool.QueryRow(b.ctx, `SELECT count(*) FROM pg_locks
			WHERE NOT granted AND locktype = 'relation' AND relation = $1::regclass`, table).Scan(&n); err != nil || n > 0 {
			return err
		}
		return fmt.Errorf("nobody waits for %s yet", table)
	})
}

// A push to a capped queue that meets a rewrite of the consumer state counts the queue's
// unconsumed messages with the rewritten rows, not as if it had no consumer: TRUNCATE is not
// MVCC-safe, so a count taken with a snapshot from before the rewrite's commit would see the
// tables empty, count every stored message as unconsumed and refuse a push the queue has room
// for. One-item calls (qg_push_one) and several-item calls (qg_push_set) alike; and a push
// meeting a rewrite of the partition heads continues from the rewritten head.
func TestCappedPushDuringARewriteCountsTheRewrittenRows(t *testing.T) {
	for _, c := range []struct {
		name, set, table string
		keys             []string
	}{
		{"one item, consumer state", "consumers", "consumers", []string{"a5"}},
		{"two items, consumer state", "consumers", "consumers", []string{"a5", "a6"}},
		{"one item, partition heads", "partition_heads", "partition_heads", []string{"a5"}},
		{"two items, partition heads", "partition_heads", "partition_heads", []string{"a5", "a6"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := setup(t)
			b.configure(b.queue, func(o *mq.QueueOptions) { o.MaxSize = 4 })
			// The pushes run on one connection, which the first ones warm up as a broker's
			// are: its push functions' plans are cached, so the racing push plans nothing
			// (planning would lock the tables before the statement's snapshot is taken).
			pusher, err := Open(b.ctx, Options{DSN: testDSN, Schema: testSchema(t), MaxConns: 1,
				ConnectTimeout: 15 * time.Second, RequestTimeout: 2 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			defer pusher.Close()
			pusher.SetClock(b.clock.Now)
			push := func(keys ...string) ([]mq.PushResult, error) {
				var rows []PushRow
				for _, k := range keys {
					rows = append(rows, row(b.queue, "p", k))
				}
				return pusher.Push(b.ctx, rows)
			}
			for i := 1; i <= 4; i += len(c.keys) {
				keys := []string{fmt.Sprintf("a%d", i)}
				if len(c.keys) == 2 {
					keys = append(keys, fmt.Sprintf("a%d", i+1))
				}
				if res, err := push(keys...); err != nil || res[0].Status != mq.StatusQueued {
					t.Fatalf("push %v: %+v %v", keys, res, err)
				}
			}
			for _, k := range []string{"a1", "a2"} {
				b.mustAck(ackOf(b.mustPop(PopRequest{Partition: "p"}, k), 0, mq.AckCompleted))
			}
			// Two unconsumed: room for two more.
			commit := b.holdRewrite(c.set)
			type result struct {
				res []mq.PushResult
				err error
			}
			done := make(chan result, 1)
			go func() {
				res, err := push(c.keys...)
				done <- result{res, err}
			}()
			b.waitForLock(pgx.Identifier{testSchema(t), c.table}.Sanitize())
			commit()
			r := <-done
			if r.err != nil {
				t.Fatal(r.err)
			}
			for i, p := range r.res {
				if p.Status != mq.StatusQueued {
					t.Errorf("%s: %s (%+v); the queue holds 2 unconsumed of 4", c.keys[i], p.Status, p)
				}
			}
			got := b.drain(PopRequest{Partition: "p"})
			if want := append([]string{"a3", "a4"}, c.keys...); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("delivered %v, want %v", got, want)
			}
		})
	}
}

// A clear that meets a rewrite of the partition heads finds its partitions and their last
// positions as rewritten, not an empty queue (which would clear nothing and report success,
// or answer a named partition as unknown).
func TestClearTargetsDuringARewriteSeeTheRewrittenHeads(t *testing.T) {
	b := setup(t)
	b.pushKeys("p", "a1", "a2", "a3")
	commit := b.holdRewrite("partition_heads")
	type result struct {
		targets            []ClearTarget
		queue, partitionOK bool
		err                error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		r.targets, r.queue, r.partitionOK, r.err = b.s.ClearTargets(b.ctx, b.queue, "p")
		done <- r
	}()
	b.waitForLock(pgx.Identifier{testSchema(t), "partition_heads"}.Sanitize())
	commit()
	r := <-done
	if r.err != nil || !r.queue || !r.partitionOK || len(r.targets) != 1 || r.targets[0].Upto != 3 {
		t.Fatalf("clear targets %+v, queue %v, partition %v, %v; want the partition up to 3", r.targets, r.queue, r.partitionOK, r.err)
	}
}

// A rewrite that runs past its bound is cancelled by its statement_timeout and rolled back:
// the set's rows are as they were, its tables usable, and the outcome says so. The rewrite is
// made slow on purpose, by a trigger that makes every row written back take a second.
func TestCompactHotSetPastItsBoundChangesNothing(t *testing.T) {
	b := setup(t)
	b.pushKeys("p1", "a1")
	b.pushKeys("p2", "b1")
	b.exec(`CREATE FUNCTION slow_row() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_sleep(1); RETURN NEW; END $$`)
	b.exec(`CREATE TRIGGER slow_row BEFORE INSERT ON partition_heads FOR EACH ROW EXECUTE FUNCTION slow_row()`)
	t.Cleanup(func() { b.exec(`DROP TRIGGER slow_row ON partition_heads; DROP FUNCTION slow_row()`) })
	before := b.hotRows()

	c, err := b.s.CompactHotSet(b.ctx, "partition_heads", 20*time.Millisecond, 100*time.Millisecond)
	if err != nil || c.Outcome != CompactTooLong {
		t.Fatalf("a rewrite past its bound: %+v, %v; want %s", c, err, CompactTooLong)
	}
	if after := b.hotRows(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("the rolled-back rewrite changed rows:\nbefore %v\nafter  %v", before, after)
	}
	b.mustPop(PopRequest{Partition: "p1"}, "a1")
}
