package main

import (
	"encoding/json"
	"strings"
	"testing"

	queen "github.com/queen-go/queen/client"
)

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	b := &bundle{url: "http://127.0.0.1:1"} // never reached: usage is checked first
	cases := []struct {
		args []string
		want string // in stderr
	}{
		{nil, "Usage:\n  queenctl [flags]"},
		{[]string{"pish", "q"}, `unknown command "pish"; did you mean "push"?`},
		{[]string{"push"}, "push needs a QUEUE"},
		{[]string{"push", "q"}, "nothing to push"},
		{[]string{"push", "q", "hello"}, `is not JSON; quote a string as '"text"' or use --raw`},
		{[]string{"push", "q", "1", "2", "--txid", "k"}, "--txid names one message"},
		{[]string{"push", "--bogus", "q", "1"}, "unknown flag: --bogus"},
		{[]string{"--output", "xml", "health"}, `invalid --output "xml": want table, json or yaml`},
		{[]string{"pop", "q", "--wait", "5x"}, "want a duration such as 30s"},
		{[]string{"pop", "q", "--mode", "old"}, `invalid --mode "old": want all, new or new-only`},
		{[]string{"pop", "q", "--from", "yesterday"}, `invalid --from "yesterday"`},
		{[]string{"pop"}, "usage: queenctl pop [flags] QUEUE (got 0 argument(s))"},
		{[]string{"health", "extra"}, "usage: queenctl health [flags] (got 1 argument(s))"},
		{[]string{"--server", "localhost:6632", "health"}, "--server: queen: invalid broker URL"},
		{[]string{"ack"}, "ack needs --partition-id and --txid"},
		{[]string{"ack", "--txid", "a", "--partition-id", "b", "--status", "done"}, `invalid --status "done"`},
		{[]string{"queues"}, "queenctl queues list"},
		{[]string{"queues", "drop", "q"}, `unknown queues subcommand "drop"`},
		{[]string{"queues", "create", "q", "--retry-limit", "-1"}, "want an integer ≥ 0"},
		{[]string{"txn"}, "usage: queenctl txn [flags] FILE|-"},
		{[]string{"txn", "/does/not/exist.json"}, "no such file"},
		{[]string{"seek", "q", "--group", "g"}, "give exactly one of --to-end and --to TIMESTAMP"},
		{[]string{"consume", "q", "--batch", "0"}, "--batch and --concurrency must be at least 1"},
	}
	for _, tc := range cases {
		r := b.ctl(t, "", tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr+r.stdout, tc.want) {
			t.Errorf("queenctl %v: exit %d, stderr %q; want exit 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	// Help is not an error, and goes to stdout.
	for _, args := range [][]string{{"help"}, {"-h"}, {"push", "-h"}, {"queues", "help"}} {
		if r := b.ctl(t, "", args...); r.code != exitOK || !strings.Contains(r.stdout, "Usage") {
			t.Errorf("queenctl %v: exit %d, stdout %q", args, r.code, r.stdout)
		}
	}
}

func TestPushPopAckPipeline(t *testing.T) {
	b := setup(t)
	r := b.ctl(t, "", "push", "orders", `{"n":1}`, `{"n":2}`, "--partition", "customer-42").want(t, exitOK)
	if !strings.Contains(r.stdout, "queued") || !strings.Contains(r.stdout, "TRANSACTION_ID") {
		t.Fatalf("push table: %s", r.stdout)
	}
	r = b.ctl(t, "", "--output", "json", "push", "orders", "--txid", "order-3", `{"n":3}`, "--partition", "customer-42").want(t, exitOK)
	var res []queen.PushResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res) != 1 || res[0].TransactionID != "order-3" {
		t.Fatalf("push json: %v %s", err, r.stdout)
	}
	r = b.ctl(t, "", "push", "orders", "--txid", "order-3", `{"n":3}`, "--partition", "customer-42").want(t, exitOK)
	if !strings.Contains(r.stdout, "duplicate") {
		t.Fatalf("duplicate push: %s", r.stdout)
	}

	r = b.ctl(t, "", "pop", "orders", "--batch", "10", "--wait", "5s").want(t, exitOK)
	lines := r.lines()
	if len(lines) != 3 {
		t.Fatalf("pop printed %d lines: %s", len(lines), r.stdout)
	}
	var m queen.Message
	if err := json.Unmarshal([]byte(lines[2]), &m); err != nil || m.TransactionID != "order-3" || m.LeaseID == "" ||
		string(m.Data) != `{"n":3}` || m.Partition != "customer-42" {
		t.Fatalf("popped %v %+v", err, m)
	}
	// What pop prints, ack reads.
	r = b.ctl(t, r.stdout, "ack", "-").want(t, exitOK)
	if strings.Count(r.stdout, "applied") != 3 {
		t.Fatalf("ack table: %s", r.stdout)
	}
	b.ctl(t, "", "pop", "orders").want(t, exitNotFound)
	// Acking again is harmless and says so.
	r = b.ctl(t, "", "ack", "--partition-id", m.PartitionID, "--txid", m.TransactionID).want(t, exitOK)
	if !strings.Contains(r.stdout, "already_committed") {
		t.Fatalf("second ack: %s", r.stdout)
	}
	b.ctl(t, "", "ack", "--partition-id", m.PartitionID, "--txid", "nope").want(t, exitNotFound)
}

func TestPopFlagsAndTable(t *testing.T) {
	b := setup(t)
	b.ctl(t, "", "push", "jobs", `"a"`, `"b"`).want(t, exitOK)
	r := b.ctl(t, "", "pop", "jobs", "--output", "table", "--group", "g", "--mode", "all", "--batch", "5", "--ack", "--wait", "5s").want(t, exitOK)
	if !strings.Contains(r.stdout, "LEASE_ID") || !strings.Contains(r.stdout, `"b"`) {
		t.Fatalf("table: %s", r.stdout)
	}
	// --ack consumed them for group g; queue mode still has them.
	b.ctl(t, "", "pop", "jobs", "--group", "g").want(t, exitNotFound)
	r = b.ctl(t, "", "pop", "jobs", "--auto-ack", "--batch", "5", "--wait", "5").want(t, exitOK)
	if len(r.lines()) != 2 {
		t.Fatalf("auto-ack pop: %s", r.stdout)
	}
	b.ctl(t, "", "pop", "jobs", "--wait", "200ms").want(t, exitNotFound)
}

func TestPushFromStdinWithProgress(t *testing.T) {
	b := setup(t)
	var in strings.Builder
	for i := range 250 {
		in.WriteString(`{"i":` + strings.Repeat("1", 1+i%3) + "}\n\n")
	}
	r := b.ctl(t, in.String(), "push", "bulk", "--file", "-", "--batch", "100", "--progress").want(t, exitOK)
	if !strings.Contains(r.stdout, "queued 250, duplicate 0, failed 0") || !strings.Contains(r.stderr, "250 pushed") {
		t.Fatalf("stdout %q stderr %q", r.stdout, r.stderr)
	}
	// A bad line stops the read with a usage error naming it; earlier lines are pushed.
	r = b.ctl(t, "{\"ok\":1}\nnot json\n{\"ok\":2}\n", "push", "bulk2", "--file", "-").want(t, exitUsage)
	if !strings.Contains(r.stderr, "line 2") || !strings.Contains(r.stdout, "queued 1") {
		t.Fatalf("bad line: %q %q", r.stdout, r.stderr)
	}
	// Without --progress and with a non-terminal stderr, no rate line.
	r = b.ctl(t, "1\n2\n", "--output", "json", "push", "bulk3", "--file", "-").want(t, exitOK)
	if r.stderr != "" || len(r.lines()) != 2 {
		t.Fatalf("json results %q, stderr %q", r.stdout, r.stderr)
	}
}
