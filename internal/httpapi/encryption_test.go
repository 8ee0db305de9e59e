package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/queen-go/queen/internal/testserver"
)

// Sealing on push and opening on pop are tested in internal/broker (encrypt_test.go); here
// only the transaction route's two push forms.

const encKey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

// storedPayloads returns the payload and encrypted flag of every message of a queue.
func storedPayloads(t *testing.T, queue string) (payloads []string, flags []bool) {
	t.Helper()
	rows, err := stateDB(t).Query(context.Background(), `SELECT m.payload::text, m.encrypted FROM messages m
		JOIN partitions p ON p.id = m.partition_id JOIN queues q ON q.id = p.queue_id
		WHERE q.name = $1 ORDER BY m.created_at, m.position`, queue)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var p string
		var f bool
		if err := rows.Scan(&p, &f); err != nil {
			t.Fatal(err)
		}
		payloads, flags = append(payloads, p), append(flags, f)
	}
	return payloads, flags
}

func assertEnvelope(t *testing.T, stored string) {
	t.Helper()
	var env map[string]string
	if err := json.Unmarshal([]byte(stored), &env); err != nil || env["encrypted"] == "" || env["iv"] == "" || env["authTag"] == "" || len(env) != 3 {
		t.Fatalf("stored payload is not an envelope: %s", stored)
	}
}

// Transaction claim 50: pushes of both forms are stored encrypted and popped decrypted.
func TestTxnClaim50_EncryptedQueueBothPushForms(t *testing.T) {
	b := setup(t, testserver.Options{EncryptionKey: encKey})
	b.configure(obj{"encryptionEnabled": true})
	code, body := b.do("POST", "/api/v1/transaction", obj{"operations": []obj{
		{"type": "push", "items": []obj{{"queue": b.queue, "payload": obj{"form": "nested"}}}},
		{"type": "push", "queue": b.queue, "data": obj{"form": "flat"}},
	}})
	if code != http.StatusOK || !strings.Contains(string(body), `"success":true`) {
		t.Fatalf("transaction: %d %s", code, body)
	}
	stored, flags := storedPayloads(t, b.queue)
	if len(stored) != 2 || !flags[0] || !flags[1] {
		t.Fatalf("stored %v %v", stored, flags)
	}
	for _, s := range stored {
		assertEnvelope(t, s)
	}
	p, ok := b.pop("/api/v1/pop/queue/" + b.queue + "?batch=2")
	if !ok || len(p.Messages) != 2 || string(p.Messages[0].Data) != `{"form":"nested"}` || string(p.Messages[1].Data) != `{"form":"flat"}` {
		t.Fatalf("pop %+v", p)
	}
}
