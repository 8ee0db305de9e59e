package store

import (
	"bufio"
	"context"
	"embed"
	"fmt"
	"io/fs"
	"reflect"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Plain statements of the background jobs and of the status, analytics and metrics reads live
// in sql/queries/*.sql. Each statement starts after a line "-- name: <name>" and runs to the
// next such line; the comment lines before a marker document the statement below it. Their
// parameters are @names, bound by name (pgx.StrictNamedArgs), and their columns are named with
// AS and read by name (readQuery), so neither side depends on the order of the other's list.
//
//go:embed sql/queries/*.sql
var queryFiles embed.FS

var queries = loadQueries()

// query returns the named statement. Statements are read once at start-up, so a name that
// does not exist panics while the package initialises, which every test of it would show.
func query(name string) string {
	q, ok := queries[name]
	if !ok {
		panic(fmt.Sprintf("store: no query named %q in sql/queries", name))
	}
	return q
}

func loadQueries() map[string]string {
	out := map[string]string{}
	names, err := fs.Glob(queryFiles, "sql/queries/*.sql")
	if err != nil {
		panic(err)
	}
	for _, n := range names {
		b, err := queryFiles.ReadFile(n)
		if err != nil {
			panic(err)
		}
		var name string
		var body strings.Builder
		flush := func() {
			if name == "" {
				return
			}
			if _, dup := out[name]; dup {
				panic(fmt.Sprintf("store: query %q defined twice (%s)", name, n))
			}
			out[name] = trimComments(body.String())
		}
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "-- name:"); ok {
				flush()
				name = strings.TrimSpace(rest)
				body.Reset()
				continue
			}
			body.WriteString(line)
			body.WriteByte('\n')
		}
		flush()
	}
	return out
}

// trimComments drops the trailing comment lines, which describe the next statement.
func trimComments(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n "), "\n")
	for len(lines) > 0 {
		last := strings.TrimSpace(lines[len(lines)-1])
		if last != "" && !strings.HasPrefix(last, "--") {
			break
		}
		lines = lines[:len(lines)-1]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// readQuery is a statement of sql/queries whose rows are read by column name into a T
// (pgx.RowToStructByName): T has one field, tagged db:"column", per column the statement
// names with AS, so a column renamed on one side only is an error (TestQueryRowsScanByName),
// never a value landing in the wrong field. Its parameters are @names bound with
// pgx.StrictNamedArgs, which refuses a name the statement lacks or leaves unbound.
type readQuery[T any] struct{ sql string }

// queryOf is the statement named name, whose rows are T's.
func queryOf[T any](name string) readQuery[T] { return readQuery[T]{query(name)} }

// callOf is the SQL function call sql, whose rows are T's. Its parameters are positional ($n,
// bound from a parameter struct: sqlCall) and its columns are those the function returns,
// named in its RETURNS TABLE or with AS in sql, so they are read by name as a readQuery's are
// (TestCallRowsScanByName).
func callOf[T any](sql string) readQuery[T] { return readQuery[T]{sql} }

// row reads the current row by column name.
func (q readQuery[T]) row(r rowScanner) (T, error) { return pgx.RowToStructByName[T](r) }

// reader returns a function that reads the rows of one result by name at the cost of a read
// by position, for the hot path (push, pop, ack), where pgx.RowToStructByName's work per row
// (looking up the column-to-field mapping it caches, building the scan targets, three
// allocations) costs about as much again as scanning the row. The first row is read by
// pgx.RowToAddrOfStructByName, whose scan targets (pointers to the fields of one T) are kept;
// each later row is scanned into them and the T copied out. The rows of one result share
// their columns, so the mapping holds. T has no slice or map field, whose scanned value could
// share memory with the next row's (a slice scan may reuse its backing array): reader panics
// on one, which every test of the statement shows.
func (q readQuery[T]) reader() func(rowScanner) (T, error) {
	mustCopyByValue(reflect.TypeFor[T]())
	var v *T
	var targets []any
	return func(r rowScanner) (T, error) {
		if v == nil {
			rec := &recordingRow{CollectableRow: r}
			p, err := pgx.RowToAddrOfStructByName[T](rec)
			if err != nil {
				return *p, err
			}
			v, targets = p, rec.dest
			return *v, nil
		}
		err := r.Scan(targets...)
		return *v, err
	}
}

// recordingRow keeps the scan targets of the row it forwards to.
type recordingRow struct {
	pgx.CollectableRow
	dest []any
}

func (r *recordingRow) Scan(dest ...any) error {
	r.dest = dest
	return r.CollectableRow.Scan(dest...)
}

// mustCopyByValue panics unless a value of t, copied, shares no memory a later scan into the
// original writes: no slice or map, in t or in a struct it embeds. (A scan gives a pointer
// field a new target; strings are immutable.)
func mustCopyByValue(t reflect.Type) {
	for i := range t.NumField() {
		switch f := t.Field(i); f.Type.Kind() {
		case reflect.Slice, reflect.Map:
			panic(fmt.Sprintf("store: row type %s: field %s (%s) could share memory between rows", t, f.Name, f.Type))
		case reflect.Struct:
			mustCopyByValue(f.Type)
		}
	}
}

// each is a row callback (queryBatch, queryRows) that reads each row by name and hands it to use.
func (q readQuery[T]) each(use func(T)) func(rowScanner) error {
	return func(r rowScanner) error {
		v, err := q.row(r)
		if err != nil {
			return err
		}
		use(v)
		return nil
	}
}

// batch is q bound to args as one statement of queryBatch; use gets each row.
func (q readQuery[T]) batch(args pgx.StrictNamedArgs, use func(T)) batchQuery {
	return batchQuery{q.sql, named(args), q.each(use)}
}

// call is q bound to positional args as one statement of queryBatch; use gets each row.
func (q readQuery[T]) call(args []any, use func(T)) batchQuery {
	return batchQuery{q.sql, args, q.each(use)}
}

// all reads every row of a Query's result (with its error) by name, closing it.
func (q readQuery[T]) all(rows pgx.Rows, err error) ([]T, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByName[T])
}

// one reads the first row of a Query's result by name, as QueryRow would: pgx.ErrNoRows when
// there is none.
func (q readQuery[T]) one(rows pgx.Rows, err error) (T, error) {
	if err != nil {
		var zero T
		return zero, err
	}
	return pgx.CollectOneRow(rows, pgx.RowToStructByName[T])
}

// readAll runs q with args and converts each row with conv (queryAll).
func readAll[R, T any](ctx context.Context, s *Store, q readQuery[R], args pgx.StrictNamedArgs, conv func(R) T) ([]T, error) {
	return collect(ctx, s, q, named(args), conv)
}

// collect runs q with positional args and converts each row with conv (queryAll).
func collect[R, T any](ctx context.Context, s *Store, q readQuery[R], args []any, conv func(R) T) ([]T, error) {
	return queryAll(ctx, s, q.sql, args, func(r rowScanner, v *T) error {
		row, err := q.row(r)
		*v = conv(row)
		return err
	})
}

// named is the argument list of a statement with named parameters: pgx rewrites the @names
// into positional ones when a pgx.QueryRewriter is the first argument. No arguments for a
// statement without parameters.
func named(args pgx.StrictNamedArgs) []any {
	if args == nil {
		return nil
	}
	return []any{args}
}
