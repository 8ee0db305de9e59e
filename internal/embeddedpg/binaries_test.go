package embeddedpg

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseVersion(t *testing.T) {
	for in, want := range map[string]version{
		"postgres (PostgreSQL) 15.20 (Debian 15.20-0+deb12u1)\n": {15, 20},
		"postgres (PostgreSQL) 14.0\n":                           {14, 0},
		"postgres (PostgreSQL) 17beta1\n":                        {17, 0},
	} {
		got, err := parseVersion(in)
		if err != nil || got != want {
			t.Errorf("parseVersion(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := parseVersion("something else"); err == nil {
		t.Error("parseVersion accepted garbage")
	}
}

func TestFindBinariesBogusPGBinDir(t *testing.T) {
	_, err := FindBinaries(filepath.Join(t.TempDir(), "nope"))
	if !errors.Is(err, ErrNoBinaries) || !strings.Contains(err.Error(), "PG_BIN_DIR") {
		t.Fatalf("err = %v; want an ErrNoBinaries naming PG_BIN_DIR", err)
	}
}

func TestFindBinariesNoneFound(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := findBinaries("", []string{filepath.Join(t.TempDir(), "*", "bin")})
	const want = "no database configured and no PostgreSQL server binaries found (looked in PG_BIN_DIR, " +
		"PATH and the usual install directories); install PostgreSQL 14 or newer, or set DATABASE_URL"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v; want %q", err, want)
	}
}

func TestFindBinariesPicksNewestSupported(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	root := t.TempDir()
	fakeBinaries(t, filepath.Join(root, "13", "bin"), "13.9")
	fakeBinaries(t, filepath.Join(root, "14", "bin"), "14.12")
	fakeBinaries(t, filepath.Join(root, "16", "bin"), "16.2")
	fakeBinaries(t, filepath.Join(root, "15", "bin"), "15.7")
	got, err := findBinaries("", []string{filepath.Join(root, "*", "bin")})
	if want := filepath.Join(root, "16", "bin"); err != nil || got != want {
		t.Fatalf("findBinaries = %q, %v; want %q", got, err, want)
	}
}

func TestFindBinariesRejectsOldPGBinDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bin")
	fakeBinaries(t, dir, "13.9")
	_, err := FindBinaries(dir)
	if !errors.Is(err, ErrNoBinaries) || !strings.Contains(err.Error(), "too old") {
		t.Fatalf("err = %v; want a too-old error", err)
	}
}

func TestFindBinariesPrefersPath(t *testing.T) {
	onPath := filepath.Join(t.TempDir(), "bin")
	fakeBinaries(t, onPath, "14.1")
	t.Setenv("PATH", onPath)
	root := t.TempDir()
	fakeBinaries(t, filepath.Join(root, "16", "bin"), "16.2")
	got, err := findBinaries("", []string{filepath.Join(root, "*", "bin")})
	if err != nil || got != onPath {
		t.Fatalf("findBinaries = %q, %v; want %q", got, err, onPath)
	}
}

// fakeBinaries writes initdb and postgres scripts that only answer --version.
func fakeBinaries(t *testing.T, dir, v string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho 'postgres (PostgreSQL) " + v + "'\n"
	for _, name := range []string{"initdb", "postgres"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}
