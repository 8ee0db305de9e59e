package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The prose checks live beside TestOperationsTableListsEveryVariable, the other test that reads
// the docs, since no package owns README.md or docs/*.md.

// sessionWording is how the work sessions that wrote this tree were named ("session 4", "the
// third session"): words that mean nothing to a reader, who has dates and commits instead.
var sessionWording = regexp.MustCompile(`(?i)\bsessions? [0-9]+\b|\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|this) session\b`)

// TestDocsNameDatesNotSessions: README.md and docs/ date their measurements and changes, or name
// commits; bench/README.md is reference like them, and bench/HISTORY.md, the dated record of
// those measurements, is left as it was written.
func TestDocsNameDatesNotSessions(t *testing.T) {
	files := []string{"../../README.md", "../../bench/README.md"}
	for _, pattern := range []string{"../../docs/*.md", "../../docs/api/*.md"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := sessionWording.FindString(line); m != "" {
				t.Errorf("%s:%d: %q: name a date or a commit", strings.TrimPrefix(f, "../../"), i+1, m)
			}
		}
	}
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
