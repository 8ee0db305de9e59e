package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	queen "github.com/queen-go/queen/client"
)

func TestTxnFromFile(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	if _, err := b.c.Queue("stage1").Push(ctx, map[string]int{"order": 8891}); err != nil {
		t.Fatal(err)
	}
	batch, err := b.c.Queue("stage1").Pop(ctx, queen.PopOptions{Wait: 5 * time.Second})
	if err != nil || batch.Empty() {
		t.Fatalf("pop: %v", err)
	}
	m := batch.Messages[0]
	doc := map[string]any{
		"operations": []any{
			map[string]any{"type": "ack", "transactionId": m.TransactionID, "partitionId": m.PartitionID, "status": "completed"},
			map[string]any{"type": "push", "items": []any{
				map[string]any{"queue": "stage2", "partition": "customer-42", "transactionId": "invoice-8891", "payload": map[string]int{"order": 8891}},
				map[string]any{"queue": "stage2", "partition": "customer-42", "data": "via data"},
			}},
			map[string]any{"type": "push", "queue": "stage2", "partition": "customer-42"}, // flat, no payload: {}
		},
		"requiredLeases": []string{m.LeaseID},
	}
	path := filepath.Join(t.TempDir(), "txn.json")
	raw, _ := json.Marshal(doc)
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	r := b.ctl(t, "", "txn", path).want(t, exitOK)
	if !strings.HasPrefix(r.stdout, "committed ") || strings.Count(r.stdout, "push") != 3 {
		t.Fatalf("txn: %s", r.stdout)
	}
	// The same file again: its keys are taken, so it was already committed. Still success.
	r = b.ctl(t, string(raw), "--output", "json", "txn", "-").want(t, exitOK)
	var res queen.TxnResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Status != queen.TxnAlreadyCommitted {
		t.Fatalf("second run: %v %s", err, r.stdout)
	}
	out, _ := b.c.Queue("stage2").Pop(ctx, queen.PopOptions{Batch: 10, Wait: 5 * time.Second})
	if len(out.Messages) != 3 || string(out.Messages[1].Data) != `"via data"` || string(out.Messages[2].Data) != `{}` {
		t.Fatalf("stage2: %+v", out.Messages)
	}
	// A rollback is an operation failure (1); a malformed file is a usage error (2).
	r = b.ctl(t, `{"operations":[{"type":"ack","transactionId":"nope","partitionId":"`+m.PartitionID+`"}]}`, "txn", "-").want(t, exitFailure)
	if !strings.Contains(r.stderr, "rolled back: QTXN") {
		t.Fatalf("stderr %q", r.stderr)
	}
	r = b.ctl(t, `{"operations":[{"type":"delete"}]}`, "txn", "-").want(t, exitUsage)
	if !strings.Contains(r.stderr, `operation 0: unknown type "delete"`) {
		t.Fatalf("stderr %q", r.stderr)
	}
	b.ctl(t, `not json`, "txn", "-").want(t, exitUsage)
}
