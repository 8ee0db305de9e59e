package lifecycle_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// goStatements are the places a bare go statement may start a goroutine in the shipped code
// (internal/ and cmd/, test files aside), by file and function ("Type.method" for a method;
// "*" for any function of the file). Every other goroutine is started with a part's
// lifecycle Go, so its Stop ends and waits for it. Each entry is a row of the goroutine table
// in docs/design.md ("Goroutines: who starts them, who stops them"): a new go statement needs a
// row there and an entry here.
var goStatements = map[string][]string{
	// The one place a part's goroutines start: Stop cancels their context and waits for them.
	"internal/lifecycle/lifecycle.go": {"StartStop.Go"},
	// The store's outage tracker: the probe run on demand and the repeating probe of an
	// outage, counted in its WaitGroup and waited for by Store.Close. The whole file, whatever
	// its functions are called.
	"internal/store/outage.go": {"*"},
	// The embedded PostgreSQL: the child is started (and waited for) on a goroutine locked to
	// its OS thread, so the child's parent-death signal follows the process, not a thread the
	// runtime may retire; it ends when the server exits (Server.Stop).
	"internal/embeddedpg/server.go": {"StartLocked"},
	// Test clusters (standbys, poolers): a command's Wait beside its deadline (run), and a
	// server started on a locked OS thread as above (launch); each ends when its child exits.
	"internal/pgcluster/pgcluster.go": {"run"},
	// A crash's pg_ctl stop, run beside the wait that kills a stalled walsender; Crash waits for it.
	"internal/pgcluster/cluster.go": {"Cluster.Crash"},
	// queen import-queen, a command rather than a part of the broker: its progress line, ended
	// by the run's stop; the source's COPY TO feeding the target's COPY FROM, waited for by pipe.
	"internal/importer/report.go": {"startProgress"},
	"internal/importer/run.go":    {"run.pipe"},
	// The load generator (queen-bench), a client process rather than a part of the broker:
	// workers of a measured phase, waited for by measure and prefill; the progress line and
	// the /proc sampler, ended by their stop channel; the same-run baseline's workers; the
	// open-loop producers of e2e and streams-window, ended by the phase's deadline.
	"internal/bench/run.go":            {"runner.measure", "runner.progress"},
	"internal/bench/scenarios.go":      {"runner.prefill"},
	"internal/bench/scenarios_more.go": {"runner.e2e"},
	"internal/bench/streams.go":        {"runner.streamsWindow"},
	"internal/bench/proc.go":           {"startSampler"},
	"internal/bench/baseline.go":       {"baselines.loop"},
}

// No go statement in internal/ or cmd/ (test files aside) outside goStatements: a goroutine
// started anywhere else is one no Stop waits for.
func TestGoStatementsOnlyWhereTheTableAllows(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	seen := map[string]bool{}
	for _, dir := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if name := d.Name(); name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			for _, fn := range goFuncs(f) {
				seen[rel+" "+fn] = true
				allowed, listed := goStatements[rel]
				if !listed || !(slices.Contains(allowed, fn) || slices.Contains(allowed, "*")) {
					t.Errorf("%s: a go statement in %s; start it with a part's lifecycle Go, or add it to the goroutine table (docs/design.md) and to goStatements", rel, fn)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// An entry no go statement uses any more is a row of the table describing nothing.
	for file, fns := range goStatements {
		for _, fn := range fns {
			if fn != "*" && !seen[file+" "+fn] {
				t.Errorf("goStatements lists %s %s, which starts no goroutine: remove it (and its row in docs/design.md)", file, fn)
			}
		}
	}
}

// goFuncs names the function of each go statement of f ("Type.method" or "func"), once per
// statement; go statements inside function literals count for the function around them.
func goFuncs(f *ast.File) []string {
	var out []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		name := fd.Name.Name
		if fd.Recv != nil && len(fd.Recv.List) > 0 {
			name = recvType(fd.Recv.List[0].Type) + "." + name
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if _, ok := n.(*ast.GoStmt); ok {
				out = append(out, name)
			}
			return true
		})
	}
	// Package-level go statements cannot exist (a go statement is a statement), but a
	// function literal in a var initialiser can hold one.
	for _, d := range f.Decls {
		if gd, ok := d.(*ast.GenDecl); ok {
			ast.Inspect(gd, func(n ast.Node) bool {
				if _, ok := n.(*ast.GoStmt); ok {
					out = append(out, "package-level var")
				}
				return true
			})
		}
	}
	return out
}

// recvType is a receiver's type name without pointer or type parameters.
func recvType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return recvType(e.X)
	case *ast.IndexExpr:
		return recvType(e.X)
	case *ast.IndexListExpr:
		return recvType(e.X)
	case *ast.Ident:
		return e.Name
	}
	return fmt.Sprintf("%T", e)
}
