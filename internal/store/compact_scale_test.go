package store

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queen-go/queen/internal/pgtest"
)

// TestCompactHotSetAtScale measures each hot set's rewrite at QUEEN_COMPACT_SCALE partitions
// (100000 for the figures in docs/operations.md, "A held snapshot horizon") × 10 consumer
// groups, every pair with a consumer row and a work row, under a held snapshot: how many
// rows it copies and how long it holds its tables' exclusive locks. It runs only when the
// variable is set: the full case writes 2.2 million rows, too much for every test run.
//
//	QUEEN_COMPACT_SCALE=100000 go test -run TestCompactHotSetAtScale -v -timeout 30m ./internal/store
func TestCompactHotSetAtScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("QUEEN_COMPACT_SCALE"))
	if n <= 0 {
		t.Skip("QUEEN_COMPACT_SCALE is not set")
	}
	ctx := context.Background()
	s := migratedSchema(t, "compact_scale")
	db, err := pgx.Connect(ctx, testDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	start := time.Now()
	for _, q := range []string{
		"SET search_path TO compact_scale",
		`INSERT INTO queues (id, name, namespace, task) VALUES (gen_random_uuid(), 'big', 'big', '')`,
		`INSERT INTO subscriptions (queue_id, consumer_group, mode) SELECT q.id, 'g' || g, 'all'
		 FROM queues q, generate_series(1, 10) g`,
		`INSERT INTO partitions (id, queue_id, name) SELECT gen_random_uuid(), q.id, 'p' || i
		 FROM queues q, generate_series(1, ` + strconv.Itoa(n) + `) i`,
		`INSERT INTO partition_heads (partition_id) SELECT id FROM partitions`,
		`INSERT INTO consumers (partition_id, consumer_group, queue_id) SELECT p.id, s.consumer_group, p.queue_id
		 FROM partitions p JOIN subscriptions s ON s.queue_id = p.queue_id`,
		`INSERT INTO partition_work (partition_id, consumer_group, queue_id, next_at)
		 SELECT partition_id, consumer_group, queue_id, now() FROM consumers`,
		"VACUUM ANALYZE partitions, partition_heads, consumers, partition_work",
	} {
		if _, err := db.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Logf("%d partitions × 10 groups written in %v", n, time.Since(start).Round(time.Millisecond))

	holder, err := pgx.Connect(ctx, testDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	pgtest.HoldSnapshot(t, holder, "")
	for _, set := range HotSets {
		for round := range 2 {
			begin := time.Now()
			c, err := s.CompactHotSet(ctx, set, time.Second, time.Hour)
			if err != nil {
				t.Fatalf("%s: %v", set, err)
			}
			t.Logf("%s round %d: %s, %d rows, lock held %v (function), %v (call and commit)",
				set, round+1, c.Outcome, c.Rows, c.Held.Round(time.Millisecond), time.Since(begin).Round(time.Millisecond))
		}
	}
}
