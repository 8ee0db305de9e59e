package store

import (
	"bufio"
	"embed"
	"fmt"
	"io/fs"
	"strings"
)

// Plain statements of the background jobs and of the status, analytics and metrics reads live
// in sql/queries/*.sql. Each statement starts after a line "-- name: <name>" and runs to the
// next such line; the comment lines before a marker document the statement below it.
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
