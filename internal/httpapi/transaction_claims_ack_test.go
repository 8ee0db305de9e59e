package httpapi_test

// POST /api/v1/transaction, claims 21–36 of docs/api/transaction.md §9: dedup rollbacks, ack
// resolution, leases, positions and statuses. Helpers are in transaction_claims_test.go.
// Claims 25, 27, 29–31, 33 and 34 are rules of qg_transaction alone and are tested in
// internal/store/transaction_test.go; the ones here also check the request or the answer.

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/google/uuid"

	"github.com/queen-go/queen/internal/testserver"
)

const (
	txnQTXN   = "QTXN ack references unknown transactionId; transaction rolled back"
	txnNoBody = "" // a txnSeed query with nothing extra
)

// txnQDUP is the QDUP error text for a queue and partition.
func txnQDUP(queue, partition string) string {
	return `QDUP duplicate messages in queue "` + queue + `" partition "` + partition + `"; transaction rolled back`
}

// txnQLEASE is the QLEASE error text for a partition id.
func txnQLEASE(pid string) string {
	return `QLEASE invalid or expired lease for partition "` + pid + `"; transaction rolled back`
}

// txnQBATCH is the QBATCH error text for a partition id.
func txnQBATCH(pid string) string {
	return `QBATCH ack beyond the leased batch in partition "` + pid + `"; transaction rolled back`
}

// txnWantState requires a consumer state's cursor and whether it holds a lease.
func txnWantState(t testing.TB, pid, group string, cursor int64, leased bool) txnConsumer {
	t.Helper()
	c := txnState(t, pid, group)
	if c.Cursor != cursor || (c.LeaseID != nil) != leased {
		t.Fatalf("consumer %s/%s: %+v, want cursor %d leased %v", pid, group, c, cursor, leased)
	}
	return c
}

func TestTxnClaim21_QDUPAgainstStoredKey(t *testing.T) {
	b := setup(t, testserver.Options{})
	part := `p"21` // names are reported as sent
	b.push(part, obj{"transactionId": "taken", "payload": "orig"})
	b.push("y", obj{"transactionId": "taken-y", "payload": "orig"})
	other := b.queue + "-other"
	b.txnWantRollback(obj{"operations": []any{
		obj{"type": "push", "queue": other, "transactionId": "o1"},
		obj{"type": "push", "items": []any{obj{"queue": b.queue, "partition": part, "transactionId": "fresh"},
			obj{"queue": b.queue, "partition": part, "transactionId": "taken", "payload": "new"}}}}},
		txnQDUP(b.queue, part))
	// Several taken keys: the earliest in flattened order is reported, whatever the lock order.
	b.txnWantRollback(obj{"operations": []any{
		obj{"type": "push", "queue": b.queue, "partition": "y", "transactionId": "taken-y"},
		obj{"type": "push", "queue": b.queue, "partition": part, "transactionId": "taken"}}},
		txnQDUP(b.queue, "y"))
	txnWantStored(t, b.queue, [3]string{part, "taken", `"orig"`}, [3]string{"y", "taken-y", `"orig"`})
	if rows := txnMessages(t, other); len(rows) != 0 {
		t.Fatalf("rolled-back push stored %+v", rows)
	}
}

func TestTxnClaim22_QDUPAgainstRemovedKeyInsideWindow(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.txnConfigure(b.queue, obj{"dedupWindowSeconds": 60})
	res := b.push("p", obj{"transactionId": "recent", "payload": 1}, obj{"transactionId": "old", "payload": 2})
	// Retention removes the messages and leaves their keys behind as tombstones.
	for _, r := range []struct {
		p   pushed
		age string
	}{{res[0], "30 seconds"}, {res[1], "90 seconds"}} {
		stateExec(t, "DELETE FROM messages WHERE id = $1", r.p.MessageID)
		stateExec(t, `INSERT INTO dedup_tombstones (partition_id, transaction_id, message_id, created_at)
			VALUES ($1, $2, $3, now() - $4::interval)`, r.p.PartitionID, r.p.TransactionID, r.p.MessageID, r.age)
	}
	b.txnWantRollback(obj{"operations": []any{
		obj{"type": "push", "queue": b.queue, "partition": "p", "transactionId": "new"},
		obj{"type": "push", "queue": b.queue, "partition": "p", "transactionId": "recent"}}},
		txnQDUP(b.queue, "p"))
	if rows := txnMessages(t, b.queue); len(rows) != 0 {
		t.Fatalf("rolled-back push stored %+v", rows)
	}
	// Past the window the key is free again.
	b.txnCommit(obj{"operations": []any{obj{"type": "push", "queue": b.queue, "partition": "p", "transactionId": "old"}}})
	txnWantStored(t, b.queue, [3]string{"p", "old", "{}"})
}

func TestTxnClaim23_QTXNUnknownTransactionID(t *testing.T) {
	b := setup(t, testserver.Options{})
	src := b.txnSeed("in", txnNoBody, "m1")
	newQ := b.queue + "-new"
	b.txnWantRollback(obj{"operations": []any{
		obj{"type": "push", "queue": newQ, "transactionId": "n1"},
		obj{"type": "push", "queue": b.queue, "partition": "new-partition", "transactionId": "n2"},
		obj{"type": "push", "queue": b.queue, "partition": "in", "transactionId": "m1"}, // QDUP, but QTXN wins
		txnAckOp(src, 0, nil),
		obj{"type": "ack", "transactionId": "unknown", "partitionId": src.PartitionID}},
		"requiredLeases": []any{src.LeaseID}}, txnQTXN)
	if txnQueueExists(t, newQ) {
		t.Fatal("QTXN created the bundle's new queue")
	}
	var parts int
	if err := stateDB(t).QueryRow(t.Context(), `SELECT count(*) FROM partitions p JOIN queues q ON q.id = p.queue_id
		WHERE q.name = $1`, b.queue).Scan(&parts); err != nil || parts != 1 {
		t.Fatalf("queue has %d partitions (%v), want 1", parts, err)
	}
	txnWantStored(t, b.queue, [3]string{"in", "m1", ""})
	txnWantState(t, src.PartitionID, "__QUEUE_MODE__", 0, true)
}

func TestTxnClaim24_QTXNMalformedPartitionID(t *testing.T) {
	b := setup(t, testserver.Options{})
	src := b.txnSeed("in", txnNoBody, "m1")
	for _, ack := range []obj{
		{"type": "ack", "transactionId": "m1", "partitionId": "not-a-uuid"},
		{"type": "ack", "transactionId": "m1", "partitionId": src.PartitionID[:35]},
		{"type": "ack", "transactionId": "m1", "partitionId": ""},
		{"type": "ack", "transactionId": "m1", "partitionId": 5},
		{"type": "ack", "transactionId": "m1"},
		{"type": "ack", "transactionId": "m1", "partitionId": uuid.NewString()},
		{"type": "ack", "transactionId": 1, "partitionId": src.PartitionID},
		{"type": "ack", "partitionId": src.PartitionID},
	} {
		b.txnWantRollback(obj{"operations": []any{ack}}, txnQTXN)
	}
	txnWantState(t, src.PartitionID, "__QUEUE_MODE__", 0, true)
}

func TestTxnClaim26_CommittedAckResult(t *testing.T) {
	b := setup(t, testserver.Options{})
	src := b.txnSeed("in", "consumerGroup=g26", "m1", "m2")
	code, raw := b.txnSend(obj{"operations": []any{
		txnAckOp(src, 0, obj{"consumerGroup": "g26", "status": "completed"}),
		txnAckOp(src, 1, obj{"consumerGroup": "g26", "leaseId": src.LeaseID})}})
	txnWantJSON(t, code, raw, http.StatusOK, obj{"transactionId": txnUUIDv7, "success": true,
		"results": []any{txnAckRes(0, "m1", false, false), txnAckRes(1, "m2", false, false)}})
	txnWantState(t, src.PartitionID, "g26", 2, false)
}

func TestTxnClaim28_RandomLeaseIDRollsBack(t *testing.T) {
	b := setup(t, testserver.Options{})
	src := b.txnSeed("in", txnNoBody, "m1")
	out := b.queue + "-out"
	for _, lease := range []string{uuid.NewString(), "garbage"} {
		b.txnWantRollback(obj{"operations": []any{
			obj{"type": "push", "queue": out, "transactionId": "o1"},
			txnAckOp(src, 0, obj{"leaseId": lease})},
			"requiredLeases": []any{src.LeaseID}}, txnQLEASE(src.PartitionID))
	}
	if rows := txnMessages(t, out); len(rows) != 0 {
		t.Fatalf("rolled-back push stored %+v", rows)
	}
	txnWantState(t, src.PartitionID, "__QUEUE_MODE__", 0, true)
}

func TestTxnClaim32_AckBeyondBatchRollsBack(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.push("p", obj{"transactionId": "m1", "payload": 1}, obj{"transactionId": "m2", "payload": 2},
		obj{"transactionId": "m3", "payload": 3})
	src := b.txnMustPop(txnPopPath(b.queue, "", "batch=1"), "m1")
	third := obj{"type": "ack", "transactionId": "m3", "partitionId": src.PartitionID}
	b.txnWantRollback(obj{"operations": []any{third}, "requiredLeases": []any{src.LeaseID}}, txnQBATCH(src.PartitionID))
	b.txnWantRollback(obj{"operations": []any{third}}, txnQBATCH(src.PartitionID))
	// A valid ack of the batch does not carry the bad one through.
	b.txnWantRollback(obj{"operations": []any{txnAckOp(src, 0, nil), third}}, txnQBATCH(src.PartitionID))
	txnWantState(t, src.PartitionID, "__QUEUE_MODE__", 0, true)
}

func TestTxnClaim35_DLQStatusWithReason(t *testing.T) {
	b := setup(t, testserver.Options{})
	src := b.txnSeed("p", txnNoBody, "m1")
	res := b.txnCommit(obj{"operations": []any{txnAckOp(src, 0, obj{"status": "dlq", "error": "poison"})},
		"requiredLeases": []any{src.LeaseID}})
	if diffs := txnMatch("result", res[0], txnAckRes(0, "m1", true, false)); diffs != nil {
		t.Fatal(diffs)
	}
	var msgID, group, reason string
	var n int
	if err := stateDB(t).QueryRow(t.Context(), `SELECT count(*) OVER (), message_id::text, consumer_group, error_message
		FROM dlq WHERE queue_name = $1`, b.queue).Scan(&n, &msgID, &group, &reason); err != nil {
		t.Fatalf("dlq row: %v", err)
	}
	if n != 1 || msgID != src.Messages[0].ID || group != "__QUEUE_MODE__" || reason != "poison" {
		t.Fatalf("dlq row: %d %s %s %s", n, msgID, group, reason)
	}
	txnWantState(t, src.PartitionID, "__QUEUE_MODE__", 1, false)
	b.txnNoPop(txnPopPath(b.queue, "", ""))
	code, raw := b.do(http.MethodGet, "/api/v1/dlq?queue="+url.QueryEscape(b.queue), nil)
	body := decode[map[string]any](t, raw)
	msgs, _ := body["messages"].([]any)
	if code != http.StatusOK || len(msgs) != 1 || body["total"] != float64(1) {
		t.Fatalf("dlq list: %d %s", code, raw)
	}
	m := msgs[0].(map[string]any)
	if m["id"] != src.Messages[0].ID || m["transactionId"] != "m1" || m["errorMessage"] != "poison" ||
		m["queue"] != b.queue || m["partition"] != "p" || m["partitionId"] != src.PartitionID ||
		m["consumerGroup"] != "__QUEUE_MODE__" || m["retryCount"] != float64(0) {
		t.Fatalf("dlq entry %s", raw)
	}
	if data, _ := json.Marshal(m["data"]); string(data) != `{"k":"m1"}` {
		t.Fatalf("dlq entry data %s", data)
	}
}

// The retry rule itself is tested in internal/store/transaction_test.go (claim 36); here: an
// unknown status, string or not, reaches the store as failed.
func TestTxnClaim36_UnknownStatusRetriesAfterDelay(t *testing.T) {
	b := setup(t, testserver.Options{FakeClock: true})
	b.txnConfigure(b.queue, obj{"retryDelay": 0, "retryLimit": 3})
	src := b.txnSeed("Default", txnNoBody, "m1")
	res := b.txnCommit(obj{"operations": []any{txnAckOp(src, 0, obj{"status": "bogus"})},
		"requiredLeases": []any{src.LeaseID}})
	if diffs := txnMatch("result", res[0], txnAckRes(0, "m1", false, false)); diffs != nil {
		t.Fatal(diffs)
	}
	if c := txnState(t, src.PartitionID, "__QUEUE_MODE__"); c.RetryCount != 1 || c.Cursor != 0 {
		t.Fatalf("after an unknown status: %+v", c)
	}
	p := b.txnMustPop(txnPopPath(b.queue, "", ""), "m1")
	b.txnCommit(obj{"operations": []any{txnAckOp(p, 0, obj{"status": 1})}, "requiredLeases": []any{p.LeaseID}})
	if c := txnState(t, src.PartitionID, "__QUEUE_MODE__"); c.RetryCount != 2 || c.Cursor != 0 {
		t.Fatalf("after a non-string status: %+v", c)
	}
}
