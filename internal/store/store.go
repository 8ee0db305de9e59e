// Package store owns every SQL statement of queen-go: the embedded schema migrations, the
// PL/pgSQL functions that make each hot-path operation one round trip, and typed Go calls
// to them through pgx.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queen-go/queen/internal/mq"
)

// Options configure the connection pool.
type Options struct {
	DSN              string        // PostgreSQL URL or key/value string
	Schema           string        // schema holding every queen-go object
	MaxConns         int32         // pool size
	ConnectTimeout   time.Duration // wait for a pooled connection (and to connect)
	IdleTimeout      time.Duration // close pooled connections idle this long
	StatementTimeout time.Duration // per statement
	LockTimeout      time.Duration // per lock wait
}

// Store is the PostgreSQL access layer. It is safe for concurrent use.
type Store struct {
	pool    *pgxpool.Pool
	schema  string
	timeout time.Duration
	dsn     string
	clock   func() time.Time // nil: the database clock decides
	// partitions caches partition ids by name for pushes (see partitionCache).
	partitions partitionCache
	// health remembers database outcomes for the admin health route (see dbHealth).
	health dbHealth
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
	cfg.ConnConfig.ConnectTimeout = o.ConnectTimeout
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
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("create pool: %w", err)
	}
	return &Store{pool: pool, schema: o.Schema, timeout: o.ConnectTimeout, dsn: o.DSN}, nil
}

// Close closes the pool.
func (s *Store) Close() { s.pool.Close() }

// Schema is the PostgreSQL schema in use.
func (s *Store) Schema() string { return s.schema }

// Ping checks that a connection can be had and used within the connection timeout.
func (s *Store) Ping(ctx context.Context) error {
	return s.withConn(ctx, func(c *pgxpool.Conn) error {
		_, err := c.Exec(ctx, "SELECT 1")
		return err
	})
}

// withConn acquires a connection, waiting at most the connection timeout, so that an
// unreachable database answers ErrUnavailable within a bound instead of hanging.
func (s *Store) withConn(ctx context.Context, fn func(*pgxpool.Conn) error) error {
	actx, cancel := context.WithTimeout(ctx, s.timeout)
	c, err := s.pool.Acquire(actx)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		err = fmt.Errorf("%w: %v", mq.ErrUnavailable, err)
		s.observe(err)
		return err
	}
	defer c.Release()
	err = classify(fn(c))
	s.observe(err)
	return err
}

// queryRows runs fn over the rows of one statement on a pooled connection.
func (s *Store) queryRows(ctx context.Context, sql string, args []any, fn func(rowScanner) error) error {
	return s.withConn(ctx, func(c *pgxpool.Conn) error {
		rows, err := c.Query(ctx, sql, args...)
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
	})
}

// sqlCall is the parameter struct of one SQL function call with more than three parameters
// (pushArgs, popArgs, ...). Its fields are the function's parameters in order, each named after
// its parameter without the p_ prefix (p_pair_ids: PairIDs), and args lists their values in
// that order. The call text passes them in named notation, qg_push(p_queues => $1, ...), so
// PostgreSQL refuses a call that names a parameter the function does not have, and
// TestSQLCallsBindEachFieldToItsParameter checks that $n names the n-th field. Calls of one to
// three parameters pass them directly, still in named notation.
type sqlCall interface{ args() []any }

func quoteIdent(s string) string { return pgx.Identifier{s}.Sanitize() }

// isNoRows reports whether err is pgx.ErrNoRows.
func isNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

// rowScanner is the part of pgx.Rows a row callback needs.
type rowScanner interface{ Scan(dest ...any) error }

// SetClock makes every operation use clock instead of the database clock for "now", so tests
// can move time (lease expiry, retry delays, windows) without sleeping. Call before use.
func (s *Store) SetClock(clock func() time.Time) { s.clock = clock }

// nowArg is the p_now argument of the SQL functions: NULL lets the database clock decide.
func (s *Store) nowArg() any {
	if s.clock == nil {
		return nil
	}
	return s.clock()
}
