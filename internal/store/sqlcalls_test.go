package store

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// sqlCalls pairs every parameter struct (sqlCall) with the call text it binds.
var sqlCalls = []struct {
	sql  string
	call sqlCall
}{
	{sqlPush, pushArgs{}},
	{sqlPop, popArgs{}},
	{sqlAck, ackArgs{}},
	{sqlAckOne, ackOneArgs{}},
	{sqlAckMany, ackManyArgs{}},
	{sqlTransaction, txnArgs{}},
	{sqlTransactionMany, txnManyArgs{}},
	{sqlConfigure, configureArgs{}},
	{sqlListMessages, listMessagesArgs{}},
	{sqlDLQCount, dlqMatchArgs{}},
	{sqlListDLQ, listDLQArgs{}},
	{sqlDLQDeleteMatching, dlqDeleteMatchingArgs{}},
	{sqlPartitionsTotal, partitionsMatchArgs{}},
	{sqlListPartitions, listPartitionsArgs{}},
	{sqlClearBatch, clearBatchArgs{}},
	{sqlMoveToDLQ, moveToDLQArgs{}},
	{sqlAddTrace, addTraceArgs{}},
	{sqlSetMaintenanceMode, setMaintenanceArgs{}},
	{sqlDLQRedeliverMatching, dlqRedeliverMatchingArgs{}},
	{sqlMessageRetry, messageRetryArgs{}},
	{sqlDLQCopySources, dlqCopySourcesArgs{}},
	{sqlDLQCopy, dlqCopyArgs{}},
	{sqlStreamRegister, streamRegisterArgs{}},
	{sqlStreamCycle, streamCycleArgs{}},
	{sqlStreamState, streamStateArgs{}},
	{sqlQueuesTotal, queuesMatchArgs{}},
	{sqlListQueues, listQueuesArgs{}},
	{sqlQueuePartitionPage, queuePartitionPageArgs{}},
	{sqlConsumerGroups, consumerGroupsArgs{}},
	{sqlLaggingPairs, laggingPairsArgs{}},
	{sqlDLQRedeliverMatching, dlqRedeliverMatchingArgs{}},
	{sqlMessageRetry, messageRetryArgs{}},
	{sqlDLQCopySources, dlqCopySourcesArgs{}},
	{sqlDLQCopy, dlqCopyArgs{}},
	{sqlRecordJobRun, recordJobRunArgs{}},
	{sqlListLabels, listLabelsArgs{}},
}

var (
	namedArg    = regexp.MustCompile(`\b(p_\w+)\s*=>\s*\$(\d+)\b`)
	placeholder = regexp.MustCompile(`\$\d+\b`)
)

// Each parameter struct binds its n-th field to $n, and the call text passes $n to the
// parameter that field is named after. (PostgreSQL itself checks that the parameter names
// exist: see TestStatementsPrepare.)
func TestSQLCallsBindEachFieldToItsParameter(t *testing.T) {
	for _, c := range sqlCalls {
		typ := reflect.TypeOf(c.call)
		fields := paramFields(typ)
		named := namedArg.FindAllStringSubmatch(c.sql, -1)
		if len(named) != len(fields) || len(placeholder.FindAllString(c.sql, -1)) != len(named) {
			t.Errorf("%s: %d fields, %d named arguments, %d placeholders in %s", typ.Name(), len(fields), len(named),
				len(placeholder.FindAllString(c.sql, -1)), c.sql)
			continue
		}
		for k, m := range named {
			if m[2] != strconv.Itoa(k+1) {
				t.Errorf("%s: argument %d of the call text is $%s, want $%d", typ.Name(), k+1, m[2], k+1)
			}
			if want := strings.ReplaceAll(strings.TrimPrefix(m[1], "p_"), "_", ""); strings.ToLower(fields[k].Name) != want {
				t.Errorf("%s: field %d is %s, but $%d goes to %s", typ.Name(), k+1, fields[k].Name, k+1, m[1])
			}
		}
		// With only field k set, args must set argument k and no other.
		for k, f := range fields {
			v := reflect.New(typ).Elem()
			v.FieldByIndex(f.Index).Set(nonZero(f.Type))
			got := v.Interface().(sqlCall).args()
			if len(got) != len(fields) {
				t.Errorf("%s: args gives %d values for %d fields", typ.Name(), len(got), len(fields))
				break
			}
			for i, a := range got {
				if set := a != nil && !reflect.ValueOf(a).IsZero(); set != (i == k) {
					t.Errorf("%s: with only %s set, argument %d set = %v", typ.Name(), f.Name, i+1, set)
				}
			}
		}
	}
}

// paramFields are a parameter struct's fields in order, those of an embedded struct in its place.
func paramFields(typ reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for _, f := range reflect.VisibleFields(typ) {
		if !f.Anonymous {
			out = append(out, f)
		}
	}
	return out
}

// nonZero is some value of type t other than its zero value.
func nonZero(t reflect.Type) reflect.Value {
	v := reflect.New(t).Elem()
	switch t.Kind() {
	case reflect.Slice:
		v.Set(reflect.MakeSlice(t, 1, 1))
	case reflect.Pointer:
		v.Set(reflect.New(t.Elem()))
	case reflect.Interface:
		v.Set(reflect.ValueOf(1))
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Struct:
		v.Field(0).Set(nonZero(t.Field(0).Type))
	default:
		panic("nonZero: no value for " + t.String())
	}
	return v
}

// Every type with an args method is in sqlCalls, so the test above sees it.
func TestEveryParameterStructIsChecked(t *testing.T) {
	listed := map[string]bool{}
	for _, c := range sqlCalls {
		listed[reflect.TypeOf(c.call).Name()] = true
	}
	for _, f := range packageFiles(t) {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Name.Name != "args" {
				continue
			}
			recv, _ := fn.Recv.List[0].Type.(*ast.Ident)
			if recv == nil || !listed[recv.Name] {
				t.Errorf("%s has an args method but is not in sqlCalls", recvName(fn.Recv.List[0].Type))
			}
		}
	}
}

func recvName(e ast.Expr) string {
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return "a receiver"
}

// Every statement of sql/queries is used: query("name") or queryOf[T]("name") initialises a
// variable that some code reads (or is called where the statement runs).
func TestNamedQueriesAreUsed(t *testing.T) {
	used := map[string]bool{}
	vars := map[string]string{} // variable -> statement name
	refs := map[string]int{}    // identifier -> occurrences, its declaration included
	for _, f := range packageFiles(t) {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for i, v := range n.Values {
					if name, ok := queryCall(v); ok && i < len(n.Names) {
						vars[n.Names[i].Name] = name
					}
				}
			case *ast.CallExpr:
				if name, ok := queryCall(n); ok {
					used[name] = true // provisionally; a variable must also be read
				}
			case *ast.Ident:
				refs[n.Name]++
			}
			return true
		})
	}
	for v, name := range vars {
		if refs[v] < 2 {
			t.Errorf("query %q: variable %s is never read", name, v)
			used[name] = false
		}
	}
	for name := range queries {
		if !used[name] {
			t.Errorf("query %q in sql/queries is not used by any Go code", name)
		}
	}
}

// queryCall reports the statement name of an expression query("name") or queryOf[T]("name").
func queryCall(e ast.Node) (string, bool) {
	call, ok := e.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return "", false
	}
	fun := call.Fun
	if ix, ok := fun.(*ast.IndexExpr); ok {
		fun = ix.X
	}
	if fn, ok := fun.(*ast.Ident); !ok || (fn.Name != "query" && fn.Name != "queryOf") {
		return "", false
	}
	lit, ok := call.Args[0].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	name, err := strconv.Unquote(lit.Value)
	return name, err == nil
}

// packageFiles parses the package's non-test Go files.
func packageFiles(t *testing.T) []*ast.File {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []*ast.File
	fset := token.NewFileSet()
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

// Every statement of sql/queries (its @names made positional, as pgx sends it) and every call
// text of a parameter struct is accepted by PostgreSQL against a migrated schema: a misspelt
// column, a dropped table or a parameter name the function does not have fails here, without
// running anything.
func TestStatementsPrepare(t *testing.T) {
	ctx := context.Background()
	s := migratedSchema(t, "prepare_statements")
	stmts := map[string]string{}
	for name, q := range queries {
		stmts["query "+name] = positional(t, q)
	}
	for _, c := range sqlCalls {
		stmts[reflect.TypeOf(c.call).Name()] = c.sql
	}
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	labels := make([]string, 0, len(stmts))
	for l := range stmts {
		labels = append(labels, l)
	}
	slices.Sort(labels)
	for _, l := range labels {
		// The unnamed statement: each Prepare replaces the previous one, nothing to deallocate.
		if _, err := c.Conn().PgConn().Prepare(ctx, "", stmts[l], nil); err != nil {
			t.Errorf("%s: %v", l, err)
		}
	}
}
