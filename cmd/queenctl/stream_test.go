package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	queen "github.com/queen-go/queen/client"
	"github.com/queen-go/queen/internal/testkit"
)

func TestConsumePrintsAndAcks(t *testing.T) {
	b := setup(t)
	b.ctl(t, "", "push", "work", "1", "2", "3", "4", "5").want(t, exitOK)
	r := b.ctl(t, "", "consume", "work", "--limit", "5", "--concurrency", "2", "--batch", "2", "--progress").want(t, exitOK)
	if len(r.lines()) != 5 || !strings.Contains(r.stderr, "5 messages") {
		t.Fatalf("consume printed %q, stderr %q", r.stdout, r.stderr)
	}
	for _, l := range r.lines() {
		var m queen.Message
		if err := json.Unmarshal([]byte(l), &m); err != nil || m.Queue != "work" {
			t.Fatalf("line %q: %v", l, err)
		}
	}
	// Acked: nothing left, and an idle consumer reports "empty".
	r = b.ctl(t, "", "consume", "work", "--idle", "300ms").want(t, exitNotFound)
	if !strings.Contains(r.stderr, "no message") {
		t.Fatalf("stderr %q", r.stderr)
	}
}

func TestConsumeStopsGracefullyOnSignal(t *testing.T) {
	b := setup(t)
	payloads := []string{"push", "stop"}
	for i := range 20 {
		payloads = append(payloads, `{"i":`+string(rune('0'+i%10))+`}`)
	}
	b.ctl(t, "", payloads...).want(t, exitOK)
	ctx, interrupt := context.WithCancel(context.Background())
	var out, errOut testkit.LogBuffer
	done := make(chan int)
	go func() {
		done <- runIO(ctx, []string{"--server", b.url, "consume", "stop", "--batch", "20"}, strings.NewReader(""), &out, &errOut)
	}()
	testkit.Eventually(t, 10*time.Second, time.Millisecond, func() error {
		if strings.Count(out.String(), "\n") < 1 {
			return errors.New("consume printed nothing yet")
		}
		return nil
	})
	interrupt() // Ctrl-C
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	printed := strings.Count(out.String(), "\n")
	// Whatever was not printed was released, not lost: a second consumer gets exactly the rest
	// at once (the 5 minute lease did not have to expire).
	r := b.ctl(t, "", "consume", "stop", "--batch", "20", "--idle", "500ms")
	if got := len(r.lines()); printed+got != 20 {
		t.Fatalf("first run printed %d, second %d: want 20 in all (stderr %q)", printed, got, errOut.String())
	}
}

func TestTailFollowsWithoutTakingMessages(t *testing.T) {
	b := setup(t)
	b.ctl(t, "", "push", "events", `"old"`).want(t, exitOK)
	// Real elapsed time, not an ordering: the broker dates a message no finer than its id's
	// millisecond, so the boundary keeps clear of both pushes' milliseconds.
	time.Sleep(50 * time.Millisecond)
	since := time.Now().UTC().Format(time.RFC3339Nano)
	time.Sleep(50 * time.Millisecond)
	b.ctl(t, "", "push", "events", `"new"`).want(t, exitOK)
	r := b.ctl(t, "", "tail", "events", "--from", since, "--limit", "1").want(t, exitOK)
	if len(r.lines()) != 1 || !strings.Contains(r.stdout, `"data":"new"`) {
		t.Fatalf("tail printed %q", r.stdout)
	}
	// tail read in a group of its own: the queue's workers still get both messages.
	r = b.ctl(t, "", "pop", "events", "--batch", "5", "--wait", "5s").want(t, exitOK)
	if len(r.lines()) != 2 {
		t.Fatalf("queue mode lost messages to tail: %q", r.stdout)
	}
	// From now on (the default) there is nothing new.
	b.ctl(t, "", "tail", "events", "--idle", "300ms").want(t, exitNotFound)
	// A named group is kept and reads from the beginning with --from all.
	r = b.ctl(t, "", "tail", "events", "--group", "audit", "--from", "all", "--limit", "2").want(t, exitOK)
	if len(r.lines()) != 2 {
		t.Fatalf("tail --from all: %q", r.stdout)
	}
}

func TestQueuesCommands(t *testing.T) {
	b := setup(t)
	r := b.ctl(t, "", "--output", "json", "queues", "create", "billing.invoices", "--lease-time", "30",
		"--retry-limit", "0", "--retry-delay", "250ms", "--encryption-enabled", "--task", "inv").want(t, exitOK)
	var cfg queen.QueueConfig
	if err := json.Unmarshal([]byte(r.stdout), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.LeaseTime != 30*time.Second || cfg.RetryLimit != 0 || cfg.RetryDelay != 250*time.Millisecond ||
		!cfg.EncryptionEnabled || cfg.Task != "inv" || cfg.Namespace != "billing" || cfg.DedupWindow != 15*time.Minute {
		t.Fatalf("config %+v", cfg)
	}
	r = b.ctl(t, "", "queues", "configure", "billing.invoices", "--priority", "5").want(t, exitOK)
	if !strings.Contains(r.stdout, "lease-time           5m0s") || !strings.Contains(r.stdout, "priority") {
		t.Fatalf("configure table: %s", r.stdout)
	}
	r = b.ctl(t, "", "queues", "list")
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, "billing.invoices") || !strings.Contains(r.stdout, "PENDING") {
		t.Fatalf("list: %s", r.stdout)
	}
	r = b.ctl(t, "", "queues", "delete", "billing.invoices").want(t, exitOK)
	if !strings.Contains(r.stdout, "true") {
		t.Fatalf("delete: %s", r.stdout)
	}
	b.ctl(t, "", "queues", "delete", "billing.invoices").want(t, exitNotFound)
}

func TestHealthAndFailures(t *testing.T) {
	b := setup(t)
	r := b.ctl(t, "", "health").want(t, exitOK)
	if !strings.Contains(r.stdout, "healthy") || !strings.Contains(r.stdout, "connected") {
		t.Fatalf("health: %s", r.stdout)
	}
	r = b.ctl(t, "", "--output", "json", "health").want(t, exitOK)
	var h queen.Health
	if err := json.Unmarshal([]byte(r.stdout), &h); err != nil || !h.Healthy() {
		t.Fatalf("health json: %v %s", err, r.stdout)
	}
	// Unreachable broker: exit 1 with the cause.
	dead := &bundle{url: "http://127.0.0.1:1"}
	r = dead.ctl(t, "", "health").want(t, exitFailure)
	if !strings.Contains(r.stderr, "connection refused") {
		t.Fatalf("stderr %q", r.stderr)
	}
	// A broker-side validation error: exit 1 with the broker's message.
	long := strings.Repeat("k", 300)
	r = b.ctl(t, "", "push", "q", "--txid", long, "1").want(t, exitFailure)
	if !strings.Contains(r.stderr, "broker answered 400: transactionId exceeds 255 characters") {
		t.Fatalf("stderr %q", r.stderr)
	}
	// Unknown lease: not found.
	r = b.ctl(t, "", "extend", "0198f2c1-9a7b-7d20-8e31-4c5d6e7f8a90").want(t, exitNotFound)
	if !strings.Contains(r.stdout, "not_found") {
		t.Fatalf("extend: %s", r.stdout)
	}
	b.ctl(t, "", "push", "leases", "1").want(t, exitOK)
	var m queen.Message
	r = b.ctl(t, "", "pop", "leases", "--wait", "5s").want(t, exitOK)
	_ = json.Unmarshal([]byte(r.stdout), &m)
	r = b.ctl(t, "", "extend", m.LeaseID, "--by", "2m").want(t, exitOK)
	if !strings.Contains(r.stdout, "extended") {
		t.Fatalf("extend: %s", r.stdout)
	}
}

func TestDLQAndSeekCommands(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	if _, err := b.c.Queue("poison").Create(ctx, queen.RetryLimit(0)); err != nil {
		t.Fatal(err)
	}
	b.ctl(t, "", "push", "poison", `{"bad":true}`).want(t, exitOK)
	r := b.ctl(t, "", "pop", "poison", "--wait", "5s").want(t, exitOK)
	b.ctl(t, r.stdout, "ack", "-", "--status", "failed", "--error", "cannot parse").want(t, exitOK)
	r = b.ctl(t, "", "dlq", "poison", "--since", "1h")
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, "cannot parse") || !strings.Contains(r.stdout, "__QUEUE_MODE__") {
		t.Fatalf("dlq: %s", r.stdout)
	}
	b.ctl(t, "", "push", "poison", "1", "2").want(t, exitOK)
	r = b.ctl(t, "", "seek", "poison", "--group", "late", "--to-end")
	r.want(t, exitOK)
	b.ctl(t, "", "pop", "poison", "--group", "late").want(t, exitNotFound)
	b.ctl(t, "", "seek", "poison", "--group", "late", "--to", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)).want(t, exitOK)
	if r := b.ctl(t, "", "pop", "poison", "--group", "late", "--batch", "10", "--wait", "5s").want(t, exitOK); len(r.lines()) != 3 {
		t.Fatalf("after seek back: %s", r.stdout)
	}
	r = b.ctl(t, "", "seek", "no-such-queue", "--group", "late", "--to-end").want(t, exitNotFound)
	if !strings.Contains(r.stderr, "Queue not found") {
		t.Fatalf("seek unknown queue: %q", r.stderr)
	}
}
