package store

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queen-go/queen/internal/budget"
)

// Answered is called once a request is done: when one of its calls found the database
// unavailable (so it answered 503, or 500 on the transaction route), it counts towards the
// outage's summary line. ctx is the context given to budget.Request.
func (s *Store) Answered(ctx context.Context) {
	if budget.Unavailable(ctx) {
		s.outage.answeredOne()
	}
}

// outcome is the end of every database call: its error judged (judge) and recorded (observe).
func (s *Store) outcome(ctx context.Context, err error) error {
	if err == nil {
		s.outage.observe(ctx, nil)
		return nil
	}
	err = s.outage.judge(ctx, err, s.limits().AnswerBy(ctx))
	s.outage.observe(ctx, err)
	return err
}

// Judge answers a wait in front of the database that ended unavailable (a queue of the
// broker's past its deadline) the way a call's failure is answered: ErrBusy when the probe
// reaches the database, ErrUnavailable when it does not. The request is marked for the outage
// summary or the overload counter.
func (s *Store) Judge(ctx context.Context, err error) error { return s.outcome(ctx, err) }

// OutageBegun returns a channel closed when an outage begins (closed already while one is
// under way): the broker's queues in front of the database end their waits on it.
func (s *Store) OutageBegun() <-chan struct{} { return s.outage.downContext().Done() }

// trackGenerations makes the pool stamp each new connection with the outage tracker's
// generation, and destroy, instead of handing out, one stamped before the last outage
// (outageTracker.current). Hooks already in cfg still run.
func trackGenerations(cfg *pgxpool.Config, t *outageTracker) {
	after, prepare := cfg.AfterConnect, cfg.PrepareConn
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		t.stamp(c.PgConn())
		if after != nil {
			return after(ctx, c)
		}
		return nil
	}
	cfg.PrepareConn = func(ctx context.Context, c *pgx.Conn) (bool, error) {
		if !t.current(c.PgConn()) {
			return false, nil // opened before or during an outage: destroyed, another taken
		}
		if prepare != nil {
			return prepare(ctx, c)
		}
		return true, nil
	}
}

// refusedForLoad reports whether err is a session or query refused for lack of connection
// slots, which proves the server (or the pooler in front of it) is there and full: PostgreSQL's
// SQLSTATE 53300 (max_connections, reserved slots, a role's or database's connection limit),
// and PgBouncer's "no more connections allowed" (max_client_conn and the like) and
// "query_wait_timeout" (a query that waited in its queue too long), which PgBouncer sends as
// the generic protocol violation 08P01, so only their text tells them apart. A connection to a
// Unix socket whose listen queue is full fails with EAGAIN (ECONNREFUSED when nothing listens):
// a server too busy to accept sessions as fast as they come, which is load too. (Over TCP a
// full listen queue drops the connection request, and the attempt ends by its deadline, which
// proves nothing either way.)
func refusedForLoad(err error) bool {
	if errors.Is(err, syscall.EAGAIN) {
		return true
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	return pgErr.Code == "53300" || strings.HasPrefix(pgErr.Message, "no more connections allowed") ||
		pgErr.Message == "query_wait_timeout"
}

// probe is the outage probe: a newly opened connection (never a pooled one, which may be stuck
// in a frozen backend) that reads pg_is_in_recovery() within DB_CONNECTION_TIMEOUT. A server
// or pooler that refuses the session or the query for lack of slots answers: it is there. A
// server in recovery (a standby) cannot take the broker's writes, so it fails the probe.
func (s *Store) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	cfg := s.pool.Config().ConnConfig.Config
	c, err := pgconn.ConnectConfig(ctx, &cfg)
	if err != nil {
		if refusedForLoad(err) {
			return nil
		}
		return err
	}
	defer closeWithin(c, 100*time.Millisecond)
	res := c.ExecParams(ctx, "SELECT pg_is_in_recovery()", nil, nil, nil, nil).Read()
	if res.Err != nil {
		if refusedForLoad(res.Err) {
			return nil
		}
		return res.Err
	}
	if len(res.Rows) != 1 || string(res.Rows[0][0]) != "f" {
		return errors.New("the database is in recovery (read-only)")
	}
	return nil
}

// closeWithin closes c, waiting at most d (a Terminate to a frozen server is not waited for).
func closeWithin(c *pgconn.PgConn, d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_ = c.Close(ctx)
}
