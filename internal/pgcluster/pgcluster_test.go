package pgcluster

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestSynchronousStandbyTakesOver runs the whole failover this package exists for: rows
// committed on a primary with a synchronous standby are all on the standby once the primary
// crashed and the standby was promoted, and the promoted standby accepts writes.
func TestSynchronousStandbyTakesOver(t *testing.T) {
	ctx := t.Context()
	primary := MustPrimary(t, Options{})
	standby := MustStandby(t, primary, StandbyOptions{Name: "s1", Slot: "s1"})
	if err := primary.SetSynchronous(ctx, standby); err != nil {
		t.Fatal(err)
	}
	if err := primary.CreateDatabase(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	if err := primary.Exec(ctx, "app", "CREATE TABLE t (id int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	var sysID int64
	if err := primary.QueryRow(ctx, "SELECT system_identifier FROM pg_control_system()").Scan(&sysID); err != nil {
		t.Fatal(err)
	}

	// Writers commit until the crash cuts them off; every commit that returned is counted.
	var mu sync.Mutex
	committed := map[int]bool{}
	var wg sync.WaitGroup
	writing := make(chan struct{})
	for w := range 4 {
		wg.Go(func() {
			conn, err := pgx.Connect(ctx, primary.DSN("app"))
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close(context.Background())
			for i := w; ; i += 4 {
				if _, err := conn.Exec(ctx, "INSERT INTO t VALUES ($1)", i); err != nil {
					return // the crash
				}
				mu.Lock()
				committed[i] = true
				n := len(committed)
				mu.Unlock()
				if n == 200 {
					close(writing)
				}
			}
		})
	}
	<-writing
	if err := primary.Crash(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err := standby.Promote(ctx); err != nil {
		t.Fatal(err)
	}

	pool, err := pgxpool.New(ctx, standby.DSN("app"))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	have := map[int]bool{}
	rows, _ := pool.Query(ctx, "SELECT id FROM t")
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		have[id] = true
	}
	lost := 0
	for id := range committed {
		if !have[id] {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d committed rows are missing on the promoted standby", lost, len(committed))
	}
	if _, err := pool.Exec(ctx, "INSERT INTO t VALUES (-1)"); err != nil {
		t.Fatalf("the promoted standby refuses a write: %v", err)
	}
	var promotedID int64
	if err := standby.QueryRow(ctx, "SELECT system_identifier FROM pg_control_system()").Scan(&promotedID); err != nil {
		t.Fatal(err)
	}
	if promotedID != sysID {
		t.Fatalf("system_identifier %d after promotion, %d before", promotedID, sysID)
	}
	t.Logf("%d commits before the crash, all on the promoted standby", len(committed))
}

// TestPgBouncerBoundsServerConnections checks the pooler fixture: many clients through a
// transaction-mode PgBouncer share at most PoolSize server connections, which SHOW POOLS
// reports.
func TestPgBouncerBoundsServerConnections(t *testing.T) {
	ctx := t.Context()
	primary := MustPrimary(t, Options{})
	bouncer := MustPgBouncer(t, PgBouncerOptions{Port: primary.Port, DBName: "postgres", PoolSize: 2})

	cfg, err := pgx.ParseConfig(bouncer.DSN())
	if err != nil {
		t.Fatal(err)
	}
	// PgBouncer 1.18 keeps no prepared statements across transactions.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			conn, err := pgx.ConnectConfig(ctx, cfg)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close(context.Background())
			for range 20 {
				if _, err := conn.Exec(ctx, "SELECT pg_sleep(0.001)"); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	n, err := bouncer.ServerConns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n < 1 || n > bouncer.PoolSize {
		t.Fatalf("pgbouncer holds %d server connections; want 1..%d", n, bouncer.PoolSize)
	}
	servers, err := bouncer.Show(ctx, "SERVERS")
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) != n {
		t.Fatalf("SHOW SERVERS lists %d connections, SHOW POOLS counts %d", len(servers), n)
	}
	var backends int
	if err := primary.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()").Scan(&backends); err != nil {
		t.Fatal(err)
	}
	if backends > bouncer.PoolSize {
		t.Fatalf("the server sees %d client backends; the pool allows %d", backends, bouncer.PoolSize)
	}
}
