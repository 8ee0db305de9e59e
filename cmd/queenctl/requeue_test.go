package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// queenctl dlq requeue and queenctl messages retry (docs/api/admin-api.md §2.4, §3.2).
func TestDLQRequeueAndRetry(t *testing.T) {
	b := setup(t)
	b.ctl(t, "", "push", "rq", `{"n":1}`, `{"n":2}`, "--partition", "p1").want(t, exitOK)
	deadLetter := func() string {
		t.Helper()
		r := b.ctl(t, "", "pop", "rq", "--wait", "5s", "-o", "json").want(t, exitOK)
		var m struct {
			TransactionID string `json:"transactionId"`
			PartitionID   string `json:"partitionId"`
			LeaseID       string `json:"leaseId"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &m); err != nil || m.TransactionID == "" {
			t.Fatalf("pop: %v %s", err, r.stdout)
		}
		b.ctl(t, "", "ack", "--partition-id", m.PartitionID, "--txid", m.TransactionID, "--lease", m.LeaseID,
			"--status", "dlq", "--error", "poison").want(t, exitOK)
		return m.PartitionID
	}
	pid := deadLetter()

	// By filter, redelivered to queue mode.
	r := b.ctl(t, "", "dlq", "requeue", "--queue", "rq").want(t, exitOK)
	golden(t, "dlq_requeue_table", r.stdout)
	if r = b.ctl(t, "", "dlq", "requeue", "--queue", "rq", "-o", "json").want(t, exitOK); !strings.Contains(r.stdout, `"requeued": 0`) {
		t.Fatalf("repeat: %s", r.stdout)
	}
	deadLetter() // the requeued message, dead-lettered again

	// The message retry.
	list := b.ctl(t, "", "dlq", "rq", "-o", "json").want(t, exitOK)
	var page struct {
		Messages []struct {
			DLQID         string `json:"dlqId"`
			TransactionID string `json:"transactionId"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(list.stdout), &page); err != nil || len(page.Messages) != 1 || page.Messages[0].DLQID == "" {
		t.Fatalf("dlq list: %v %s", err, list.stdout)
	}
	txid := page.Messages[0].TransactionID
	r = b.ctl(t, "", "messages", "retry", pid, txid).want(t, exitOK)
	golden(t, "messages_retry_table", r.stdout)
	b.ctl(t, "", "messages", "retry", pid, "no-such-message").want(t, exitNotFound)

	// Copy by id into another queue.
	deadLetter()
	list = b.ctl(t, "", "dlq", "rq", "-o", "json").want(t, exitOK)
	if err := json.Unmarshal([]byte(list.stdout), &page); err != nil || len(page.Messages) != 1 {
		t.Fatalf("dlq list: %v %s", err, list.stdout)
	}
	r = b.ctl(t, "", "dlq", "requeue", page.Messages[0].DLQID, "not-an-id", "--copy-to", "rq.replay", "-o", "json").want(t, exitOK)
	golden(t, "dlq_requeue_copy_json", r.stdout)
	b.ctl(t, "", "pop", "rq.replay", "--wait", "5s").want(t, exitOK)

	b.ctl(t, "", "dlq", "requeue").want(t, exitUsage)
	b.ctl(t, "", "dlq", "requeue", "x", "--queue", "rq").want(t, exitUsage)
	b.ctl(t, "", "dlq", "requeue", "--all", "--to-partition", "p").want(t, exitUsage)
}
