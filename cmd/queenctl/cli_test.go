package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	queen "github.com/queen-go/queen/client"
	"github.com/queen-go/queen/internal/testkit"
	"github.com/queen-go/queen/internal/testserver"
	buildversion "github.com/queen-go/queen/internal/version"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// raw runs queenctl with exactly args (no --server added).
func raw(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errOut testkit.LogBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := runIO(ctx, args, strings.NewReader(stdin), &out, &errOut)
	return result{code, out.String(), errOut.String()}
}

var (
	uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timeRE = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
)

// golden compares out, with ids and times replaced by placeholders, to testdata/name.golden
// (rewritten with -update). The zero time stays as it is: printed, it is a bug to see (the API
// said null), not a timestamp to hide.
func golden(t *testing.T, name, out string) {
	t.Helper()
	out = timeRE.ReplaceAllStringFunc(uuidRE.ReplaceAllString(out, "<uuid>"), func(s string) string {
		if s == "0001-01-01T00:00:00Z" {
			return s
		}
		return "<time>"
	})
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/queenctl -run %s -update)", err, t.Name())
	}
	if string(want) != out {
		t.Errorf("%s differs from %s:\n--- got\n%s\n--- want\n%s", name, path, out, want)
	}
}

func TestHelpPrintedOnceOnStdout(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}, {"push", "-h"}, {"queues", "help"}, {"groups", "--help"},
		{"help", "pop"}, {"help", "groups", "lag"}} {
		r := raw(t, "", args...).want(t, exitOK)
		if n := strings.Count(r.stdout, "Usage:"); n != 1 || r.stderr != "" {
			t.Errorf("queenctl %v: %d usages on stdout, stderr %q", args, n, r.stderr)
		}
	}
	r := raw(t, "", "-h")
	for _, s := range []string{"Exit codes:", "3  empty or not found", "completion", "context", "--output"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("queenctl -h lacks %q", s)
		}
	}
}

func TestUsageErrorPrintsUsageOnceOnStderr(t *testing.T) {
	for _, args := range [][]string{nil, {"pop"}, {"push", "--bogus", "q"}, {"pop", "q", "--batch", "x"},
		{"queues"}, {"queues", "drop"}, {"groups", "get"}, {"-o", "xml", "health"}, {"nosuch"},
		{"help", "nosuch"}, {"completion"}, {"completion", "tcsh"}} {
		r := raw(t, "", args...).want(t, exitUsage)
		if n := strings.Count(r.stderr, "Usage:"); n != 1 || r.stdout != "" || !strings.HasPrefix(r.stderr, "queenctl: ") {
			t.Errorf("queenctl %v: %d usages on stderr, stdout %q, stderr %q", args, n, r.stdout, r.stderr)
		}
	}
	// An invalid input found by the command itself: the message and a pointer to --help.
	r := raw(t, "", "--server", "http://127.0.0.1:1", "push", "q", "nojson").want(t, exitUsage)
	if !strings.Contains(r.stderr, "Run 'queenctl push --help' for usage.") || r.stdout != "" {
		t.Errorf("stderr %q", r.stderr)
	}
}

func TestVersion(t *testing.T) {
	// A test binary records no VCS information: --version says so rather than a bare "dev".
	r := raw(t, "", "--version").want(t, exitOK)
	if want := "queenctl " + buildversion.Describe("") + "\n"; r.stdout != want || !strings.Contains(r.stdout, "-buildvcs=false") {
		t.Fatalf("--version: %q; want %q", r.stdout, want)
	}
	if testing.Short() {
		t.Skip("builds the binary")
	}
	version := func(args ...string) string { return testkit.VersionOf(t, "queenctl", args...) }
	if out := version("-ldflags", "-X main.version=1.2.3"); out != "queenctl 1.2.3\n" {
		t.Fatalf("stamped --version: %q", out)
	}
	// Plain go build in a git checkout: the toolchain's pseudo-version names the commit.
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil || len(head) < 12 {
		t.Skipf("not a git checkout (%v): no VCS information to record", err)
	}
	if out := version("-buildvcs=true"); !strings.Contains(out, string(head[:12])) || strings.Contains(out, buildversion.Unknown) {
		t.Fatalf("go build -buildvcs=true: --version %q; want it to name commit %s", out, head[:12])
	}
}

func TestCompletionScripts(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		r := raw(t, "", "completion", sh).want(t, exitOK)
		if len(r.stdout) < 500 || !strings.Contains(r.stdout, "queenctl") {
			t.Errorf("completion %s: %d bytes", sh, len(r.stdout))
		}
	}
}

func TestExitCodes(t *testing.T) {
	b := setup(t)
	b.ctl(t, "", "health").want(t, exitOK)
	(&bundle{url: "http://127.0.0.1:1"}).ctl(t, "", "health").want(t, exitFailure)
	b.ctl(t, "", "pop").want(t, exitUsage)
	b.ctl(t, "", "pop", "empty-queue").want(t, exitNotFound)
	b.ctl(t, "", "queues", "get", "no-such-queue").want(t, exitNotFound)
	b.ctl(t, "", "groups", "get", "no-such-group").want(t, exitNotFound)
	b.ctl(t, "", "messages", "get", "00000000-0000-0000-0000-000000000000", "k").want(t, exitNotFound)
}

// hs256 signs a token the test broker accepts.
func hs256(t *testing.T, secret, role string) string {
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"role": role,
		"exp": time.Now().Add(time.Hour).Unix()}).SignedString([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestContexts(t *testing.T) {
	const secret = "queenctl-context-secret"
	srv := testserver.Start(t, testDSN, testserver.Options{JWTSecret: secret})
	path := filepath.Join(t.TempDir(), "conf", "queenctl", "config.yaml")
	t.Setenv("QUEENCTL_CONFIG", path)
	token := hs256(t, secret, "admin")

	raw(t, "", "context", "set", "prod", "--server", "https://queen.example.com", "--token", "s3cret-token").want(t, exitOK)
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("config file: %v %v", err, st)
	}
	if st, err := os.Stat(filepath.Dir(path)); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("config dir: %v %v", err, st)
	}
	raw(t, "", "context", "set", "local", "--server", "http://localhost:6632").want(t, exitOK)
	// The first context became current; list masks tokens.
	r := raw(t, "", "context", "list").want(t, exitOK)
	if strings.Contains(r.stdout, "s3cret") {
		t.Fatalf("token printed: %s", r.stdout)
	}
	golden(t, "context_list_table", r.stdout)
	r = raw(t, "", "context", "list", "-o", "json").want(t, exitOK)
	golden(t, "context_list_json", r.stdout)
	r = raw(t, "", "context", "list", "-o", "yaml").want(t, exitOK)
	golden(t, "context_list_yaml", r.stdout)
	raw(t, "", "context", "set", "local", "--server", srv.URL).want(t, exitOK) // an existing context changes
	if b, _ := os.ReadFile(path); !bytes.Contains(b, []byte("s3cret-token")) {
		t.Fatalf("token not stored: %s", b)
	}

	// The current context is prod (unreachable); --context picks local, which has no token yet.
	raw(t, "", "context", "current").want(t, exitOK)
	r = raw(t, "", "--context", "local", "queues", "list").want(t, exitFailure)
	if !strings.Contains(r.stderr, "check --token") {
		t.Fatalf("no token: %q", r.stderr)
	}
	raw(t, "", "context", "set", "local", "--token", token).want(t, exitOK)
	raw(t, "", "context", "use", "local").want(t, exitOK)
	raw(t, "", "queues", "list").want(t, exitOK) // server and token from the context
	// Precedence: environment over context, flags over environment.
	t.Setenv("QUEEN_SERVER", "http://127.0.0.1:1")
	raw(t, "", "health").want(t, exitFailure)
	raw(t, "", "--server", srv.URL, "--token", token, "queues", "list").want(t, exitOK)
	// The context's token goes to the context's server only.
	r = raw(t, "", "--context", "prod", "--server", srv.URL, "queues", "list").want(t, exitFailure)
	if !strings.Contains(r.stderr, "401") {
		t.Fatalf("token sent to another server? %q", r.stderr)
	}
	os.Unsetenv("QUEEN_SERVER")

	raw(t, "", "--context", "nope", "health").want(t, exitUsage)
	raw(t, "", "context", "use", "nope").want(t, exitNotFound)
	raw(t, "", "context", "delete", "prod").want(t, exitOK)
	raw(t, "", "context", "delete", "prod").want(t, exitNotFound)
	raw(t, "", "context", "set", "new").want(t, exitUsage) // a new context needs --server
}

func TestGoldenOutputs(t *testing.T) {
	b := setup(t)
	r := b.ctl(t, "", "queues", "create", "golden", "--lease-time", "30s", "--retry-limit", "2", "-o", "json").want(t, exitOK)
	golden(t, "queues_create_json", r.stdout)
	r = b.ctl(t, "", "queues", "configure", "golden", "--lease-time", "30s", "--retry-limit", "2").want(t, exitOK)
	golden(t, "queues_create_table", r.stdout)
	r = b.ctl(t, "", "queues", "configure", "golden", "--lease-time", "30s", "--retry-limit", "2", "-o", "yaml").want(t, exitOK)
	golden(t, "queues_create_yaml", r.stdout)
	b.ctl(t, "", "push", "golden", `{"n":1}`, `{"n":2}`, "--partition", "p1").want(t, exitOK)
	b.ctl(t, "", "push", "golden", `{"n":3}`, "--partition", "p2", "--txid", "k3").want(t, exitOK)
	b.refreshStats(t)
	r = b.ctl(t, "", "partitions", "list", "golden").want(t, exitOK)
	golden(t, "partitions_list_table", r.stdout)
	// The empty Default partition has no oldest or newest message: null, as the API says.
	r = b.ctl(t, "", "partitions", "list", "golden", "-o", "json").want(t, exitOK)
	golden(t, "partitions_list_json", r.stdout)
	r = b.ctl(t, "", "partitions", "list", "golden", "-o", "yaml").want(t, exitOK)
	golden(t, "partitions_list_yaml", r.stdout)
	r = b.ctl(t, "", "pop", "golden", "--partition", "p2", "-o", "table", "--wait", "5s").want(t, exitOK)
	golden(t, "pop_table", r.stdout)
	r = b.ctl(t, "", "pop", "golden", "--partition", "p1", "-o", "yaml", "--batch", "2", "--wait", "5s").want(t, exitOK)
	golden(t, "pop_yaml", r.stdout)
	r = b.ctl(t, "", "queues", "delete", "golden", "-o", "json").want(t, exitOK)
	golden(t, "queues_delete_json", r.stdout)
}

func TestPopHintOnTerminal(t *testing.T) {
	b := setup(t)
	b.ctl(t, "", "push", "hint", `1`, "--partition", "a").want(t, exitOK)
	b.ctl(t, "", "push", "hint", `2`, "--partition", "b").want(t, exitOK)
	r := b.ctl(t, "", "pop", "hint", "--batch", "10", "--wait", "5s").want(t, exitOK)
	if r.stderr != "" {
		t.Fatalf("hint without a terminal: %q", r.stderr)
	}
	stderrIsTerminal = func(any) bool { return true }
	defer func() { stderrIsTerminal = isTerminalWriter }()
	r = b.ctl(t, "", "pop", "hint", "--batch", "10", "--wait", "5s").want(t, exitOK)
	if !strings.Contains(r.stderr, "1 of 10: a pop claims one partition") || len(r.lines()) != 1 {
		t.Fatalf("stdout %q stderr %q", r.stdout, r.stderr)
	}
}

func TestProgressBarForAFile(t *testing.T) {
	b := setup(t)
	var in strings.Builder
	for i := range 250 {
		in.WriteString(`{"i":` + strings.Repeat("1", 1+i%3) + "}\n")
	}
	file := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(file, []byte(in.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	r := b.ctl(t, "", "push", "bar", "-f", file, "--progress").want(t, exitOK)
	if !strings.Contains(r.stderr, "100%  250/250 pushed") || !strings.Contains(r.stderr, "[====") {
		t.Fatalf("stderr %q", r.stderr)
	}
	r = b.ctl(t, "", "consume", "bar", "--limit", "250", "--batch", "100", "--progress").want(t, exitOK)
	if !strings.Contains(r.stderr, "250/250 messages") || len(r.lines()) != 250 {
		t.Fatalf("consume stderr %q", r.stderr)
	}
	r = b.ctl(t, "", "push", "bar", "-f", file).want(t, exitOK) // not a terminal: quiet
	if r.stderr != "" {
		t.Fatalf("stderr %q", r.stderr)
	}
}

func TestAdminCommands(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	b.ctl(t, "", "push", "adm", `{"a":1}`, "--partition", "p", "--txid", "m1").want(t, exitOK)
	b.ctl(t, "", "push", "adm", `{"a":2}`, "--partition", "p", "--txid", "m2").want(t, exitOK)
	b.refreshStats(t)
	r := b.ctl(t, "", "queues", "get", "adm", "-o", "json").want(t, exitOK)
	var d queen.QueueDetail
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil || len(d.Partitions) != 1 || d.Totals.Total != 2 {
		t.Fatalf("queues get: %v %s", err, r.stdout)
	}
	r = b.ctl(t, "", "messages", "list", "--queue", "adm", "-o", "json").want(t, exitOK)
	var ms []queen.StoredMessage
	if err := json.Unmarshal([]byte(r.stdout), &ms); err != nil || len(ms) != 2 {
		t.Fatalf("messages list: %v %s", err, r.stdout)
	}
	pid := ms[0].PartitionID
	r = b.ctl(t, "", "messages", "get", pid, "m1", "-o", "yaml").want(t, exitOK)
	if !strings.Contains(r.stdout, "transactionId: m1") || !strings.Contains(r.stdout, "a: 1") {
		t.Fatalf("messages get yaml: %s", r.stdout)
	}
	// A trace, then the trace commands.
	body := `{"transactionId":"m1","partitionId":"` + pid + `","data":{"step":"billed"},"traceNames":["order-1"]}`
	resp, err := http.Post(b.url+"/api/v1/traces", "application/json", strings.NewReader(body))
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("add trace: %v %v", err, resp)
	}
	resp.Body.Close()
	r = b.ctl(t, "", "traces", "get", pid, "m1").want(t, exitOK)
	if !strings.Contains(r.stdout, "billed") {
		t.Fatalf("traces get: %s", r.stdout)
	}
	r = b.ctl(t, "", "traces", "by-name", "order-1").want(t, exitOK)
	if !strings.Contains(r.stdout, "m1") {
		t.Fatalf("traces by-name: %s", r.stdout)
	}
	r = b.ctl(t, "", "traces", "names").want(t, exitOK)
	if !strings.Contains(r.stdout, "order-1") {
		t.Fatalf("traces names: %s", r.stdout)
	}
	b.ctl(t, "", "messages", "delete", pid, "m2").want(t, exitOK)
	b.ctl(t, "", "messages", "delete", pid, "m2").want(t, exitNotFound)
	// A group reads one message: it lags by the other.
	b.ctl(t, "", "pop", "adm", "--group", "billing", "--mode", "all", "--ack", "--wait", "5s").want(t, exitOK)
	b.ctl(t, "", "push", "adm", `{"a":3}`, "--partition", "p").want(t, exitOK)
	r = b.ctl(t, "", "groups", "list").want(t, exitOK)
	if !strings.Contains(r.stdout, "billing") {
		t.Fatalf("groups list: %s", r.stdout)
	}
	r = b.ctl(t, "", "groups", "get", "billing", "-o", "json").want(t, exitOK)
	var gp []queen.GroupPartition
	if err := json.Unmarshal([]byte(r.stdout), &gp); err != nil || len(gp) != 1 || gp[0].Queue != "adm" || gp[0].TotalConsumed != 1 {
		t.Fatalf("groups get: %v %s", err, r.stdout)
	}
	b.refreshStats(t) // group lag is as of the last stats run (docs/api/admin-api.md §7)
	r = b.ctl(t, "", "lag", "--group", "billing", "-o", "json").want(t, exitOK)
	var lag []queen.GroupLag
	if err := json.Unmarshal([]byte(r.stdout), &lag); err != nil || len(lag) != 1 || lag[0].OffsetLag != 1 {
		t.Fatalf("lag: %v %s", err, r.stdout)
	}
	b.ctl(t, "", "groups", "lag").want(t, exitOK)
	b.ctl(t, "", "groups", "seek", "adm", "--group", "billing", "--to-end").want(t, exitOK)
	b.ctl(t, "", "pop", "adm", "--group", "billing").want(t, exitNotFound)
	b.ctl(t, "", "replay", "adm", "--group", "billing", "--from", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)).want(t, exitOK)
	if r := b.ctl(t, "", "pop", "adm", "--group", "billing", "--batch", "5", "--wait", "5s").want(t, exitOK); len(r.lines()) != 2 {
		t.Fatalf("after replay: %s", r.stdout)
	}
	b.ctl(t, "", "replay", "adm", "--group", "billing").want(t, exitUsage)
	r = b.ctl(t, "", "status").want(t, exitOK)
	if !strings.Contains(r.stdout, "messages") || !strings.Contains(r.stdout, "stats age") {
		t.Fatalf("status: %s", r.stdout)
	}
	b.ctl(t, "", "status", "-o", "json").want(t, exitOK)
	r = b.ctl(t, "", "groups", "delete", "billing").want(t, exitOK)
	if !strings.Contains(r.stdout, "billing") {
		t.Fatalf("groups delete: %s", r.stdout)
	}
	if _, err := b.c.ConsumerGroupDetail(ctx, "billing"); err == nil {
		t.Fatal("group still there")
	}
	b.ctl(t, "", "dlq", "list", "adm").want(t, exitOK)
}
