package config

import (
	"bufio"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The prose checks live beside TestOperationsTableListsEveryVariable, the other test that reads
// the docs, since no package owns README.md or docs/*.md.

// repoRoot is the repository's root seen from this package's directory.
const repoRoot = "../.."

// processWording is how the work that wrote this tree was organised, words that mean nothing to
// a reader, who has dates and commits instead: a work session named by its number or its rank,
// an issue or an item named by its number (with or without "#"), an item of work called so, and
// a numbered phase, sprint, milestone or iteration. TestWordingPatterns lists the forms. An
// upstream issue is named by its repository and number joined by "#", which this does not match.
var processWording = regexp.MustCompile(`(?i)\bsessions? #?[0-9]+\b` +
	`|\bthe (first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|previous|next|last) session\b` +
	`|\b(during|in|since|from|before|after|by) this session\b` +
	`|\bissues? #?[0-9]+\b|\bitems? #?[0-9]+\b|\bwork[- ]items?\b` +
	`|\b(phase|sprint|milestone|iteration|work period)s? #?[0-9]+\b`)

// datedHeading is a Markdown heading that names a date, as an ISO date or a month and a day: a
// heading says what a section is; a measurement carries its date in the text.
var datedHeading = regexp.MustCompile(`^#{1,6}\s.*(\b[0-9]{4}-[0-9]{2}(-[0-9]{2})?\b|` +
	`(?i:\b(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\.? [0-9]{1,2}\b))`)

// TestDocsNameDatesNotSessions: the docs (README.md, docs/ and bench/, its history included) and the code's
// comments describe what is, not how it came to be: no names of the sessions, issues, items or
// periods the work was organised in, and no dated headings. Measurements carry their date, and changes their commit, in the text.
func TestDocsNameDatesNotSessions(t *testing.T) {
	docs := []string{"README.md"}
	docs = append(docs, walk(t, "bench", ".md")...)
	docs = append(docs, walk(t, "docs", ".md")...)
	for _, f := range docs {
		for i, line := range strings.Split(read(t, f), "\n") {
			if m := processWording.FindString(line); m != "" {
				t.Errorf("%s:%d: %q: say what is, or name a date or a commit", f, i+1, m)
			}
			if datedHeading.MatchString(line) {
				t.Errorf("%s:%d: a heading names a date; date the measurement in the text: %s", f, i+1, line)
			}
		}
	}
	if len(docs) < 10 {
		t.Fatalf("read %d documents; the walk is broken", len(docs))
	}
}

// TestCodeCommentsNameNoWorkItems holds the comments of the code to the same rule: Go files
// (tests included) and SQL files under internal/, cmd/, client/, scripts/ and deploy/, the shell
// scripts there, .ci/run and the Makefile. Only comments are read: a test's message about the
// third item of a request is a string, and says nothing of how the work was organised.
func TestCodeCommentsNameNoWorkItems(t *testing.T) {
	var files []string
	for _, dir := range []string{"internal", "cmd", "client", "scripts", "deploy"} {
		files = append(files, walk(t, dir, ".go", ".sql", ".sh")...)
	}
	files = append(files, ".ci/run", "Makefile")
	counts := map[string]int{}
	for _, f := range files {
		var comments []comment
		switch {
		case strings.HasSuffix(f, ".go"):
			comments = goComments(t, f)
		case strings.HasSuffix(f, ".sql"):
			comments = lineComments(read(t, f), "--")
		default:
			comments = lineComments(read(t, f), "#")
		}
		counts[filepath.Ext(f)]++
		for _, c := range comments {
			if m := processWording.FindString(c.text); m != "" {
				t.Errorf("%s:%d: %q in a comment: say what the rule is, or name a date or a commit", f, c.line, m)
			}
		}
	}
	if counts[".go"] < 100 || counts[".sql"] < 20 || counts[".sh"] < 2 {
		t.Fatalf("read %v files by extension; the walk is broken", counts)
	}
}

// TestWordingPatterns: the patterns catch each form named above and leave alone the ordinary
// uses of the same words.
func TestWordingPatterns(t *testing.T) {
	for _, s := range []string{"session 4", "Session 7", "the third session", "issue 23", "issue #23",
		"issues 15", "item 4", "work item", "work-items", "phase 2", "Sprint 3", "(issue 24, item 4)"} {
		if !processWording.MatchString(s) {
			t.Errorf("processWording misses %q", s)
		}
	}
	for _, s := range []string{"its second session with SQLSTATE 53300", "This session's table counters",
		"sqlc-dev/sqlc#4103", "the item's status", "each item of the batch", "step 6", "an issue with"} {
		if processWording.MatchString(s) {
			t.Errorf("processWording matches %q", s)
		}
	}
	for _, s := range []string{"## Push calls (issue 15, 2026-12-01)", "### Results, 2026-12", "## December 3 runs"} {
		if !datedHeading.MatchString(s) {
			t.Errorf("datedHeading misses %q", s)
		}
	}
	for _, s := range []string{"## Results on this machine", "measured 2026-12-03", "## Group commit for consumers"} {
		if datedHeading.MatchString(s) {
			t.Errorf("datedHeading matches %q", s)
		}
	}
}

// comment is one comment line (or a block comment's text) and the line it starts on.
type comment struct {
	line int
	text string
}

// goComments returns every comment of a Go file, as the Go scanner finds them (never a string).
func goComments(t *testing.T, f string) []comment {
	src := []byte(read(t, f))
	fset := token.NewFileSet()
	var s scanner.Scanner
	s.Init(fset.AddFile(f, -1, len(src)), src, nil, scanner.ScanComments)
	var out []comment
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			return out
		}
		if tok == token.COMMENT {
			out = append(out, comment{fset.Position(pos).Line, lit})
		}
	}
}

// lineComments returns the text after marker on each line (SQL's "--", the shell's and make's
// "#"), where the marker starts the line or follows a space. A marker inside a string is read
// as a comment too, which at worst asks for a string to be reworded.
func lineComments(src, marker string) []comment {
	var out []comment
	sc := bufio.NewScanner(strings.NewReader(src))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		i := strings.Index(line, marker)
		for i > 0 && line[i-1] != ' ' && line[i-1] != '\t' {
			j := strings.Index(line[i+len(marker):], marker)
			if j < 0 {
				i = -1
				break
			}
			i += len(marker) + j
		}
		if i >= 0 {
			out = append(out, comment{n, line[i+len(marker):]})
		}
	}
	return out
}

// walk lists the files under dir (relative to the root) whose names end in one of exts, as
// paths relative to the root; dependencies and build output are not the tree's words.
func walk(t *testing.T, dir string, exts ...string) []string {
	var out []string
	err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", "dist":
				return filepath.SkipDir
			}
			return nil
		}
		for _, e := range exts {
			if strings.HasSuffix(p, e) {
				rel, err := filepath.Rel(repoRoot, p)
				if err != nil {
					return err
				}
				out = append(out, filepath.ToSlash(rel))
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func read(t *testing.T, f string) string {
	b, err := os.ReadFile(filepath.Join(repoRoot, f))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReadmeStatesTheFirstBuildsCost: "the first build takes a minute" took 4 to 6 minutes on a
// fresh machine; the README says what a first build costs (downloads and compile time) as
// measured.
func TestReadmeStatesTheFirstBuildsCost(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if strings.Contains(readme, "takes a minute") {
		t.Error(`README.md still says the first build "takes a minute"`)
	}
	for _, want := range []string{"The first `make build` on a machine with empty Go caches downloads", "MB of modules", "CPU-minutes"} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md does not say %q", want)
		}
	}
}
