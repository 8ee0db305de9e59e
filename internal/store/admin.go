package store

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Helpers shared by the admin and status calls. Each call is one SQL function or query, or a
// batch of them sent in one round trip; the Go side only binds arguments and scans rows.

// queryAll runs one statement and collects one T per row.
func queryAll[T any](ctx context.Context, s *Store, sql string, args []any, scan func(rowScanner, *T) error) ([]T, error) {
	var out []T
	if matchesNothing(args) {
		return out, nil
	}
	err := s.queryBatch(ctx, batchQuery{sql, args, func(r rowScanner) error {
		var v T
		if err := scan(r, &v); err != nil {
			return err
		}
		out = append(out, v)
		return nil
	}})
	return out, err
}

// queryOne runs a statement that yields at most one row; found is false when it yields none.
func (s *Store) queryOne(ctx context.Context, sql string, args []any, dest ...any) (found bool, err error) {
	if matchesNothing(args) {
		return false, nil
	}
	err = s.queryBatch(ctx, batchQuery{sql, args, func(r rowScanner) error {
		found = true
		return r.Scan(dest...)
	}})
	return found && err == nil, err
}

// batchQuery is one statement of a pipelined batch and its row callback.
type batchQuery struct {
	sql  string
	args []any
	scan func(rowScanner) error
}

// sqlAdminCustomPlans makes the rest of a batch's transaction use custom plans.
var sqlAdminCustomPlans = query("admin_custom_plans")

// queryBatch sends the statements in one round trip and feeds each its rows. PostgreSQL runs
// a batch in one implicit transaction, so the statements agree with each other. The batch
// starts by asking for custom plans for its statements (sql/queries/admin.sql says why); the
// setting ends with the batch's transaction.
func (s *Store) queryBatch(ctx context.Context, qs ...batchQuery) error {
	for _, q := range qs {
		if matchesNothing(q.args) {
			return nil
		}
	}
	return s.withConn(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		b := &pgx.Batch{}
		b.Queue(sqlAdminCustomPlans)
		for _, q := range qs {
			b.Queue(q.sql, q.args...)
		}
		res := c.SendBatch(ctx, b)
		defer res.Close()
		if _, err := res.Exec(); err != nil {
			return err
		}
		for _, q := range qs {
			rows, err := res.Query()
			if err != nil {
				return err
			}
			for rows.Next() {
				if err := q.scan(rows); err != nil {
					rows.Close()
					return err
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		return res.Close()
	})
}

// matchesNothing reports whether a string argument holds U+0000, a named one (the values of
// pgx.StrictNamedArgs or pgx.NamedArgs) included. PostgreSQL text cannot store it, so no
// queue, partition, group, key or trace name contains it: such a lookup finds no row, and
// sending it would only earn an encoding error (a 500 instead of "not found").
func matchesNothing(args []any) bool {
	for _, a := range args {
		switch a := a.(type) {
		case string:
			if strings.IndexByte(a, 0) >= 0 {
				return true
			}
		case pgx.StrictNamedArgs:
			if namedMatchesNothing(a) {
				return true
			}
		case pgx.NamedArgs:
			if namedMatchesNothing(a) {
				return true
			}
		}
	}
	return false
}

func namedMatchesNothing(args map[string]any) bool {
	for _, v := range args {
		if matchesNothing([]any{v}) {
			return true
		}
	}
	return false
}

// scanInto is a batch row callback that scans a one-column row into dest.
func scanInto(dest any) func(rowScanner) error {
	return func(r rowScanner) error { return r.Scan(dest) }
}
