package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queen-go/queen/internal/mq"
)

// apply knows every option of the broker's table, with its default and type: a new row in
// mq.OptionTable without an entry here fails.
func TestApplyOptionsMatchTheOptionTable(t *testing.T) {
	if len(applyOptions) != len(mq.OptionTable) {
		t.Fatalf("apply knows %d options, the table has %d", len(applyOptions), len(mq.OptionTable))
	}
	for i, o := range mq.OptionTable {
		a := applyOptions[i]
		if a.key != o.Key || a.def != int64(o.Default) || a.isBol != o.IsBool() {
			t.Errorf("option %d: apply has %+v, the table %s default %d bool %v", i, a, o.Key, o.Default, o.IsBool())
		}
	}
}

func TestDerivedLabels(t *testing.T) {
	for name, want := range map[string][2]string{"orders": {"orders", ""}, "invoices.requested": {"invoices", "requested"},
		"billing.invoice.created": {"billing", "invoice"}} {
		if ns, task := derivedLabels(name); ns != want[0] || task != want[1] {
			t.Errorf("%s: %q %q, want %q", name, ns, task, want)
		}
	}
}

// writeManifest writes text to a file of the test's own and returns its path.
func writeManifest(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "queues.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestApplyUsageErrors(t *testing.T) {
	b := &bundle{url: "http://127.0.0.1:1"} // never reached: the manifest is checked first
	for _, tc := range []struct{ manifest, want string }{
		{"queues: []", "no queues"},
		{"queues:\n  - options: {}", "queue 1 has no name"},
		{"queues:\n  - name: a\n  - name: a", `queue "a" is listed twice`},
		{"queues:\n  - name: a\n    options: {leaseTme: 5}", `queue "a": unknown option "leaseTme"`},
		{"queues:\n  - name: a\n    options: {leaseTime: -1}", "option leaseTime: want an integer from 0 to 2147483647"},
		{"queues:\n  - name: a\n    options: {leaseTime: 2147483648}", "want an integer from 0 to 2147483647"},
		{"queues:\n  - name: a\n    options: {retentionEnabled: 1}", "option retentionEnabled: want true or false"},
		{"queues:\n  - name: a\n    color: red", "not a manifest"},
		{"queues: [", "yaml"},
	} {
		r := b.ctl(t, "", "apply", "-f", writeManifest(t, tc.manifest)).want(t, exitUsage)
		if !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
			t.Errorf("manifest %q: stderr %q, want %q", tc.manifest, r.stderr, tc.want)
		}
	}
	if r := b.ctl(t, "", "apply").want(t, exitUsage); !strings.Contains(r.stderr, "apply needs -f FILE") {
		t.Errorf("no -f: %q", r.stderr)
	}
	if r := b.ctl(t, "", "apply", "-f", "/does/not/exist.yaml").want(t, exitUsage); !strings.Contains(r.stderr, "no such file") {
		t.Errorf("missing file: %q", r.stderr)
	}
}

const applyManifest = `queues:
  - name: apply-orders
    options:
      leaseTime: 120
      retryLimit: 5
      retryDelay: 2000
      maxSize: 10000
      retentionEnabled: true
      retentionSeconds: 86400
  - name: billing.invoice.created
    namespace: finance
`

// queueConfig reads a queue's configuration as GET /api/v1/status/queues/:queue reports it,
// without changing it.
func queueConfig(t *testing.T, b *bundle, queue string) map[string]any {
	t.Helper()
	resp, err := http.Get(b.url + "/api/v1/status/queues/" + queue)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Queue struct {
			Namespace string         `json:"namespace"`
			Task      string         `json:"task"`
			Config    map[string]any `json:"config"`
		} `json:"queue"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&out) != nil {
		t.Fatalf("status of %s: %d", queue, resp.StatusCode)
	}
	c := out.Queue.Config
	c["namespace"], c["task"] = out.Queue.Namespace, out.Queue.Task
	return c
}

// apply against a real broker: the manifest's queues are created with its options (the rest
// at their defaults), applying it again changes nothing, --dry-run changes nothing, and a
// changed manifest reconfigures only what differs.
func TestApplyAgainstABroker(t *testing.T) {
	b := setup(t)
	path := writeManifest(t, applyManifest)

	r := b.ctl(t, "", "apply", "-f", path, "-o", "json").want(t, exitOK)
	golden(t, "apply_create_json", r.stdout)
	orders := queueConfig(t, b, "apply-orders")
	if orders["leaseTime"] != 120.0 || orders["retryLimit"] != 5.0 || orders["retryDelay"] != 2000.0 ||
		orders["maxQueueSize"] != 10000.0 || orders["ttl"] != 3600.0 || orders["namespace"] != "apply-orders" {
		t.Fatalf("apply-orders after apply: %v", orders)
	}
	if c := queueConfig(t, b, "billing.invoice.created"); c["namespace"] != "finance" || c["task"] != "invoice" || c["leaseTime"] != 300.0 {
		t.Fatalf("billing.invoice.created after apply: %v", c)
	}

	// Again: idempotent. A broker that reports the queue's options (admin-api.md §1) says
	// unchanged; one that does not configures again with the same values.
	r = b.ctl(t, "", "apply", "-f", path, "-o", "json").want(t, exitOK)
	var again []applyResult
	if err := json.Unmarshal([]byte(r.stdout), &again); err != nil || len(again) != 2 {
		t.Fatalf("second apply: %v %s", err, r.stdout)
	}
	detail, err := b.c.Queue("apply-orders").Detail(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range again {
		if len(a.Changes) != 0 || (detail.Options != nil && (a.Action != "unchanged" || a.Applied)) ||
			(detail.Options == nil && a.Action != "configured") {
			t.Errorf("second apply of %s: %+v", a.Queue, a)
		}
	}
	if c := queueConfig(t, b, "apply-orders"); c["leaseTime"] != 120.0 || c["maxQueueSize"] != 10000.0 {
		t.Fatalf("after the second apply: %v", c)
	}

	// A changed manifest, dry run: nothing changes on the broker.
	changed := writeManifest(t, strings.Replace(strings.Replace(applyManifest, "leaseTime: 120", "leaseTime: 60", 1),
		"namespace: finance", "namespace: billing", 1))
	r = b.ctl(t, "", "apply", "-f", changed, "--dry-run").want(t, exitOK)
	if !strings.Contains(r.stdout, `billing.invoice.created  configure  namespace: "finance" -> "billing"`) {
		t.Errorf("dry run table:\n%s", r.stdout)
	}
	if detail.Options != nil && !strings.Contains(r.stdout, "leaseTime: 120 -> 60") {
		t.Errorf("dry run table lacks the leaseTime change:\n%s", r.stdout)
	}
	if c := queueConfig(t, b, "apply-orders"); c["leaseTime"] != 120.0 {
		t.Fatalf("a dry run changed the queue: %v", c)
	}
	if c := queueConfig(t, b, "billing.invoice.created"); c["namespace"] != "finance" {
		t.Fatalf("a dry run changed the queue: %v", c)
	}

	// Applied for real, from stdin, as a table.
	text, _ := os.ReadFile(changed)
	r = b.ctl(t, string(text), "apply", "-f", "-").want(t, exitOK)
	if !strings.HasPrefix(r.stdout, "QUEUE") {
		t.Errorf("table:\n%s", r.stdout)
	}
	if c := queueConfig(t, b, "apply-orders"); c["leaseTime"] != 60.0 || c["retryLimit"] != 5.0 {
		t.Fatalf("after applying the change: %v", c)
	}
	if c := queueConfig(t, b, "billing.invoice.created"); c["namespace"] != "billing" {
		t.Fatalf("after applying the change: %v", c)
	}
}

// Golden table and YAML outputs of a first apply.
func TestApplyGoldenOutputs(t *testing.T) {
	b := setup(t)
	m := "queues:\n  - name: apply-golden\n    options: {leaseTime: 30, retryLimit: 2}\n"
	r := b.ctl(t, "", "apply", "-f", writeManifest(t, m), "--dry-run").want(t, exitOK)
	golden(t, "apply_dry_run_table", r.stdout)
	r = b.ctl(t, "", "apply", "-f", writeManifest(t, m), "-o", "yaml").want(t, exitOK)
	golden(t, "apply_create_yaml", r.stdout)
}
