package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Behind a pooler in transaction mode (PgBouncer's pool_mode=transaction, the poolers of managed
// services), every transaction may run on another server session, and a session's state is left
// to whichever client gets that session next. So the broker keeps none there (docs/deploy.md,
// "Behind a connection pooler"):
//
//   - Settings. A direct connection sends search_path, jit, statement_timeout and lock_timeout
//     in its start-up message; PgBouncer refuses such parameters (it passes on only the few it
//     tracks, application_name among them). Behind a pooler each unit of work — the statements
//     one call of the store runs on a connection — is one transaction that begins with those
//     settings SET LOCAL, in a single round trip (begin, below), and ends with COMMIT: two
//     round trips more per call than on a direct connection, where nothing changes.
//   - Statements. pgx's default mode prepares named statements once per connection; they live
//     in one server session and are missing in the next. QueryExecModeCacheDescribe describes a
//     statement once (on the unnamed statement, inside the unit's transaction, so on the same
//     server session) and from then on sends it in one round trip without a name. PgBouncer 1.18,
//     Debian 12's, has no protocol-level prepared statements (those came with 1.21).
//   - Sessions. LISTEN and the jobs' advisory locks outlive a transaction. With
//     DATABASE_SESSION_URL they use direct connections to that URL; without, the listener stays
//     off (parked pops find work by their fallback polls, at most POP_WAIT_MAX_INTERVAL_MS
//     apart, and maintenance changes by their 1 s re-read) and jobs lead by lease rows
//     (leader.go). Migrations take a transaction-scoped advisory lock, which works either way.

// trackedByPoolers are the start-up parameters PgBouncer passes on to the server session each
// transaction runs on (and that managed poolers accept); every other setting is SET LOCAL.
var trackedByPoolers = map[string]bool{"application_name": true, "client_encoding": true, "datestyle": true,
	"timezone": true, "standard_conforming_strings": true}

// behindPooler adapts the pool's configuration to a transaction pooler: the settings a direct
// connection sends at start-up move into s.begin, statements are described rather than
// prepared by name, and when sessionDSN is set, a small pool of direct sessions is opened for
// the jobs' advisory locks (the listener dials sessionDSN itself).
func (s *Store) behindPooler(ctx context.Context, cfg *pgxpool.Config, sessionDSN string) (*pgxpool.Pool, error) {
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	rp := cfg.ConnConfig.RuntimeParams
	direct := maps.Clone(rp) // a direct session's settings, for the session pool
	var local []string
	names := make([]string, 0, len(rp))
	for k := range rp {
		names = append(names, k)
	}
	sort.Strings(names) // one statement text whatever the map's order
	for _, k := range names {
		if trackedByPoolers[strings.ToLower(k)] {
			continue
		}
		local = append(local, fmt.Sprintf("set_config(%s, %s, true)", quoteLiteral(k), quoteLiteral(rp[k])))
		delete(rp, k)
	}
	s.begin = "BEGIN"
	if len(local) > 0 {
		s.begin += "; SELECT " + strings.Join(local, ", ")
	}
	s.sessionDSN = ""
	if sessionDSN == "" {
		return nil, nil
	}
	s.sessionDSN = sessionDSN
	scfg, err := pgxpool.ParseConfig(sessionDSN)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_SESSION_URL: %w", err)
	}
	// The session settings of a direct connection, with the session URL's own parameters kept.
	for k, v := range direct {
		if _, set := scfg.ConnConfig.RuntimeParams[k]; !set {
			scfg.ConnConfig.RuntimeParams[k] = v
		}
	}
	scfg.ConnConfig.ConnectTimeout = cfg.ConnConfig.ConnectTimeout
	scfg.ConnConfig.BuildContextWatcherHandler = cfg.ConnConfig.BuildContextWatcherHandler
	scfg.MaxConnIdleTime = cfg.MaxConnIdleTime
	// One per job that leads at once (retention, eviction, housekeeping, stats, cleanups): a
	// job that finds none free waits for its next tick like one that finds another leader.
	scfg.MaxConns = sessionPoolSize
	pool, err := pgxpool.NewWithConfig(ctx, scfg)
	if err != nil {
		return nil, fmt.Errorf("create session pool: %w", err)
	}
	return pool, nil
}

// sessionPoolSize bounds the direct sessions of DATABASE_SESSION_URL that the jobs hold (the
// listener holds one more).
const sessionPoolSize = 4

// quoteLiteral quotes s as an SQL string literal (standard_conforming_strings is on in every
// PostgreSQL the broker supports, so only quotes are doubled).
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// unit runs fn, one call's statements, on c in ctx's tenant scope (scope.go): as they are on a
// direct connection; behind a pooler as one transaction that starts with the session settings
// and commits when fn succeeds (rolls back otherwise), so every statement runs on one server
// session with them.
func (s *Store) unit(ctx context.Context, c *pgxpool.Conn, fn func(context.Context, *pgxpool.Conn) error) error {
	if s.begin == "" {
		if err := applyScope(ctx, c); err != nil {
			return err
		}
		return fn(ctx, c)
	}
	return inUnit(ctx, s.unitBegin(ctx), c.Conn(), func(ctx context.Context) error { return fn(ctx, c) })
}

// errRolledBack is a unit whose COMMIT found the transaction already failed (a statement's error
// that fn did not return).
var errRolledBack = errors.New("the transaction was rolled back")

// inUnit runs fn inside a transaction on conn opened with begin (BEGIN and the SET LOCALs, one
// simple-protocol round trip: no arguments).
func inUnit(ctx context.Context, begin string, conn *pgx.Conn, fn func(context.Context) error) error {
	if _, err := conn.Exec(ctx, begin); err != nil {
		return err
	}
	if err := fn(ctx); err != nil {
		rollback(ctx, conn)
		return err
	}
	tag, err := conn.Exec(ctx, "COMMIT")
	if err == nil && tag.String() != "COMMIT" {
		err = errRolledBack
	}
	return err
}

// rollback ends a failed unit's transaction. When that fails too (the call's context ended,
// the connection broke) the connection is closed, so it never goes back to the pool inside a
// transaction; a pooler then ends the server session's transaction itself.
func rollback(ctx context.Context, conn *pgx.Conn) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(time.Second, conn.Config().ConnectTimeout+time.Millisecond))
	defer cancel()
	if ctx.Err() != nil {
		_ = conn.Close(rctx)
		return
	}
	if _, err := conn.Exec(rctx, "ROLLBACK"); err != nil {
		_ = conn.Close(rctx)
	}
}

// querier is what a unit's statements run on: a pooled connection inside a pooler's unit, or a
// transaction on a direct connection (inTx).
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// inTx runs fn's statements in one transaction: behind a pooler the unit's own, on a direct
// connection one begun for them.
func (s *Store) inTx(ctx context.Context, fn func(context.Context, querier) error) error {
	return s.withConn(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		if s.begin != "" {
			return fn(ctx, c) // withConn's unit is the transaction
		}
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error { return fn(ctx, tx) })
	})
}
