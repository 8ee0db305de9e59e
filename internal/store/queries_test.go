package store

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// rowCheck reads a row by column name into the row type the Go code reads a statement's rows
// into.
type rowCheck struct {
	sql  string
	read func(rowScanner) error
}

func rowsOf[T any](q readQuery[T]) rowCheck {
	return rowCheck{q.sql, func(r rowScanner) error { _, err := q.row(r); return err }}
}

// readQueries are the statements of sql/queries whose rows the Go code reads, each through the
// variable the code uses, so with the row type it reads them into.
var readQueries = []rowCheck{
	rowsOf(sqlStatusCounts), rowsOf(sqlStatusQueueList), rowsOf(sqlStatusTopErrors), rowsOf(sqlStatusThrough),
	rowsOf(sqlStatusWindow), rowsOf(sqlStatusWorkers), rowsOf(sqlStatusQueue), rowsOf(sqlQueueExists),
	rowsOf(sqlStatusMessages), rowsOf(sqlStatusAnalytics), rowsOf(sqlDatabaseIdentity),
	rowsOf(sqlAnalyticsWorkers), rowsOf(sqlAnalyticsQueues), rowsOf(sqlAnalyticsOther), rowsOf(sqlAnalyticsParked),
	rowsOf(sqlAnalyticsDepth), rowsOf(sqlTopTraffic), rowsOf(sqlTopLag), rowsOf(sqlTopRemoved),
	rowsOf(sqlAnalyticsRetention), rowsOf(sqlRetentionTotals), rowsOf(sqlPostgresDatabase), rowsOf(sqlPostgresTables),
	rowsOf(sqlXminOldest), rowsOf(sqlXminReplication),
	rowsOf(sqlTryLock), rowsOf(sqlUnlock), rowsOf(sqlLeaseTake), rowsOf(sqlLeaseRenew), rowsOf(sqlLeaseRelease),
	rowsOf(sqlJobClaim), rowsOf(sqlRetentionBatch), rowsOf(sqlEvictionBatch),
	rowsOf(sqlSegmentRotate), rowsOf(sqlSegmentsDue), rowsOf(sqlSegmentDrop),
	rowsOf(sqlTombstoneSegsDue), rowsOf(sqlTombstoneSegDrop),
	rowsOf(sqlLeaseHousekeeping), rowsOf(sqlCleanupTombstones), rowsOf(sqlCleanupPartitions), rowsOf(sqlShortestRetention),
	rowsOf(sqlCleanupHistory), rowsOf(sqlStatsPartitions), rowsOf(sqlStatsRollup),
	rowsOf(sqlMetricsCluster), rowsOf(sqlStreamSourceQueue),
}

// callRows are the SQL function calls whose rows the Go code reads by name (callOf), each
// through the variable the code uses.
var callRows = []rowCheck{
	rowsOf(pushRows), rowsOf(popRows), rowsOf(ackRows), rowsOf(ackOneRows), rowsOf(ackManyRows),
	rowsOf(clearTargetRows), rowsOf(clearBatchRows), rowsOf(dlqCopySourceRows), rowsOf(dlqCopyRows),
	rowsOf(groupSummaryRows), rowsOf(laggingPairRows), rowsOf(groupPairRows),
	rowsOf(listedMessageRows), rowsOf(messageDetailRows), rowsOf(messageConsumerRows), rowsOf(dlqEntryRows),
	rowsOf(moveToDLQRows), rowsOf(partitionRows), rowsOf(queueSummaryRows),
	rowsOf(redeliverRows), rowsOf(redeliverMatchingRows), rowsOf(messageRetryRows),
	rowsOf(labelSummaryRows), rowsOf(overviewRows), rowsOf(traceRows), rowsOf(namedTraceRows), rowsOf(traceNameRows),
	rowsOf(hotSetRows), rowsOf(jobSummaryRows), rowsOf(jobInstanceRows), rowsOf(partitionStatusRows),
}

// execQueries are the statements of sql/queries run for their effect, their rows not read.
var execQueries = []string{sqlAdminCustomPlans, sqlMetricsFlush}

// describedRow is a row with the columns PostgreSQL describes for a statement and no values:
// pgx.RowToStructByName matches the columns to the fields of its struct by name before it
// scans anything, so this row fails exactly where a result of the statement would.
type describedRow struct {
	fields []pgconn.FieldDescription
	t      *testing.T
	label  string
}

func (r describedRow) FieldDescriptions() []pgconn.FieldDescription { return r.fields }
func (describedRow) Values() ([]any, error)                         { return nil, nil }
func (describedRow) RawValues() [][]byte                            { return nil }
func (r describedRow) Scan(dest ...any) error {
	if len(dest) != len(r.fields) {
		r.t.Errorf("%s: %d scan targets for %d columns", r.label, len(dest), len(r.fields))
	}
	return nil
}

// A renamed column fails here, not in production: every statement of sql/queries is described
// by PostgreSQL against a migrated schema, and its columns are read by name into the row type
// of the variable the Go code runs it through. A column without a field, or a field without a
// column (an alias renamed in a .sql file or a db tag renamed in Go), is an error of
// pgx.RowToStructByName. Every statement is either read that way or listed as run for its
// effect.
func TestQueryRowsScanByName(t *testing.T) {
	names := map[string]string{} // statement text -> name
	for name, q := range queries {
		names[q] = name
	}
	checked := map[string]bool{}
	for _, c := range readQueries {
		name, ok := names[c.sql]
		if !ok {
			t.Fatalf("a readQueries entry is not a statement of sql/queries: %.60s", c.sql)
		}
		checked[name] = true
	}
	for _, q := range execQueries {
		checked[names[q]] = true
	}
	for name := range queries {
		if !checked[name] {
			t.Errorf("query %q: neither in readQueries (with the row type its rows are read into) nor in execQueries", name)
		}
	}

	ctx := context.Background()
	s := migratedSchema(t, "query_rows")
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	describe := func(sql string) []pgconn.FieldDescription {
		// The unnamed statement: each Prepare replaces the previous one, nothing to deallocate.
		sd, err := c.Conn().PgConn().Prepare(ctx, "", positional(t, sql), nil)
		if err != nil {
			t.Fatalf("query %s: %v", names[sql], err)
		}
		return sd.Fields
	}
	for _, rc := range readQueries {
		name := names[rc.sql]
		fields := describe(rc.sql)
		if err := rc.read(describedRow{fields, t, name}); err != nil {
			t.Errorf("query %s: columns %s: %v", name, columnNames(fields), err)
		}
	}

	// The check sees a rename: status_counts with one column renamed, and with one left out.
	fields := describe(sqlStatusCounts.sql)
	renamed := slices.Clone(fields)
	renamed[0].Name = "total_renamed"
	if _, err := sqlStatusCounts.row(describedRow{renamed, t, "renamed"}); err == nil {
		t.Errorf("a renamed column of status_counts was read without error")
	}
	if _, err := sqlStatusCounts.row(describedRow{fields[1:], t, "shortened"}); err == nil {
		t.Errorf("status_counts without its first column was read without error")
	}
}

// The SQL function calls are read by name too: each call text (its $n parameters typed by
// the function's signature) is described by PostgreSQL against a migrated schema and its
// columns read into the row type of the variable the Go code reads it through, so a column
// renamed in a function's RETURNS TABLE, or a field's db tag renamed, fails here. Every
// callOf variable of the package is in callRows.
func TestCallRowsScanByName(t *testing.T) {
	listed := map[string]bool{}
	for _, name := range callRowsListed(t) {
		listed[name] = true
	}
	for _, v := range callOfVars(t) {
		if !listed[v] {
			t.Errorf("%s is a callOf statement not in callRows", v)
		}
	}

	ctx := context.Background()
	s := migratedSchema(t, "call_rows")
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	describe := func(sql string) []pgconn.FieldDescription {
		sd, err := c.Conn().PgConn().Prepare(ctx, "", sql, nil)
		if err != nil {
			t.Fatalf("%.60s: %v", sql, err)
		}
		return sd.Fields
	}
	for _, rc := range callRows {
		fields := describe(rc.sql)
		label := strings.Join(strings.Fields(rc.sql), " ")
		if err := rc.read(describedRow{fields, t, label}); err != nil {
			t.Errorf("%.70s: columns %s: %v", label, columnNames(fields), err)
		}
	}

	// The check sees a rename: qg_push's rows with one column renamed, and with one left out.
	fields := describe(pushRows.sql)
	renamed := slices.Clone(fields)
	renamed[2].Name = "message_id"
	if _, err := pushRows.row(describedRow{renamed, t, "renamed"}); err == nil {
		t.Errorf("a renamed column of qg_push was read without error")
	}
	if _, err := pushRows.row(describedRow{fields[1:], t, "shortened"}); err == nil {
		t.Errorf("qg_push's rows without their first column were read without error")
	}
}

// A reader reads each row of a result by name, the first through pgx.RowToAddrOfStructByName
// and the later ones into the scan targets it kept: columns in another order than the fields,
// NULL and non-NULL values of pointer fields alternating, and every row read before any is
// looked at, so a value shared between rows (a pointer reused by the next scan) would show.
func TestReaderReadsEachRowByName(t *testing.T) {
	type row struct {
		N    int     `db:"n"`
		Text *string `db:"text"`
		At   *int64  `db:"at"`
	}
	ctx := context.Background()
	s := migratedSchema(t, "reader_rows")
	read := callOf[row]("").reader()
	var got []row
	err := s.queryRows(ctx, `SELECT CASE WHEN i % 2 = 0 THEN NULL ELSE i * 10 END::int8 AS at,
		CASE WHEN i % 3 = 0 THEN NULL ELSE 'row ' || i END AS text, i AS n FROM generate_series(1, 7) i`, nil,
		func(r rowScanner) error {
			v, err := read(r)
			got = append(got, v)
			return err
		})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 7 {
		t.Fatalf("%d rows, want 7", len(got))
	}
	for i, r := range got {
		n := i + 1
		if r.N != n {
			t.Errorf("row %d: n = %d", n, r.N)
		}
		if wantText := fmt.Sprintf("row %d", n); (n%3 == 0) != (r.Text == nil) || (r.Text != nil && *r.Text != wantText) {
			t.Errorf("row %d: text = %v, want %q (NULL when n %% 3 = 0)", n, ptrValue(r.Text), wantText)
		}
		if (n%2 == 0) != (r.At == nil) || (r.At != nil && *r.At != int64(n*10)) {
			t.Errorf("row %d: at = %v, want %d (NULL when n is even)", n, ptrValue(r.At), n*10)
		}
	}

	// A row type with a slice could share its backing array between rows: refused.
	defer func() {
		if recover() == nil {
			t.Errorf("reader of a row type with a slice field did not panic")
		}
	}()
	callOf[struct {
		IDs []string `db:"ids"`
	}]("").reader()
}

// ptrValue is *p, nil for a nil p.
func ptrValue[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// No row is read by position past two columns: a Scan with three or more targets, or queryOne
// with three or more, is a row type's job (readQuery).
func TestNoPositionalScans(t *testing.T) {
	for _, f := range packageFiles(t) {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				switch {
				case sel.Sel.Name == "Scan" && len(call.Args) >= 3:
					t.Errorf("%s: Scan of %d columns by position; read the row by name (callOf, queryOf)", fn.Name.Name, len(call.Args))
				case sel.Sel.Name == "queryOne" && len(call.Args) >= 6:
					t.Errorf("%s: queryOne of %d columns by position; read the row by name (callOf, queryOf)", fn.Name.Name, len(call.Args)-3)
				}
				return true
			})
		}
	}
}

// callOfVars are the package's variables initialised with callOf[T](...).
func callOfVars(t *testing.T) []string {
	var out []string
	for _, f := range packageFiles(t) {
		ast.Inspect(f, func(n ast.Node) bool {
			spec, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, v := range spec.Values {
				call, ok := v.(*ast.CallExpr)
				if !ok {
					continue
				}
				if ix, ok := call.Fun.(*ast.IndexExpr); ok {
					if id, ok := ix.X.(*ast.Ident); ok && id.Name == "callOf" && i < len(spec.Names) {
						out = append(out, spec.Names[i].Name)
					}
				}
			}
			return true
		})
	}
	return out
}

// callRowsListed are the variables callRows checks, read from this file.
func callRowsListed(t *testing.T) []string {
	f, err := parser.ParseFile(token.NewFileSet(), "queries_test.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok || len(spec.Names) != 1 || spec.Names[0].Name != "callRows" {
			return true
		}
		ast.Inspect(spec, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok && len(call.Args) == 1 {
				if fn, ok := call.Fun.(*ast.Ident); ok && fn.Name == "rowsOf" {
					if arg, ok := call.Args[0].(*ast.Ident); ok {
						out = append(out, arg.Name)
					}
				}
			}
			return true
		})
		return false
	})
	if len(out) != len(callRows) {
		t.Fatalf("read %d entries of callRows from queries_test.go, it has %d", len(out), len(callRows))
	}
	return out
}

func columnNames(fields []pgconn.FieldDescription) string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f.Name
	}
	return strings.Join(out, ", ")
}

// positional is q with its @names replaced by $1, $2, … in order of first use, as pgx sends
// it when a pgx.StrictNamedArgs is its argument.
func positional(t *testing.T, q string) string {
	t.Helper()
	sql, _, err := pgx.NamedArgs{}.RewriteQuery(context.Background(), nil, q, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sql
}

var (
	positionalParam = regexp.MustCompile(`\$\d`)
	namedParam      = regexp.MustCompile(`\bp_(\w+)\s*=>\s*@(\w+)`)
)

// The statements of sql/queries bind by name: no $n placeholder, and a function parameter
// gets the @name it is named after (p_limit => @limit), as a parameter struct's fields are
// named after theirs (TestSQLCallsBindEachFieldToItsParameter).
func TestQueriesBindByName(t *testing.T) {
	for name, q := range queries {
		if p := positionalParam.FindString(q); p != "" {
			t.Errorf("query %s: positional placeholder %s…; name it (@name, bound by pgx.StrictNamedArgs)", name, p)
		}
		for _, m := range namedParam.FindAllStringSubmatch(q, -1) {
			if m[1] != m[2] {
				t.Errorf("query %s: p_%s => @%s; name the argument after its parameter", name, m[1], m[2])
			}
		}
	}
}

// A named argument holding U+0000 matches nothing, as a positional one does: the lookup answers
// "not found" without a round trip (PostgreSQL text cannot hold it).
func TestMatchesNothingLooksInsideNamedArgs(t *testing.T) {
	for _, c := range []struct {
		args []any
		want bool
	}{
		{[]any{"a\x00b"}, true},
		{[]any{"ab", nil}, false},
		{named(pgx.StrictNamedArgs{"queue": "a\x00b", "limit": 10}), true},
		{named(pgx.StrictNamedArgs{"queue": "ab", "task": nil}), false},
		{[]any{pgx.NamedArgs{"queue": "\x00"}}, true},
		{named(nil), false},
	} {
		if got := matchesNothing(c.args); got != c.want {
			t.Errorf("matchesNothing(%v) = %v, want %v", c.args, got, c.want)
		}
	}
	// A store without a pool: reaching the database would panic.
	out, found, err := (&Store{}).StatusQueueMessages(context.Background(), "a\x00b", 10, 0)
	if out != nil || found || err != nil {
		t.Errorf("StatusQueueMessages of a name with U+0000: %v, %v, %v; want nothing found", out, found, err)
	}
}
