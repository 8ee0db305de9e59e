package maintenance_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/embeddedpg"
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

// An idle logical replication slot holds a catalog_xmin only: the hot tables' dead versions
// are VACUUM's to remove, so no rewrite runs however many there are. A held snapshot (a
// backend's backend_xmin) pins them, and then the set is rewritten. The slot is a real one, on
// a cluster of the test's own started with wal_level=logical (the shared server may run with
// replica).
func TestCompactHotSetsIgnoresALogicalSlot(t *testing.T) {
	ctx := context.Background()
	dsn := logicalCluster(t)
	st, err := store.Open(ctx, store.Options{DSN: dsn, Schema: "slot", MaxConns: 4, ConnectTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	runner := maintenance.New(st, maintenance.Config{}, nil)
	if res, err := st.Push(ctx, []store.PushRow{{Queue: "q", Partition: "p", Key: "k", ID: uuid.NewString(), Payload: []byte(`{}`)}}); err != nil || len(res) != 1 {
		t.Fatalf("push: %v %v", res, err)
	}
	db, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	if _, err := db.Exec(ctx, "SELECT pg_create_logical_replication_slot('queen_cdc', 'test_decoding')"); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := db.Exec(ctx, "SELECT pg_drop_replication_slot('queen_cdc')"); err != nil {
			t.Errorf("drop the slot: %v", err)
		}
	}()
	if _, err := db.Exec(ctx, `SET search_path TO slot; DO $$ BEGIN FOR i IN 1..6000 LOOP
		UPDATE partition_heads SET last_activity_at = last_activity_at + interval '1 microsecond'; END LOOP; END $$`); err != nil {
		t.Fatal(err)
	}
	// The statistics arrive within a second or so; nothing prunes the versions meanwhile (the
	// checks below read statistics views only).
	testkit.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
		sets, err := st.HotSetStates(ctx)
		for _, h := range sets {
			if h.Name == "partition_heads" && h.Dead >= 6000 {
				return err
			}
		}
		return fmt.Errorf("dead versions not counted yet: %+v %v", sets, err)
	})
	h, err := st.XminHorizon(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Replication) != 1 || h.Replication[0].Type != "logical" || h.Replication[0].CatalogXminAge == nil ||
		h.Replication[0].XminAge != nil || h.Holder != nil {
		t.Fatalf("the horizon with an idle logical slot reads %+v %+v", h.Holder, h.Replication)
	}
	for range 3 {
		if err := runner.CompactHotSets(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if c := compacted(runner, "partition_heads"); c != 0 {
		t.Fatalf("rewritten %d times while only a logical slot's catalog_xmin was held", c)
	}

	holder, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	pgtest.HoldSnapshot(t, holder, "")
	// The snapshot counts as held after 5 s.
	testkit.Eventually(t, time.Minute, 200*time.Millisecond, func() error {
		if err := runner.CompactHotSets(ctx); err != nil {
			return err
		}
		if compacted(runner, "partition_heads") == 0 {
			return fmt.Errorf("partition_heads not rewritten under a held snapshot yet: %+v", runner.CompactionCounts())
		}
		return nil
	})
}

// compacted is how often set was rewritten by r.
func compacted(r *maintenance.Runner, set string) int64 {
	for _, c := range r.CompactionCounts() {
		if c.Set == set {
			return c.Compacted
		}
	}
	return 0
}

// logicalCluster starts a PostgreSQL cluster of the test's own with wal_level=logical (as the
// postgres user when the test runs as root) and returns its connection string; it is stopped
// when the test ends.
func logicalCluster(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	root, err := os.MkdirTemp("", "qglogical")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	// When the test runs as root the server runs as another user, who must pass through.
	if err := os.Chmod(root, 0o711); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "d")
	srv, err := embeddedpg.Start(ctx, embeddedpg.Options{DataDir: dir})
	if err != nil {
		t.Skipf("no PostgreSQL of the test's own: %v", err)
	}
	dsn := srv.DSN()
	c, err := pgx.Connect(ctx, dsn)
	if err == nil {
		_, err = c.Exec(ctx, "ALTER SYSTEM SET wal_level = logical")
		c.Close(ctx)
	}
	if stopErr := srv.Stop(); err != nil || stopErr != nil {
		t.Fatal(err, stopErr)
	}
	// wal_level takes effect at a restart.
	if srv, err = embeddedpg.Start(ctx, embeddedpg.Options{DataDir: dir}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Error(err)
		}
	})
	return dsn
}
