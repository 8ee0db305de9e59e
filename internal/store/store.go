// Package store owns every SQL statement of queen-go: the embedded schema migrations, the
// PL/pgSQL functions that make each hot-path operation one round trip, and typed Go calls
// to them through pgx.
package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queen-go/queen/internal/budget"
	"github.com/queen-go/queen/internal/lifecycle"
	"github.com/queen-go/queen/internal/mq"
)

// Options configure the connection pool.
type Options struct {
	DSN              string        // PostgreSQL URL or key/value string
	Schema           string        // schema holding every queen-go object
	MaxConns         int32         // pool size
	ConnectTimeout   time.Duration // wait for a pooled connection (and to connect)
	IdleTimeout      time.Duration // close pooled connections idle this long
	StatementTimeout time.Duration // per statement; also the broker-side deadline of bulk work
	LockTimeout      time.Duration // per lock wait
	// RequestTimeout bounds all the database work of one request on the broker's clock
	// (DB_REQUEST_TIMEOUT, default 10 s; docs/api/operations.md §9.1).
	RequestTimeout time.Duration
	// Log receives the outage reports (one line when the database becomes unavailable, one
	// when it is back); nil: slog.Default().
	Log *slog.Logger
	// Pooler: DSN names a pooler in transaction mode (DATABASE_POOLER=transaction), where each
	// transaction may run on another server session, so nothing may rely on session state
	// (pooler.go).
	Pooler bool
	// SessionDSN, behind a pooler, names a direct connection for what needs a session: the
	// notification listener and the jobs' advisory locks (DATABASE_SESSION_URL); empty: the
	// listener is off (parked pops poll) and jobs lead by lease rows.
	SessionDSN string
}

// Store is the PostgreSQL access layer. It is safe for concurrent use.
type Store struct {
	pool    *pgxpool.Pool
	schema  string
	timeout time.Duration // DB_CONNECTION_TIMEOUT: waits in front of the database, and connecting
	// requestTimeout and bulkTimeout bound the database work of one request, and of one bulk
	// route or job statement: with timeout, the limits request budgets are measured against
	// (internal/budget; Store.limits in deadline.go).
	requestTimeout, bulkTimeout time.Duration
	dsn                         string
	outage                      *outageTracker
	clock                       func() time.Time // nil: the database clock decides
	// partitions caches partition ids by name for pushes (see partitionCache).
	partitions partitionCache
	// health remembers database outcomes for the admin health route (see dbHealth).
	health dbHealth
	// fullRetries counts connection attempts refused by a full server and tried again (acquire).
	fullRetries atomic.Int64
	// Behind a transaction pooler (pooler.go): begin opens every unit of work, a transaction
	// whose session settings are SET LOCAL ("" on a direct connection, where they travel in
	// the start-up message); session is the pool of direct connections for the jobs' advisory
	// locks, and sessionDSN the listener's target, when DATABASE_SESSION_URL names one.
	begin      string
	session    *pgxpool.Pool
	sessionDSN string
}

// Open creates the pool. It does not wait for the database to be reachable: routes answer
// 503 until it is (docs/api/operations.md §8).
func Open(ctx context.Context, o Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(o.DSN)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	if o.Schema == "" {
		o.Schema = "queen_go"
	}
	if o.MaxConns > 0 {
		cfg.MaxConns = o.MaxConns
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 2 * time.Second
	}
	if o.IdleTimeout > 0 {
		cfg.MaxConnIdleTime = o.IdleTimeout
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 10 * time.Second
	}
	bulk := o.StatementTimeout
	if bulk <= 0 {
		// No statement_timeout on the server does not mean no deadline on the broker's clock.
		bulk = 30 * time.Second
	}
	// ConnectTimeout bounds the whole opening of a connection: TCP, TLS, start-up and the
	// session settings below, which travel in the start-up message.
	cfg.ConnConfig.ConnectTimeout = o.ConnectTimeout
	// Set explicitly, since the deadlines rely on it: when a statement's context ends, the
	// connection's read deadline is set to now, so the call returns at once even from a server
	// that never answers; pgconn then closes the connection in the background (a best-effort
	// cancel request and Terminate, bounded by its own 15 s), and the pool, finding it closed,
	// never hands it out again. A CancelRequestContextWatcherHandler would instead make every
	// abandoned call wait for a cancel request over a new connection to the same frozen host.
	cfg.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.DeadlineContextWatcherHandler{Conn: c.Conn()}
	}
	rp := cfg.ConnConfig.RuntimeParams
	rp["search_path"] = quoteIdent(o.Schema)
	rp["application_name"] = "queen-go"
	if _, set := rp["jit"]; !set {
		// JIT compilation pays off for long analytic queries, never for a broker's: it
		// triggers on estimated cost alone and then spends hundreds of milliseconds in LLVM.
		// The stats job over 10,000 partitions took 400 ms per batch of 500 with it, 25 ms
		// without. A DATABASE_URL that sets jit keeps its choice.
		rp["jit"] = "off"
	}
	if o.StatementTimeout > 0 {
		rp["statement_timeout"] = fmt.Sprint(o.StatementTimeout.Milliseconds())
	}
	if o.LockTimeout > 0 {
		rp["lock_timeout"] = fmt.Sprint(o.LockTimeout.Milliseconds())
	}
	s := &Store{schema: o.Schema, timeout: o.ConnectTimeout, requestTimeout: o.RequestTimeout,
		bulkTimeout: bulk, dsn: o.DSN, sessionDSN: o.DSN}
	if o.Pooler {
		if s.session, err = s.behindPooler(ctx, cfg, o.SessionDSN); err != nil {
			return nil, err
		}
	}
	s.outage = newOutageTracker(o.Log, s.probe)
	trackGenerations(cfg, s.outage)
	if s.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		s.outage.close()
		if s.session != nil {
			s.session.Close()
		}
		return nil, fmt.Errorf("create pool: %w", err)
	}
	return s, nil
}

// Close ends the outage probe and closes the pools.
func (s *Store) Close() {
	s.outage.close()
	s.pool.Close()
	if s.session != nil {
		s.session.Close()
	}
}

// Schema is the PostgreSQL schema in use.
func (s *Store) Schema() string { return s.schema }

// Ping checks that a connection can be had and used: DB_CONNECTION_TIMEOUT bounds the
// connection and the SELECT 1 together (/health, docs/api/operations.md §9.1). A ping that
// fails as if the database were gone asks the outage probe: when the probe reaches the
// database, the broker is busy, not disconnected, and Ping returns ErrBusy. Any other failure
// is ErrUnavailable; during an outage it fails at once.
func (s *Store) Ping(ctx context.Context) error {
	// A budget of its own: a busy ping answers /health 200, which the overload counter must
	// not count; an unavailable one is marked on the request below.
	pctx, cancel := context.WithTimeout(budget.Request(ctx), s.timeout)
	defer cancel()
	err := s.withConn(pctx, func(ctx context.Context, c *pgxpool.Conn) error {
		_, err := c.Exec(ctx, "SELECT 1")
		return err
	})
	if errors.Is(err, mq.ErrUnavailable) {
		budget.MarkUnavailable(ctx)
	}
	if err != nil && !errors.Is(err, mq.ErrUnavailable) && !errors.Is(err, mq.ErrBusy) && !errors.Is(ctx.Err(), context.Canceled) {
		err = fmt.Errorf("%w: %w", mq.ErrUnavailable, err)
	}
	return err
}

// acquire takes a pooled connection (docs/api/operations.md §9.1, §9.7). Waiting for one is
// load: it may last until the request's wait deadline (DB_REQUEST_TIMEOUT from the start of
// its clock), but once it reaches DB_CONNECTION_TIMEOUT the outage probe is asked whether the
// database is there, and only when it is does the wait go on. An outage ends the wait at once,
// and while one is under way no wait begins (in its half-open end, only the few calls it lets
// in: outageTracker.admit). A connection the pool opens meanwhile is bounded
// by DB_CONNECTION_TIMEOUT; a failure to open one is answered by withConn (the probe again).
//
// A server that refuses the new session because it is full (SQLSTATE 53300: max_connections,
// or the role's or database's connection limit; a pooler's refusal; refusedForLoad) is asked again, with a short back-off, until
// that deadline: the pool would otherwise fail the request at once, although a server shared
// with other clients usually has a free slot again within milliseconds.
func (s *Store) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	if err := s.outage.admit(); err != nil {
		return nil, err
	}
	probeAt, until := s.limits().WaitBounds(ctx)
	probeAt = minTime(probeAt, until)
	c, err := s.acquireUntil(ctx, probeAt)
	if errors.Is(err, context.DeadlineExceeded) && probeAt.Before(until) && ctx.Err() == nil {
		// DB_CONNECTION_TIMEOUT has passed: go on waiting only if the database is there. Not
		// when the caller's own deadline ended the wait (Ping's): a second wait would end at
		// once with a bare deadline error, losing the refusals (SQLSTATE 53300) that explain it.
		if !s.outage.healthy(s.limits().AnswerBy(ctx), errNoConn) {
			return nil, fmt.Errorf("%w: %w", mq.ErrUnavailable, errNoConn)
		}
		c, err = s.acquireUntil(ctx, until)
	}
	switch {
	case err == nil:
		return c, nil
	case errors.Is(ctx.Err(), context.Canceled):
		return nil, ctx.Err() // the client went away: not an outage
	case s.outage.state.Load() == open:
		return nil, errOutage
	}
	return nil, fmt.Errorf("%w: no connection within the deadline: %v", mq.ErrUnavailable, err)
}

// errNoConn is the cause of a wait for a pooled connection that reached its deadline.
var errNoConn = errors.New("no pooled connection within DB_CONNECTION_TIMEOUT")

// acquireUntil is one wait for a pooled connection, ending at until or when an outage begins.
// It returns context.DeadlineExceeded (wrapped) when until passed with no connection.
func (s *Store) acquireUntil(ctx context.Context, until time.Time) (*pgxpool.Conn, error) {
	actx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	stop := context.AfterFunc(s.outage.downContext(), cancel)
	defer stop()
	pause := 10 * time.Millisecond
	var refused error // the server's last "too many connections", if it said so
	for {
		c, err := s.pool.Acquire(actx)
		if err == nil {
			return c, nil
		}
		// A caller's own deadline (Ping puts DB_CONNECTION_TIMEOUT on its context) that cut the
		// last attempt short goes on below, so the answer keeps the refusals that explain it.
		if ctx.Err() != nil && (refused == nil || !errors.Is(ctx.Err(), context.DeadlineExceeded)) {
			return nil, ctx.Err()
		}
		if !refusedForLoad(err) || !sleepWithin(actx, pause) {
			if refused != nil && !refusedForLoad(err) && actx.Err() != nil {
				// The deadline cut the last attempt short: the refusals before it say why.
				err = fmt.Errorf("%w (before it: %v)", err, refused)
			}
			if actx.Err() != nil && !time.Now().Before(until) {
				return nil, fmt.Errorf("%w: %v", context.DeadlineExceeded, err)
			}
			return nil, err
		}
		refused = err
		s.fullRetries.Add(1)
		pause = min(2*pause, 200*time.Millisecond)
	}
}

// sleepWithin sleeps for d unless ctx would end first; it reports whether it slept.
func sleepWithin(ctx context.Context, d time.Duration) bool {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		return false
	}
	return lifecycle.Sleep(ctx, d)
}

// withConn runs fn on a pooled connection: the wait for it is bounded by acquire, and fn's
// statements by the request's work deadline (DB_REQUEST_TIMEOUT, or DB_STATEMENT_TIMEOUT on
// bulk work), which fn must use through the context it is given. A call that passes its
// deadline is abandoned: its connection is closed, never returned to the pool, and PostgreSQL
// rolls back whatever did not commit; the caller gets ErrUnavailable, or ErrBusy when the
// outage probe finds the database there (outage.go).
func (s *Store) withConn(ctx context.Context, fn func(context.Context, *pgxpool.Conn) error) error {
	c, err := s.acquire(ctx)
	if err == nil {
		wctx, cancel := s.limits().Work(ctx)
		err = s.unit(wctx, c, fn)
		if err != nil && wctx.Err() != nil {
			// Ended mid-call: the connection may still be inside a statement or transaction.
			closeConn(c)
		}
		c.Release()
		err = classify(deadlineError(ctx, wctx, err))
		cancel()
	}
	return s.outcome(ctx, err)
}

// closeConn closes a pooled connection whose call was abandoned, so the pool destroys it on
// release. pgconn usually closed it already when the read deadline fired; otherwise Close
// sends Terminate, which a frozen server's socket buffer takes without blocking (bounded anyway).
func closeConn(c *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_ = c.Conn().Close(ctx) // closed either way
}

// queryRows runs fn over the rows of one statement on a pooled connection.
func (s *Store) queryRows(ctx context.Context, sql string, args []any, fn func(rowScanner) error) error {
	return s.withConn(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		rows, err := c.Query(ctx, sql, args...)
		return eachRow(rows, err, fn)
	})
}

// eachRow runs fn over the rows a Query returned (with its error), closing them.
func eachRow(rows pgx.Rows, err error, fn func(rowScanner) error) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// sqlCall is the parameter struct of one SQL function call with more than three parameters
// (pushArgs, popArgs, ...). Its fields are the function's parameters in order, each named after
// its parameter without the p_ prefix (p_pair_ids: PairIDs), and args lists their values in
// that order. The call text passes them in named notation, qg_push(p_queues => $1, ...), so
// PostgreSQL refuses a call that names a parameter the function does not have, and
// TestSQLCallsBindEachFieldToItsParameter checks that $n names the n-th field. Calls of one to
// three parameters pass them directly, still in named notation. (The statements of sql/queries
// bind @names with pgx.StrictNamedArgs instead: readQuery.)
type sqlCall interface{ args() []any }

func quoteIdent(s string) string { return pgx.Identifier{s}.Sanitize() }

// isNoRows reports whether err is pgx.ErrNoRows.
func isNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

// rowScanner is the part of pgx.Rows a row callback needs: Scan reads a row by position, and
// the column names (FieldDescriptions) let pgx.RowToStructByName read it by name (readQuery).
type rowScanner = pgx.CollectableRow

// SetClock makes every operation use clock instead of the database clock for "now", so tests
// can move time (lease expiry, retry delays, windows) without sleeping. Call before use.
func (s *Store) SetClock(clock func() time.Time) { s.clock = clock }

// nowArg is the p_now argument of the SQL functions: NULL lets the database clock decide. The
// time is cut to PostgreSQL's microsecond, as pgx's binary encoding cuts it: a time sent as JSON
// text (the long calls' one argument) is rounded by the server instead, up half the time, and a
// retry delay of 0 computed from it then lay in the future of the next call's now.
func (s *Store) nowArg() any {
	if s.clock == nil {
		return nil
	}
	return s.clock().Truncate(time.Microsecond)
}
