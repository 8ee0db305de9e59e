package store

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/internal/tenant"
)

// The tenant scope of a statement (docs/api/concepts.md §14) travels as the setting qg.scope,
// which the view queues reads (migration 0020): 't:' and the tenant's name shows that tenant's
// queues only; unset, empty or '*' shows every tenant's. Every function that reaches a queue
// by name, and every read that joins queues, thereby answers for the caller's tenant alone,
// without a tenant parameter on each call; the functions reached by partition, message, lease
// or DLQ id check their object's queue through that view.

// scopeAll is the setting's value for a context that sees every tenant.
const scopeAll = "*"

// scopeKey is where a direct connection remembers its session's qg.scope, so that it is sent
// only when it changes (a broker of one tenant never sends it).
const scopeKey = "qg.scope"

// scopeOf is the qg.scope value of ctx's tenant scope.
func scopeOf(ctx context.Context) string {
	name, all := tenant.Of(ctx)
	if all {
		return scopeAll
	}
	return "t:" + name
}

// applyScope sets c's session to ctx's tenant scope, unless it has it already: a new session
// has none, which is every tenant's. Used on direct connections; behind a pooler, each unit sets
// it in its own transaction instead (unitBegin).
func applyScope(ctx context.Context, c *pgxpool.Conn) error {
	want := scopeOf(ctx)
	data := c.Conn().PgConn().CustomData()
	have, _ := data[scopeKey].(string)
	if have == "" {
		have = scopeAll
	}
	if have == want {
		return nil
	}
	if _, err := c.Exec(ctx, "SELECT set_config('qg.scope', $1, false)", want); err != nil {
		delete(data, scopeKey) // unknown now: sent again next time
		return err
	}
	data[scopeKey] = want
	return nil
}

// unitBegin is the statement that opens a unit behind a pooler, with ctx's tenant scope set for
// its transaction.
func (s *Store) unitBegin(ctx context.Context) string {
	scope := scopeOf(ctx)
	if scope == scopeAll {
		return s.begin
	}
	return s.begin + "; SELECT set_config('qg.scope', " + quoteLiteral(scope) + ", true)"
}
