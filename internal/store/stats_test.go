package store

import (
	"context"
	"fmt"
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
