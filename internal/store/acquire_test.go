package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/testkit"
)

// limitedRole creates a login role allowed one connection at a time (a full server answers
// its second session with SQLSTATE 53300, as max_connections does, without filling the shared
// server) and returns a DSN for it. The role is dropped when the test ends.
func limitedRole(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	role := "qg_full_" + hex.EncodeToString(b)
	admin, err := pgx.Connect(ctx, testDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE ROLE "+role+" LOGIN CONNECTION LIMIT 1"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), testDSN)
		if err != nil {
			t.Errorf("drop role %s: %v", role, err)
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", role)
		if _, err := c.Exec(context.Background(), "DROP ROLE IF EXISTS "+role); err != nil {
			t.Errorf("drop role %s: %v", role, err)
		}
	})
	u, err := url.Parse(testDSN)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	return u.String()
}

// fullRole is limitedRole with its only slot taken until the test ends: every new session of
// the returned DSN is refused with SQLSTATE 53300.
func fullRole(t *testing.T) string {
	t.Helper()
	dsn := limitedRole(t)
	holder, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Close(context.Background()) })
	return dsn
}

// A full server (SQLSTATE 53300) is asked again until the wait deadline: a request that
// starts while every slot is taken gets its connection once one is freed, instead of a 503.
func TestAcquireWaitsForAFullServerWithinTheDeadline(t *testing.T) {
	ctx := context.Background()
	dsn := limitedRole(t)
	holder, err := pgx.Connect(ctx, dsn) // takes the role's only slot
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, Options{DSN: dsn, Schema: "full_check", MaxConns: 2, ConnectTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done := make(chan error, 1)
	go func() { done <- s.Ping(ctx) }()
	// The slot is freed only after the store was refused at least once.
	testkit.Eventually(t, time.Minute, 5*time.Millisecond, func() error {
		select {
		case err := <-done:
			t.Fatalf("ping ended while the server was full: %v, want it to wait for a slot", err)
		default:
		}
		if s.fullRetries.Load() == 0 {
			return errors.New("no refused attempt yet")
		}
		return nil
	})
	holder.Close(ctx)
	if err := <-done; err != nil {
		t.Fatalf("ping after the slot was freed: %v", err)
	}
}

// A server that stays full answers ErrBusy with the refusal once the deadline passes: the
// outage probe's session is refused too, which is an answer (the server is there, only full),
// so it is load, not an outage (docs/api/operations.md §9.7). Any other connection error is
// not retried, and its probe fails: ErrUnavailable.
//
// DB_CONNECTION_TIMEOUT is 8 s: the refusal comes from a new backend, which beside two busy
// loops and the rest of the suite took up to 0.5 s to answer, and in CI (every package's tests
// at once) more than 2 s, so the ping ended on its deadline before the first refusal came and
// had none to report. It is not parallel: beside the package's parallel tests (and other
// packages' on the shared server) the first refusal took longer still.
func TestAcquireGivesUpOnAFullServerAtTheDeadlineAndRetriesNothingElse(t *testing.T) {
	ctx := context.Background()
	dsn := fullRole(t)
	s, err := Open(ctx, Options{DSN: dsn, Schema: "full_check", MaxConns: 2, ConnectTimeout: 8 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Ping(ctx)
	if !errors.Is(err, mq.ErrBusy) || errors.Is(err, mq.ErrUnavailable) || !strings.Contains(err.Error(), "53300") {
		t.Fatalf("ping on a full server: %v, want ErrBusy with SQLSTATE 53300", err)
	}
	if s.fullRetries.Load() == 0 {
		t.Fatal("the refusal was not asked again before the deadline")
	}

	// A role that does not exist (SQLSTATE 28000) fails the first attempt, with no retry.
	u, _ := url.Parse(dsn)
	u.User = url.User("qg_no_such_role")
	other, err := Open(ctx, Options{DSN: u.String(), Schema: "full_check", MaxConns: 2, ConnectTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Ping(ctx); !errors.Is(err, mq.ErrUnavailable) || !strings.Contains(err.Error(), "28000") {
		t.Fatalf("ping as a missing role: %v, want ErrUnavailable with SQLSTATE 28000", err)
	}
	if n := other.fullRetries.Load(); n != 0 {
		t.Fatalf("a refusal other than 53300 was retried %d times", n)
	}
}

// The caller's own deadline (Ping's) passing while an attempt is still dialling, after the
// server refused earlier ones, still answers ErrBusy with the refusal. The store dials through
// a proxy that forwards every session to the full server except the second, which it holds
// unanswered: the first is refused, the retry hangs past the deadline, and the outage probe's
// session is refused again (the server is there). The wait used to go on after the deadline
// with a second, empty attempt whose bare deadline error replaced the refusals (seen in CI on a
// busy machine, where a new backend took seconds).
func TestAcquireKeepsTheRefusalWhenTheDeadlineCutsAnAttemptShort(t *testing.T) {
	ctx := context.Background()
	dsn := fullRole(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	target := u.Host
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	done := make(chan struct{})
	defer func() {
		close(done)
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}()
	go func() {
		for n := 1; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			if n == 2 {
				continue // held: accepted, never answered
			}
			go func() {
				up, err := net.Dial("tcp", target)
				if err != nil {
					c.Close()
					return
				}
				mu.Lock()
				conns = append(conns, up)
				mu.Unlock()
				go func() { _, _ = io.Copy(up, c) }()
				_, _ = io.Copy(c, up)
			}()
		}
	}()
	u.Host = ln.Addr().String()
	s, err := Open(ctx, Options{DSN: u.String(), Schema: "full_check", MaxConns: 2, ConnectTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Ping(ctx)
	if !errors.Is(err, mq.ErrBusy) || errors.Is(err, mq.ErrUnavailable) || !strings.Contains(err.Error(), "53300") {
		t.Fatalf("ping on a full server whose retry hung past the deadline: %v, want ErrBusy with SQLSTATE 53300", err)
	}
}
