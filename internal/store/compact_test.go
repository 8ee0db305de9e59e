package store

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/pgtest"
	"github.com/queen-go/queen/internal/testkit"
)

// hotRows is every row of the hot sets' tables, as text, table by table.
func (b *testBundle) hotRows() []string {
	b.t.Helper()
	var out []string
	for _, table := range []string{"partition_heads", "consumers", "requeued", "skip_marks", "partition_work"} {
		out = append(out, b.texts("SELECT '"+table+" ' || t::text FROM "+table+" t ORDER BY 1")...)
	}
	return out
}

// A rewrite of each hot set writes back every row as it was, and the queue goes on from there:
// the leased batch is still leased, the cursor where the ack left it, the work index the same.
func TestCompactHotSetRewritesEveryRowUnchanged(t *testing.T) {
	b := setup(t)
	b.pushKeys("p1", "a1", "a2", "a3")
	b.pushKeys("p2", "b1", "b2")
	b.pushKeys("p3", "c1")
	leased := b.mustPop(PopRequest{Partition: "p1"}, "a1")
	b.mustAck(ackOf(b.mustPop(PopRequest{Partition: "p2"}, "b1"), 0, mq.AckCompleted))
	b.mustPop(PopRequest{Partition: "p3", Group: "g", AutoAck: true}, "c1")
	// a requeued set and a skip mark, so the consumer set's referencing tables are not empty
	b.exec(`INSERT INTO requeued (partition_id, consumer_group, position, requeued_at)
		SELECT p.id, $1, 2, now() FROM partitions p WHERE p.name = 'p2'`, mq.QueueMode)
	b.exec(`INSERT INTO skip_marks (partition_id, consumer_group, position, created_at)
		SELECT p.id, $1, 3, now() FROM partitions p WHERE p.name = 'p1'`, mq.QueueMode)
	before := b.hotRows()
	if len(before) < 10 {
		t.Fatalf("hot rows before: %v", before)
	}

	total := int64(0)
	for _, set := range HotSets {
		c, err := b.s.CompactHotSet(b.ctx, set, time.Second, time.Minute)
		if err != nil || c.Outcome != CompactDone {
			t.Fatalf("compact %s: %+v, %v", set, c, err)
		}
		total += c.Rows
	}
	if after := b.hotRows(); !slices.Equal(after, before) {
		t.Fatalf("rows changed by the rewrite:\nbefore %v\nafter  %v", before, after)
	}
	if total != int64(len(before)) {
		t.Errorf("rewrites report %d rows, the tables hold %d", total, len(before))
	}

	b.exec(`DELETE FROM requeued`)
	b.exec(`DELETE FROM skip_marks`)
	b.noPop(PopRequest{Partition: "p1"}) // still leased
	b.mustAck(ackOf(leased, 0, mq.AckCompleted))
	got := b.drain(PopRequest{}) // queue mode: c1 went to group g only
	slices.Sort(got)
	if !slices.Equal(got, []string{"a2", "a3", "b2", "c1"}) {
		t.Fatalf("after the rewrites the queue delivers %v, want a2 a3 b2 c1", got)
	}
}

// A table another session holds is left alone: the rewrite gives up within its lock timeout
// and changes nothing, and HotSetStates names the session once it has held the lock for a
// second.
func TestCompactHotSetLeavesATableAnotherSessionHoldsAlone(t *testing.T) {
	b := setup(t)
	b.pushKeys("p1", "a1")
	conn, err := pgx.Connect(b.ctx, testDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	pid, _ := pgtest.HoldSnapshot(t, conn, "SELECT count(*) FROM "+pgx.Identifier{testSchema(t), "partition_work"}.Sanitize())

	if c, err := b.s.CompactHotSet(b.ctx, "partition_work", 20*time.Millisecond, time.Minute); err != nil || c.Outcome != CompactLocked {
		t.Fatalf("compact a held table: %+v, %v; want %s", c, err, CompactLocked)
	}
	if c, err := b.s.CompactHotSet(b.ctx, "partition_heads", 20*time.Millisecond, time.Minute); err != nil || c.Outcome != CompactDone {
		t.Fatalf("compact a free table: %+v, %v; want %s", c, err, CompactDone)
	}
	time.Sleep(1100 * time.Millisecond) // real elapsed time, not an ordering
	sets, err := b.s.HotSetStates(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range sets {
		names = append(names, h.Name)
		switch h.Name {
		case "partition_work":
			if h.BlockerPID != pid || h.Blocker == "" {
				t.Errorf("partition_work: blocker %d %q, want the holding session %d", h.BlockerPID, h.Blocker, pid)
			}
		default:
			if h.BlockerPID != 0 {
				t.Errorf("%s: blocker %d %q, want none", h.Name, h.BlockerPID, h.Blocker)
			}
		}
	}
	if !slices.Equal(names, HotSets) {
		t.Errorf("hot sets %v, want %v", names, HotSets)
	}
}

// Rewrites running all the while pushes, pops and acks go on lose, duplicate and reorder
// nothing: every message is delivered and acknowledged exactly once, in position order per
// partition.
func TestCompactHotSetsUnderLoadLoseNothing(t *testing.T) {
	b := setup(t)
	compactions := 0
	deliverOnceInOrderBeside(t, b, func(ctx context.Context) error {
		for _, set := range HotSets {
			c, err := b.s.CompactHotSet(ctx, set, 50*time.Millisecond, time.Minute)
			if err != nil {
				return err
			}
			if c.Outcome == CompactDone {
				compactions++
			}
		}
		return nil
	})
	if compactions < len(HotSets) {
		t.Errorf("only %d rewrites ran during the load", compactions)
	}
}

// deliverOnceInOrderBeside pushes 60 messages into each of 4 partitions of the test's queue, one
// push each, while 4 consumers pop and acknowledge them one at a time (queue mode) and beside
// runs again and again, until every message is acknowledged; it fails the test unless each
// partition's messages were delivered once each, in position order. When it returns without
// failing, beside's last run has returned.
func deliverOnceInOrderBeside(t *testing.T, b *testBundle, beside func(ctx context.Context) error) {
	t.Helper()
	const partitions, perPartition, consumers = 4, 60, 4
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Minute)
	defer cancel()
	errs := make(chan error, partitions+consumers+1)
	var producers, rest sync.WaitGroup
	for p := range partitions {
		producers.Go(func() {
			for i := range perPartition {
				r := row(b.queue, fmt.Sprintf("p%d", p), fmt.Sprintf("p%d-%03d", p, i))
				res, err := b.s.Push(ctx, []PushRow{r})
				if err == nil && res[0].Status != mq.StatusQueued {
					err = fmt.Errorf("push %s: %+v", r.Key, res[0])
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	done := make(chan struct{})
	var mu sync.Mutex
	got := map[string][]string{} // partition -> keys in delivery order
	total := 0
	stopped := func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	for range consumers {
		rest.Go(func() {
			for !stopped() {
				r := b.req(PopRequest{})
				msgs, err := b.s.Pop(ctx, r)
				if err != nil {
					errs <- err
					return
				}
				if len(msgs) == 0 {
					continue
				}
				m := msgs[0]
				// Recorded while the lease is held, before the ack: the next message of the
				// partition cannot be popped until this ack commits, so the record's order is the
				// delivery order. Recorded after the ack, a consumer descheduled between its ack
				// and the record let the next one record first (seen under load).
				mu.Lock()
				got[m.Partition] = append(got[m.Partition], m.TransactionID)
				mu.Unlock()
				res, err := b.s.Ack(ctx, []mq.AckItem{{PartitionID: m.PartitionID, TransactionID: m.TransactionID,
					Group: r.Group, Status: mq.AckCompleted, LeaseID: r.LeaseID}})
				if err == nil && !res[0].Success {
					err = fmt.Errorf("ack %s: %+v", m.TransactionID, res[0])
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				total++
				if total == partitions*perPartition {
					close(done)
				}
				mu.Unlock()
			}
		})
	}
	rest.Go(func() {
		for !stopped() {
			if err := beside(ctx); err != nil {
				errs <- err
				return
			}
		}
	})
	producers.Wait()
	finished := make(chan struct{})
	go func() { rest.Wait(); close(finished) }()
	select {
	case <-finished:
	case err := <-errs:
		cancel()
		t.Fatal(err)
	case <-ctx.Done():
		t.Fatalf("consumed %d of %d messages before the deadline", total, partitions*perPartition)
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	for p := range partitions {
		var want []string
		for i := range perPartition {
			want = append(want, fmt.Sprintf("p%d-%03d", p, i))
		}
		if k := fmt.Sprintf("p%d", p); !slices.Equal(got[k], want) {
			t.Errorf("partition %s delivered %v, want %v", k, got[k], want)
		}
	}
}

// schemaConn is a connection of its own on the test's schema.
func schemaConn(t *testing.T, ctx context.Context) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(testDSN)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = testSchema(t)
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// A rewrite's TRUNCATE is not MVCC-safe: a statement whose snapshot predates the rewrite's
// commit sees the table empty. qg_initial_cursor first locks partition_heads mid-statement
// (inside the function), after its caller's snapshot was taken; waiting there for a rewrite,
// it must still read the head (VOLATILE: a snapshot after the lock), or a group registering
// with mode "new" would get a NULL cursor.
func TestInitialCursorReadsTheHeadAcrossARewrite(t *testing.T) {
	b := setup(t)
	b.pushKeys("p1", "a1", "a2", "a3")
	rewriter, reader := schemaConn(t, b.ctx), schemaConn(t, b.ctx)
	// Through a generic plan, as the pop's PL/pgSQL runs it: a plan built before holds no lock
	// on partition_heads, which the function then takes mid-statement. (Planned afresh, the
	// planner's attempt to inline the function would take that lock before the snapshot.)
	for _, sql := range []string{"SET plan_cache_mode = force_generic_plan",
		"PREPARE initial(uuid) AS SELECT qg_initial_cursor($1, 'new', timestamptz '2999-01-01', true)"} {
		if _, err := reader.Exec(b.ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	var pid string
	if err := reader.QueryRow(b.ctx, "SELECT id::text FROM partitions WHERE name = 'p1'").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	var warm *int64
	if err := reader.QueryRow(b.ctx, "EXECUTE initial('"+pid+"')").Scan(&warm); err != nil || warm == nil || *warm != 3 {
		t.Fatalf("initial cursor: %v, %v; want 3", warm, err)
	}
	tx, err := rewriter.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	var rows int64
	if err := tx.QueryRow(b.ctx, "SELECT rows FROM qg_compact_hot('partition_heads', 1000)").Scan(&rows); err != nil || rows < 1 {
		t.Fatalf("rewrite: %d rows, %v", rows, err)
	}
	readerPID := reader.PgConn().PID()
	type result struct {
		cursor *int64
		err    error
	}
	got := make(chan result, 1)
	go func() {
		var r result
		r.err = reader.QueryRow(b.ctx, "EXECUTE initial('"+pid+"')").Scan(&r.cursor)
		got <- r
	}()
	testkit.Eventually(t, time.Minute, 5*time.Millisecond, func() error {
		var waiting bool
		if err := b.s.pool.QueryRow(b.ctx, "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $1",
			readerPID).Scan(&waiting); err != nil || !waiting {
			return fmt.Errorf("the reader is not waiting for the rewrite's lock yet (%v)", err)
		}
		return nil
	})
	if err := tx.Commit(b.ctx); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil || r.cursor == nil || *r.cursor != 3 {
		t.Fatalf("initial cursor across a rewrite: %v, %v; want 3 (the head)", r.cursor, r.err)
	}
}
