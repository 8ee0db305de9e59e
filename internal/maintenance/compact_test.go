package maintenance_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/maintenance"
	"github.com/queen-go/queen/internal/pgtest"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/testkit"
)

// While a snapshot is held, a hot set whose dead versions pile up is rewritten by the
// instance's check (the horizon read, the set's versions, the rewrite), and its rows survive.
func TestCompactHotSetsRewritesUnderAHeldSnapshot(t *testing.T) {
	b := setup(t, maintenance.Config{})
	ctx := context.Background()
	res, err := b.stores[0].Push(ctx, []store.PushRow{{Queue: "q", Partition: "p", Key: "k", ID: uuid.NewString(), Payload: []byte(`{}`)}})
	if err != nil || len(res) != 1 {
		t.Fatalf("push: %v %v", res, err)
	}
	holder, err := pgx.Connect(ctx, testDSN)
	pgtest.CheckConn(t, err)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	pgtest.HoldSnapshot(t, holder, "")

	db, err := pgx.Connect(ctx, testDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	if _, err := db.Exec(ctx, "SET search_path TO "+pgx.Identifier{b.schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	// Dead versions of the partition's head that the held snapshot keeps, as pushes leave them.
	if _, err := db.Exec(ctx, `DO $$ BEGIN FOR i IN 1..6000 LOOP
		UPDATE partition_heads SET last_activity_at = last_activity_at + interval '1 microsecond'; END LOOP; END $$`); err != nil {
		t.Fatal(err)
	}
	var before string
	if err := db.QueryRow(ctx, "SELECT h::text FROM partition_heads h").Scan(&before); err != nil {
		t.Fatal(err)
	}

	// The horizon counts as held after 5 s; the statistics arrive within a second or so.
	testkit.Eventually(t, time.Minute, 200*time.Millisecond, func() error {
		if err := b.runners[0].CompactHotSets(ctx); err != nil {
			return err
		}
		for _, c := range b.runners[0].CompactionCounts() {
			if c.Set == "partition_heads" && c.Compacted > 0 {
				return nil
			}
		}
		return fmt.Errorf("partition_heads not rewritten yet: %+v", b.runners[0].CompactionCounts())
	})
	var after string
	if err := db.QueryRow(ctx, "SELECT h::text FROM partition_heads h").Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("the head changed in the rewrite: %s, then %s", before, after)
	}
}
