package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The stats job's plans are cached from its first runs, when its tables are nearly empty. A
// plan that matched rows against the batch's id array (= ANY) then filtered every row of a
// table against all ids of the batch: over 10,000 partitions a batch of 500 took seconds
// instead of milliseconds. Under generic plans, no statement of a batch may do that.
func TestStatsBatchJoinsItsIDsInsteadOfFilteringByThem(t *testing.T) {
	ctx := context.Background()
	s := migratedSchema(t, "stats_plans")
	for i := range 3 {
		if _, err := s.Push(ctx, []PushRow{{Queue: "plans", Partition: fmt.Sprint("p", i), Key: "k", ID: uuid.NewString(), Payload: []byte(`1`)}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Pop(ctx, PopRequest{Queue: "plans", Group: "g", Batch: 1, Partitions: 1, LeaseID: uuid.NewString(), SubscriptionMode: "all"}); err != nil {
		t.Fatal(err)
	}

	cfg, err := pgx.ParseConfig(testDSN)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = "stats_plans"
	var mu sync.Mutex
	var plans []string
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		plans = append(plans, n.Message)
		mu.Unlock()
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range []string{"LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0",
		"SET auto_explain.log_nested_statements = on", "SET auto_explain.log_level = notice",
		"SET plan_cache_mode = force_generic_plan", "SET jit = off"} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if _, err := conn.Exec(ctx, "SELECT qg_stats_partitions(gen_random_uuid(), NULL, 500, NULL)"); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	seen := 0
	for _, p := range plans {
		if strings.Contains(p, "DELETE FROM stats") || strings.Contains(p, "INSERT INTO stats") {
			seen++
		}
		if strings.Contains(p, "= ANY") && !strings.Contains(p, "Query Text: SELECT qg_stats_partitions") {
			t.Errorf("a stats batch statement matches by the id array:\n%s", p)
		}
	}
	if seen < 4 {
		t.Fatalf("saw %d plans of the batch's statements in %d notices; auto_explain did not report them", seen, len(plans))
	}
}

// The stats job rewrites every partition's and pair's row each run. It must update them in
// place as HOT updates (no index entry added, old versions pruned without vacuum): deleted and
// re-inserted, each run left a dead index entry per row for readers to walk.
func TestStatsRunsUpdateTheirRowsInPlace(t *testing.T) {
	ctx := context.Background()
	s := migratedSchema(t, "stats_hot")
	const parts = 20
	for i := range parts {
		if _, err := s.Push(ctx, []PushRow{{Queue: "hot", Partition: fmt.Sprint("p", i), Key: "k", ID: uuid.NewString(), Payload: []byte(`1`)}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range []string{"g1", "g2"} {
		if _, err := s.Pop(ctx, PopRequest{Queue: "hot", Group: g, Batch: 1, Partitions: 1, LeaseID: uuid.NewString(), SubscriptionMode: "all"}); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := pgx.ParseConfig(testDSN)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = "stats_hot"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// The migrations leave half of each page free for these updates (0016). A run's update
	// finds room there only once the versions the run before it left are pruned, which any
	// snapshot held elsewhere on a shared server delays (CI saw 24 of 40 HOT, and a snapshot held
	// for 2 s gives the same). The test checks that the job's updates can be HOT (they change
	// no indexed column), so it gives them room of their own: fillfactor 10, with nothing to
	// prune first; the migrated setting is checked as it is.
	for _, table := range []string{"stats", "stats_consumers"} {
		var opts []string
		if err := conn.QueryRow(ctx, `SELECT coalesce(reloptions, '{}') FROM pg_class
			WHERE oid = ('stats_hot.' || $1)::regclass`, table).Scan(&opts); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(opts, "fillfactor=50") {
			t.Errorf("%s options %v, want fillfactor=50 (migration 0016)", table, opts)
		}
		if _, err := conn.Exec(ctx, "ALTER TABLE "+table+" SET (fillfactor = 10)"); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if _, err := conn.Exec(ctx, "SELECT qg_stats_partitions(gen_random_uuid(), NULL, 500, NULL)"); err != nil {
			t.Fatal(err)
		}
	}
	// This session's table counters reach pg_stat_user_tables when it flushes them, which
	// pg_stat_force_next_flush makes happen at its next idle moment.
	if _, err := conn.Exec(ctx, "SELECT pg_stat_force_next_flush()"); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"stats": 2 * parts, "stats_consumers": 2 * parts * 2}
	for table, rows := range want {
		var upd, hot, del int64
		for i := 0; ; i++ {
			err := conn.QueryRow(ctx, `SELECT n_tup_upd, n_tup_hot_upd, n_tup_del FROM pg_stat_user_tables
				WHERE schemaname = 'stats_hot' AND relname = $1`, table).Scan(&upd, &hot, &del)
			if err != nil {
				t.Fatal(err)
			}
			if upd >= rows || i == 100 {
				break
			}
			if _, err := conn.Exec(ctx, "SELECT pg_sleep(0.1)"); err != nil {
				t.Fatal(err)
			}
		}
		// Two runs after the first rewrite every row: all updates, none deleted, and (with
		// room on the pages) nearly all HOT: an update that finds its page full is not.
		if upd < rows || hot*10 < upd*9 || del != 0 {
			t.Errorf("%s after three runs: %d updates (want at least %d), %d of them HOT (want 90 %%), %d deletes", table, upd, rows, hot, del)
		}
	}
}
