package testkit

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// VersionOf builds the command in the test's package directory as a user would (go build
// with args, no make) and returns what the binary prints for --version.
func VersionOf(t testing.TB, name string, args ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	build := exec.Command("go", append(append([]string{"build"}, args...), "-o", bin, ".")...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("--version: %v", err)
	}
	return string(out)
}
