package app_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/queen-go/queen/internal/app"
	"github.com/queen-go/queen/internal/embeddedpg"
)

// A connection storm is load, not an outage (docs/api/operations.md §9.7): a private PostgreSQL
// with max_connections 20, every slot held by other clients, the broker's own connections gone,
// and then a burst of 500 requests to the broker together with 500 connection attempts of other
// clients. Every request is answered as load (503 Server busy, /health 200) or served; no
// outage begins (no "database unavailable" line); once the slots are free the broker serves
// again.
func TestConnectionStormIsLoadNotAnOutage(t *testing.T) {
	srv, dataDir := startStoppableServer(t)
	srv = restartWithMaxConnections(t, srv, dataDir, 20)
	dsn := srv.DSN()
	schema := freshSchema("storm")
	cfg := frozenConfig(t, dsn, schema)
	// The probe's session must be refused within DB_CONNECTION_TIMEOUT while 500 other
	// attempts fork backends on two shared cores, beside the other packages' tests in CI: a
	// probe that gets no answer at all within it cannot be told from a frozen database, and 2 s
	// (the default) was once too short there (pops answered "Database unavailable"), and 5 s
	// once too, when the machine ran the same code five times slower than usual (/health and a
	// read answered "Database unavailable" after 11-17 s). 15 s, not the frozen tests' 300 ms.
	cfg.DBConnectionTimeout, cfg.DBRequestTimeout = 15*time.Second, time.Second
	cfg.DBPoolSize = 10
	log, logger := newLockedLog(t)
	a := startApp(t, cfg, app.WithLogger(logger))
	base := a.URL()
	pushEventually(t, base, "before the storm")
	if r := call(base, "POST", "/api/v1/configure", map[string]any{"queue": "storm"}); r.code != 200 {
		t.Fatalf("configure: %d %s", r.code, r.body)
	}

	release := holdEverySlot(t, dsn)
	defer release()

	const n = 500
	routes := []struct{ method, path string }{
		{"GET", "/api/v1/pop/queue/storm?wait=false"},
		{"GET", "/health"},
		{"GET", "/api/v1/resources/queues/storm"},
	}
	answers := make([]answer, n)
	refused := make([][]error, n)
	var wg, requests sync.WaitGroup
	done := make(chan struct{})
	for i := range n {
		// Another client trying to connect again and again (every 100 ms) until the requests are
		// answered: their bursts keep the server's listen queue full, so sessions are refused
		// there too (EAGAIN on its Unix socket), not only with SQLSTATE 53300.
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				c, err := pgconn.Connect(ctx, dsn)
				if err == nil {
					err = errors.New("a connection beyond max_connections was accepted")
					_ = c.Close(ctx)
				}
				cancel()
				refused[i] = append(refused[i], err)
				select { // a client's pause before it tries again
				case <-done:
				case <-time.After(100 * time.Millisecond):
				}
			}
		})
		requests.Go(func() {
			rc := routes[i%len(routes)]
			answers[i] = call(base, rc.method, rc.path, nil)
		})
	}
	requests.Wait()
	close(done)
	wg.Wait()

	busy, served, full := 0, 0, 0
	for i, r := range answers {
		rc := routes[i%len(routes)]
		switch {
		case r.err != nil:
			t.Errorf("%s %s: %v after %v", rc.method, rc.path, r.err, r.took)
		case r.code == 503 && strings.Contains(r.body, "Server busy"):
			busy++
		case r.code == 200 || r.code == 204:
			served++
		default:
			t.Errorf("%s %s: %d %s after %v, want 503 Server busy or an answer", rc.method, rc.path, r.code, r.body, r.took)
		}
	}
	others := map[string]int{}
	attempts := 0
	for _, errs := range refused {
		for _, err := range errs {
			attempts++
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "53300" {
				full++
			} else {
				others[trimPath(err.Error())]++
			}
		}
	}
	for text, count := range others {
		t.Logf("%d other attempts: %s", count, text)
	}
	t.Logf("%d requests: %d answered 503 Server busy, %d served (/health, and a pop or read that got a slot); "+
		"%d connection attempts of %d other clients, %d refused with 53300", n, busy, served, attempts, n, full)
	if busy == 0 {
		t.Error("no request was answered busy: the storm did not reach the broker")
	}
	if text := log.String(); strings.Contains(text, `msg="database unavailable`) {
		t.Errorf("an outage began in a connection storm:\n%s", grepLines(text, `msg="database unavailable`))
	}

	release()
	waitHealthy(t, base)
	if r := call(base, "GET", "/api/v1/pop/queue/storm?wait=false", nil); r.code != 204 && r.code != 200 {
		t.Errorf("pop once the slots are free: %d %s", r.code, r.body)
	}
	pushEventually(t, base, "after the storm")
}

// restartWithMaxConnections sets max_connections on srv's cluster and restarts it.
func restartWithMaxConnections(t *testing.T, srv *embeddedpg.Server, dataDir string, max int) *embeddedpg.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := pgconn.Connect(ctx, srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	err = c.Exec(ctx, fmt.Sprintf("ALTER SYSTEM SET max_connections = %d", max)).Close()
	_ = c.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	bin, err := embeddedpg.FindBinaries("")
	if err != nil {
		t.Fatal(err)
	}
	srv, err = embeddedpg.Start(ctx, embeddedpg.Options{DataDir: dataDir, BinDir: bin, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	return srv
}

// holdEverySlot takes every connection slot of the server at dsn (superuser sessions, so the
// reserved slots too) and ends the broker's sessions (application_name queen-go), until a new
// session is refused with SQLSTATE 53300 and the broker holds none. release closes them all.
func holdEverySlot(t *testing.T, dsn string) (release func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var held []*pgconn.PgConn
	release = func() {
		for _, c := range held {
			_ = c.Close(context.Background())
		}
		held = nil
	}
	fill := func() {
		for {
			c, err := pgconn.Connect(ctx, dsn)
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "53300" {
				return
			}
			if err != nil {
				release()
				t.Fatalf("holding a slot: %v", err)
			}
			held = append(held, c)
		}
	}
	query := func(sql string) string {
		res := held[0].ExecParams(ctx, sql, nil, nil, nil, nil).Read()
		if res.Err != nil {
			release()
			t.Fatal(res.Err)
		}
		return string(res.Rows[0][0])
	}
	const broker = `FROM pg_stat_activity WHERE application_name = 'queen-go' AND pid <> pg_backend_pid()`
	for round := 0; ; round++ {
		fill()
		if query("SELECT count(pg_terminate_backend(pid))::text "+broker) == "0" {
			t.Logf("holding %d slots; the broker holds none", len(held))
			return release
		}
		// A terminated backend holds its slot until it has exited.
		for query("SELECT count(*)::text "+broker) != "0" {
			time.Sleep(10 * time.Millisecond) // a poll interval: a terminated backend exits within moments
		}
		if round == 20 {
			release()
			t.Fatal("the broker keeps getting a slot back")
		}
	}
}

// trimPath shortens a connection error to its cause: what follows the last ": " but one.
func trimPath(s string) string {
	parts := strings.Split(s, ": ")
	if len(parts) > 2 {
		return strings.Join(parts[len(parts)-2:], ": ")
	}
	return s
}
