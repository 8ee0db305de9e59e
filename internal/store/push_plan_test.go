package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"
)

// A push finds its partitions, their heads and their queues by key probes whatever plan its
// session cached: a generic plan made while the tables were small hashed a scan of every
// partition into each push, and at 100,000 partitions a push of ten items took 10 ms
// (pushes fell to a tenth of their rate). Plans are cached over a few partitions, the table
// then grows, and the pushes that follow must not scan it.
func TestPushProbesPartitionsWhateverThePlanCached(t *testing.T) {
	t.Parallel()
	s := migratedSchema(t, "push_plan_probe")
	ctx := context.Background()
	push := func(round, parts, perPart int) {
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
	// Ten items over two partitions, on every pooled session, enough times for PL/pgSQL to keep
	// generic plans.
	for round := range 40 {
		push(round, 2, 5)
	}
	// The table grows to thousands of partitions (one push each, as a sweep creates them).
	for round := range 4 {
		push(100+round, 1000, 1)
	}
	tables := []string{"partitions", "partition_heads", "messages", "partition_work"}
	before := map[string]int64{}
	for _, table := range tables {
		before[table] = seqScans(t, s, table)
	}
	for round := range 20 {
		push(200+round, 2, 5)
	}
	for _, table := range tables {
		if n := seqScans(t, s, table) - before[table]; n > 0 {
			t.Errorf("20 pushes of ten items scanned %s %d times; want key probes only", table, n)
		}
	}
}
