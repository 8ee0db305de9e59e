package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A push finds its partitions, their heads and their queues by key probes whatever plan its
// session cached: a generic plan made while the tables were small hashed a scan of every
// partition into each push, and at 100,000 partitions a push of ten items took 10 ms
// (pushes fell to a tenth of their rate). Plans are cached over a few partitions, the table
// then grows, and the pushes that follow must not scan it.
func TestPushProbesPartitionsWhateverThePlanCached(t *testing.T) {
	t.Parallel()
	small := migratedSchema(t, "push_plan_probe")
	ctx := context.Background()
	// Calls of 100 items or more on a session of their own: qg_push_set_generic plans the
	// statements of qg_push_set with sequential scans off, and a plan it made would be the one
	// the other calls of its session reuse.
	large, err := Open(ctx, Options{DSN: testDSN, Schema: "push_plan_probe", MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(large.Close)
	push := func(s *Store, round, parts, perPart int) {
		t.Helper()
		var rows []PushRow
		for i := range parts * perPart {
			rows = append(rows, PushRow{Queue: "grow", Partition: fmt.Sprint("p", i%parts), Key: fmt.Sprint("r", round, "-", i),
				ID: uuid.NewString(), Payload: []byte(`{}`)})
		}
		if _, err := s.Push(ctx, rows); err != nil {
			t.Fatal(err)
		}
	}
	// The partitions exist and are analyzed while few, as autovacuum does on a server (the
	// test server's is off): plans are then made for a table of a page.
	push(small, 0, 2, 1)
	push(large, 0, 100, 1)
	if err := small.withConn(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		_, err := c.Exec(ctx, "ANALYZE partitions, partition_heads, queues")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// Ten items over two partitions on every pooled session, and a hundred over a hundred
	// (the calls qg_push_items leaves to qg_push_set's plan choice), enough times for PL/pgSQL
	// to keep generic plans.
	for round := range 40 {
		push(small, round, 2, 5)
		push(large, 1000+round, 100, 1)
	}
	// The table grows to thousands of partitions (one push each, as a sweep creates them).
	for round := range 4 {
		push(small, 100+round, 1000, 1)
	}
	tables := []string{"partitions", "partition_heads", "messages", "partition_work"}
	before := map[string]int64{}
	flushAll(t, large) // its statistics, which seqScans reads through small
	for _, table := range tables {
		before[table] = seqScans(t, small, table)
	}
	for round := range 20 {
		push(small, 200+round, 2, 5)
	}
	for _, table := range tables {
		if n := seqScans(t, small, table) - before[table]; n > 0 {
			t.Errorf("20 pushes of ten items scanned %s %d times; want key probes only", table, n)
		}
		before[table] = seqScans(t, small, table)
	}
	// Calls of 100 items or more: their plans are PostgreSQL's choice, and after five calls it
	// kept the generic plan of the partitions' lock (its array estimated at ten elements), a
	// scan of the table that compared every row with every element of the call's list: at
	// 100,000 partitions a call of 1,000 items took seconds (the sweep's pushes at a tenth of
	// their rate, whenever no ANALYZE had made the sessions plan again).
	for round := range 20 {
		push(large, 300+round, 100, 1)
	}
	flushAll(t, large)
	for _, table := range tables {
		if n := seqScans(t, small, table) - before[table]; n > 0 {
			t.Errorf("20 pushes of 100 items scanned %s %d times; want key probes only", table, n)
		}
	}
}
