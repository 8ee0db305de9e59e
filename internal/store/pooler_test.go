package store

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queen-go/queen/internal/pgcluster"
)

// poolerFor starts a PgBouncer in transaction mode in front of the test database, with poolSize
// server connections.
func poolerFor(t *testing.T, poolSize int) *pgcluster.PgBouncer {
	t.Helper()
	u, err := url.Parse(testDSN)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Skipf("the test database is not on a TCP port: %s", u.Host) // the embedded fallback's socket
	}
	return pgcluster.MustPgBouncer(t, pgcluster.PgBouncerOptions{Host: u.Hostname(), Port: port,
		DBName: strings.TrimPrefix(u.Path, "/"), PoolSize: poolSize})
}

// openPooled opens a store on schema through b, migrated (through the pooler too), with
// sessionDSN as its DATABASE_SESSION_URL.
func openPooled(t *testing.T, b *pgcluster.PgBouncer, schema, sessionDSN string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{DSN: b.DSN(), Schema: schema, MaxConns: 4, Pooler: true,
		SessionDSN: sessionDSN, ConnectTimeout: 15 * time.Second, RequestTimeout: time.Minute,
		StatementTimeout: 20 * time.Second, LockTimeout: 7 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate through the pooler: %v", err)
	}
	return s
}

// Behind a transaction pooler every unit of work runs with the broker's settings, although the
// server session it lands on was left by another client with others (one server connection,
// so both clients share it), and although PgBouncer refuses them at start-up.
func TestPoolerUnitsCarryTheSessionSettings(t *testing.T) {
	b := poolerFor(t, 1)
	dropSchema(t, "pooler_settings")
	s := openPooled(t, b, "pooler_settings", "")
	ctx := context.Background()
	other, err := pgx.Connect(ctx, b.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	if _, err := other.Exec(ctx, "SET search_path TO public; SET jit = on; SET lock_timeout = 1"); err != nil {
		t.Fatal(err)
	}
	var path, jit, stmt, lock string
	err = s.withConn(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		return c.QueryRow(ctx, "SELECT current_setting('search_path'), current_setting('jit'), "+
			"current_setting('statement_timeout'), current_setting('lock_timeout')").Scan(&path, &jit, &stmt, &lock)
	})
	if err != nil {
		t.Fatal(err)
	}
	if path != `"pooler_settings"` || jit != "off" || stmt != "20s" || lock != "7s" {
		t.Fatalf("a unit ran with search_path %q, jit %s, statement_timeout %s, lock_timeout %s; want pooler_settings, off, 20s, 7s",
			path, jit, stmt, lock)
	}
	// Nothing of the unit outlives it on the shared server session.
	if err := other.QueryRow(ctx, "SELECT current_setting('search_path')").Scan(&path); err != nil || path != "public" {
		t.Fatalf("the other client's session now has search_path %q (%v): the unit's settings leaked", path, err)
	}
}

// Statements are never prepared by name: with more clients than server sessions, each
// statement runs on whichever session is free, where a named statement of another would be
// missing ("prepared statement … does not exist").
func TestPoolerStatementsRunOnAnyServerSession(t *testing.T) {
	b := poolerFor(t, 2)
	dropSchema(t, "pooler_statements")
	stores := []*Store{openPooled(t, b, "pooler_statements", ""), openPooled(t, b, "pooler_statements", "")}
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := stores[i%2]
			for j := range 20 {
				q := "q" + strconv.Itoa(i)
				if err := s.EnsurePartitions(ctx, []string{q}, []string{"p" + strconv.Itoa(j%3)}); err != nil {
					errs <- err
					return
				}
				if _, err := s.HotSetStates(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	n, err := b.ServerConns(ctx)
	if err != nil || n > 2 {
		t.Fatalf("the pooler holds %d server connections (%v); its pool is 2", n, err)
	}
}

// Without DATABASE_SESSION_URL a job leads by its lease row: one instance at a time, the
// next once the first is done, and a holder whose lease another instance took stops at its
// next statement.
func TestPoolerJobsLeadByLeaseRows(t *testing.T) {
	b := poolerFor(t, 3)
	dropSchema(t, "pooler_lease")
	a, other := openPooled(t, b, "pooler_lease", ""), openPooled(t, b, "pooler_lease", "")
	ctx := context.Background()
	inside, done := make(chan struct{}), make(chan struct{})
	type outcome struct {
		led bool
		err error
	}
	first := make(chan outcome, 1)
	go func() {
		led, err := a.TryLead(ctx, "stats", func(l *Leader) error {
			if _, err := l.Claim(ctx, "stats", 0, 0, "a"); err != nil {
				return err
			}
			close(inside)
			<-done
			_, err := l.Claim(ctx, "stats", 0, 0, "a")
			return err
		})
		first <- outcome{led, err}
	}()
	<-inside
	led, err := other.TryLead(ctx, "stats", func(*Leader) error { t.Error("led while another instance leads"); return nil })
	if err != nil || led {
		t.Fatalf("second instance: led %v, %v; want false", led, err)
	}
	// The first holder's lease passes to another instance (as after an expiry): it must stop.
	if _, err := a.pool.Exec(ctx, "UPDATE pooler_lease.job_leases SET holder = 'someone else' WHERE job = 'stats'"); err != nil {
		t.Fatal(err)
	}
	close(done)
	if r := <-first; !r.led || !errors.Is(r.err, errLostLease) {
		t.Fatalf("first instance: led %v, %v; want true, %v", r.led, r.err, errLostLease)
	}
	if _, err := a.pool.Exec(ctx, "UPDATE pooler_lease.job_leases SET expires_at = now() - interval '1 s' WHERE job = 'stats'"); err != nil {
		t.Fatal(err)
	}
	led, err = other.TryLead(ctx, "stats", func(l *Leader) error { _, err := l.Claim(ctx, "stats", 0, 0, "b"); return err })
	if err != nil || !led {
		t.Fatalf("after the lease expired: led %v, %v; want true", led, err)
	}
	var left int
	if err := a.pool.QueryRow(ctx, "SELECT count(*) FROM pooler_lease.job_leases").Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d lease rows left after the job ended (%v); a finished job gives its row back", left, err)
	}
}

// With DATABASE_SESSION_URL a job's advisory lock lives on a direct session (the pooler would
// leave it on a server session other clients use), and no lease row is written.
func TestPoolerJobsLockOnTheSessionURL(t *testing.T) {
	b := poolerFor(t, 3)
	dropSchema(t, "pooler_session")
	a, other := openPooled(t, b, "pooler_session", testDSN), openPooled(t, b, "pooler_session", testDSN)
	ctx := context.Background()
	led, err := a.TryLead(ctx, "retention", func(*Leader) error {
		led, err := other.TryLead(ctx, "retention", func(*Leader) error { return nil })
		if err != nil || led {
			t.Errorf("second instance: led %v, %v; want false", led, err)
		}
		var direct bool
		err = a.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks k JOIN pg_stat_activity s USING (pid)
			WHERE k.locktype = 'advisory' AND k.granted AND s.application_name = 'queen-go')`).Scan(&direct)
		if err != nil || !direct {
			t.Errorf("no advisory lock held by a broker session (%v)", err)
		}
		return nil
	})
	if err != nil || !led {
		t.Fatalf("led %v, %v", led, err)
	}
	var rows int
	if err := a.pool.QueryRow(ctx, "SELECT count(*) FROM pooler_session.job_leases").Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("%d lease rows (%v); with a session URL jobs take advisory locks", rows, err)
	}
}

// Transactions begin in one place, inTx: behind a pooler a unit is already a transaction, and
// a BEGIN sent on its connection would be committed by the inner COMMIT, leaving the rest of
// the unit outside any transaction and without its settings.
func TestTransactionsBeginOnlyInInTx(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "pooler.go" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "BeginFunc(") || strings.Contains(line, ".Begin(") || strings.Contains(line, ".BeginTx(") {
				t.Errorf("%s:%d begins a transaction; use inTx: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// A job whose connection broke mid-run (a statement past its deadline closes it) still gives
// its lease row back, on another connection: the other instances lead at their next tick, not
// only once the row expires.
func TestPoolerLeaseOfABrokenConnectionIsGivenBack(t *testing.T) {
	b := poolerFor(t, 3)
	dropSchema(t, "pooler_lease_broken")
	a, other := openPooled(t, b, "pooler_lease_broken", ""), openPooled(t, b, "pooler_lease_broken", "")
	ctx := context.Background()
	led, err := a.TryLead(ctx, "stats", func(l *Leader) error {
		closeConn(l.c) // as a statement past its deadline leaves it
		return nil
	})
	if err != nil || !led {
		t.Fatalf("led %v, %v", led, err)
	}
	led, err = other.TryLead(ctx, "stats", func(*Leader) error { return nil })
	if err != nil || !led {
		t.Fatalf("the other instance after a broken holder: led %v, %v; want true at once", led, err)
	}
}
