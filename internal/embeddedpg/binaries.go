// Package embeddedpg runs a private PostgreSQL server from the PostgreSQL binaries installed on
// the machine, so that queen-go works out of the box when no database is configured
// (docs/api/operations.md §2.2). The server listens only on a Unix socket inside its data directory, so
// it never clashes with another PostgreSQL on the same machine.
package embeddedpg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// ErrNoBinaries reports that no usable PostgreSQL server binaries (version 14 or newer) were
// found. Its message is the one docs/api/operations.md §2.2 prescribes, so callers can print it as is.
var ErrNoBinaries = errors.New("no database configured and no PostgreSQL server binaries found " +
	"(looked in PG_BIN_DIR, PATH and the usual install directories); " +
	"install PostgreSQL 14 or newer, or set DATABASE_URL")

// minMajor is the oldest PostgreSQL major version queen-go's SQL is written for.
const minMajor = 14

// installPatterns are the usual install locations of Debian/Ubuntu, RHEL/Fedora (PGDG), source
// builds and Homebrew, in that order.
var installPatterns = []string{
	"/usr/lib/postgresql/*/bin",
	"/usr/pgsql-*/bin",
	"/usr/local/pgsql/bin",
	"/opt/homebrew/opt/postgresql@*/bin",
	"/usr/local/opt/postgresql@*/bin",
}

// version is a PostgreSQL server version such as 15.4.
type version struct{ major, minor int }

func (v version) newerThan(o version) bool {
	return v.major > o.major || (v.major == o.major && v.minor > o.minor)
}

func (v version) String() string { return fmt.Sprintf("%d.%d", v.major, v.minor) }

// FindBinaries returns the directory that holds the initdb and postgres programs to use.
//
// An explicit pgBinDir (PG_BIN_DIR) is used as given and is an error when unusable: silently
// falling back to other binaries would hide a configuration mistake. Otherwise the programs on
// PATH win, then the newest version found in the usual install directories. Binaries older than
// PostgreSQL 14 are skipped. Every "not found" error wraps ErrNoBinaries.
func FindBinaries(pgBinDir string) (dir string, err error) {
	return findBinaries(pgBinDir, installPatterns)
}

func findBinaries(pgBinDir string, patterns []string) (string, error) {
	if pgBinDir != "" {
		if _, err := probe(pgBinDir); err != nil {
			return "", fmt.Errorf("PG_BIN_DIR %s: %v: %w", pgBinDir, err, ErrNoBinaries)
		}
		return pgBinDir, nil
	}
	if dir, ok := pathDir(); ok {
		if _, err := probe(dir); err == nil {
			return dir, nil
		}
	}
	best, bestVersion := "", version{}
	for _, pattern := range patterns {
		matches, _ := filepath.Glob(pattern) // the patterns are constant and well-formed
		for _, dir := range matches {
			v, err := probe(dir)
			if err == nil && (best == "" || v.newerThan(bestVersion)) {
				best, bestVersion = dir, v
			}
		}
	}
	if best == "" {
		return "", ErrNoBinaries
	}
	return best, nil
}

// pathDir returns the directory of the postgres program on PATH when initdb sits next to it;
// both are run from one directory, as initdb itself expects.
func pathDir() (string, bool) {
	postgres, err := exec.LookPath("postgres")
	if err != nil {
		return "", false
	}
	if _, err := exec.LookPath("initdb"); err != nil {
		return "", false
	}
	dir := filepath.Dir(postgres)
	if !isExecutable(filepath.Join(dir, "initdb")) {
		return "", false
	}
	return dir, true
}

// probe checks that dir holds initdb and postgres and that postgres is version 14 or newer.
func probe(dir string) (version, error) {
	for _, name := range []string{"initdb", "postgres"} {
		if !isExecutable(filepath.Join(dir, name)) {
			return version{}, fmt.Errorf("no executable %s in %s", name, dir)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// --version is answered before PostgreSQL's refusal to run as root, so this is safe as root.
	out, err := exec.CommandContext(ctx, filepath.Join(dir, "postgres"), "--version").Output()
	if err != nil {
		return version{}, fmt.Errorf("%s/postgres --version: %w", dir, err)
	}
	v, err := parseVersion(string(out))
	if err != nil {
		return version{}, err
	}
	if v.major < minMajor {
		return version{}, fmt.Errorf("PostgreSQL %s in %s is too old; version %d or newer is needed", v, dir, minMajor)
	}
	return v, nil
}

var versionRE = regexp.MustCompile(`\(PostgreSQL\)\s+(\d+)(?:\.(\d+))?`)

// parseVersion reads the output of `postgres --version`, e.g.
// "postgres (PostgreSQL) 15.4 (Debian 15.4-1)" or "postgres (PostgreSQL) 17beta1".
func parseVersion(out string) (version, error) {
	m := versionRE.FindStringSubmatch(out)
	if m == nil {
		return version{}, fmt.Errorf("unrecognised postgres --version output %q", out)
	}
	major, _ := strconv.Atoi(m[1]) // the pattern guarantees digits
	minor := 0
	if m[2] != "" {
		minor, _ = strconv.Atoi(m[2])
	}
	return version{major: major, minor: minor}, nil
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
