package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/queen-go/queen/internal/testkit"
)

// TestVersion builds queen as a user would, without make, and reads --version: a build from
// a git checkout names its commit, and one without VCS information says why it cannot, so no
// binary answers a bare "dev", which names nothing.
func TestVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	version := func(args ...string) string { return testkit.VersionOf(t, "queen", args...) }
	if out := version("-ldflags", "-X main.version=v1.2.3"); out != "queen-go v1.2.3\n" {
		t.Errorf("stamped: --version %q", out)
	}
	if out := version("-buildvcs=false"); !strings.HasPrefix(out, "queen-go dev (") || !strings.Contains(out, "make build") {
		t.Errorf("go build -buildvcs=false: --version %q; want dev and why", out)
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil || len(head) < 12 {
		t.Skipf("not a git checkout (%v): no VCS information to record", err)
	}
	if out := version("-buildvcs=true"); !strings.Contains(out, string(head[:12])) || strings.Contains(out, "dev") {
		t.Errorf("go build -buildvcs=true: --version %q; want it to name commit %s", out, head[:12])
	}
}
