package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/queen-go/queen/internal/testserver"
)

// The tenancy hook (docs/api/transaction.md §5, last row): an ack naming a message of another tenant's
// queue rolls back exactly as an unknown message (QTXN), and nothing of the bundle is written.
func TestTxnForeignTenantAckIsReportedAsQTXN(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.push("", obj{"payload": 1, "transactionId": "theirs"})
	p, ok := b.pop("/api/v1/pop/queue/" + b.queue)
	if !ok {
		t.Fatal("no message")
	}
	stateExec(t, "UPDATE queues SET tenant = 'other' WHERE name = $1", b.queue)
	out := b.queue + "-out"
	code, body := b.do("POST", "/api/v1/transaction", obj{
		"operations": []obj{
			{"type": "ack", "transactionId": "theirs", "partitionId": p.PartitionID},
			{"type": "push", "queue": out, "payload": 2},
		},
		"requiredLeases": []string{p.LeaseID},
	})
	want := `"error":"QTXN ack references unknown transactionId; transaction rolled back"`
	if code != http.StatusOK || !strings.Contains(string(body), want) || !strings.Contains(string(body), `"results":[]`) {
		t.Fatalf("%d %s, want the QTXN rollback", code, body)
	}
	var queues int
	if err := stateDB(t).QueryRow(context.Background(), "SELECT count(*) FROM queues WHERE name = $1", out).Scan(&queues); err != nil || queues != 0 {
		t.Fatalf("the rolled-back push created its queue: %d %v", queues, err)
	}
	// Back in the caller's tenant the same ack commits.
	stateExec(t, "UPDATE queues SET tenant = '' WHERE name = $1", b.queue)
	code, body = b.do("POST", "/api/v1/transaction", obj{
		"operations":     []obj{{"type": "ack", "transactionId": "theirs", "partitionId": p.PartitionID}},
		"requiredLeases": []string{p.LeaseID},
	})
	if code != http.StatusOK || !strings.Contains(string(body), `"success":true`) {
		t.Fatalf("%d %s, want a commit", code, body)
	}
}
