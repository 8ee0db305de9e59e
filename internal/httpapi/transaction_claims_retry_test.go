package httpapi_test

// POST /api/v1/transaction, claims 37–53 of docs/api/transaction.md §9 but 47 (in
// transaction_concurrency_test.go) and 49/51 (authentication, in auth_test.go, next to the
// auth helpers): statuses, batches, resent bundles, capacity, limits, an unreachable
// database, encryption and wake-ups; then behaviours of the API reference outside the numbered claims
// (rollback precedence, requiredLeases entries, empty bundles). The empty queue name, which
// a push item no longer defaults to, is refused in empty_name_test.go. Helpers are in
// transaction_claims_test.go.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/internal/testserver"
)

// txnDLQReasons lists the (transactionId, reason, retryCount) of a queue's DLQ entries.
func txnDLQReasons(t testing.TB, queue string) []string {
	t.Helper()
	rows, err := stateDB(t).Query(context.Background(), `SELECT transaction_id || '/' || error_message || '/' || retry_count
		FROM dlq WHERE queue_name = $1 ORDER BY failed_at, transaction_id`, queue)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func TestTxnClaim37_FailedWithoutRetriesDeadLetters(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.txnConfigure(b.queue, obj{"retryLimit": 0})
	src := b.txnSeed("Default", txnNoBody, "m1")
	res := b.txnCommit(obj{"operations": []any{txnAckOp(src, 0, obj{"status": "failed"})},
		"requiredLeases": []any{src.LeaseID}})
	if diffs := txnMatch("result", res[0], txnAckRes(0, "m1", true, false)); diffs != nil {
		t.Fatal(diffs)
	}
	if got := txnDLQReasons(t, b.queue); strings.Join(got, ",") != "m1/Retries exhausted/0" {
		t.Fatalf("dlq %v", got)
	}
	txnWantState(t, src.PartitionID, "__QUEUE_MODE__", 1, false)
	b.txnNoPop(txnPopPath(b.queue, "", ""))
}

func TestTxnClaim38_RetryRedeliversAtOnce(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.txnConfigure(b.queue, obj{"retryDelay": 600000}) // retry ignores retryDelay
	src := b.txnSeed("Default", txnNoBody, "m1")
	res := b.txnCommit(obj{"operations": []any{txnAckOp(src, 0, obj{"status": "retry"})},
		"requiredLeases": []any{src.LeaseID}})
	if diffs := txnMatch("result", res[0], txnAckRes(0, "m1", false, false)); diffs != nil {
		t.Fatal(diffs)
	}
	p := b.txnMustPop(txnPopPath(b.queue, "", ""), "m1")
	if p.Messages[0].RetryCount != 0 || p.LeaseID == src.LeaseID {
		t.Fatalf("redelivered %+v", p)
	}
	if c := txnState(t, src.PartitionID, "__QUEUE_MODE__"); c.RetryCount != 0 || c.Cursor != 0 {
		t.Fatalf("state %+v", c)
	}
}

func TestTxnClaim39_SuccessIsCompleted(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.txnConfigure(b.queue, obj{"retryLimit": 0}) // a status read as failed would dead-letter
	src := b.txnSeed("Default", txnNoBody, "m1", "m2")
	res := b.txnCommit(obj{"operations": []any{txnAckOp(src, 0, obj{"status": "success"}),
		txnAckOp(src, 1, obj{"status": "completed"})}, "requiredLeases": []any{src.LeaseID}})
	if diffs := txnMatch("results", []any{res[0], res[1]}, []any{txnAckRes(0, "m1", false, false),
		txnAckRes(1, "m2", false, false)}); diffs != nil {
		t.Fatal(diffs)
	}
	if c := txnWantState(t, src.PartitionID, "__QUEUE_MODE__", 2, false); c.RetryCount != 0 {
		t.Fatalf("state %+v", c)
	}
	if got := txnDLQReasons(t, b.queue); len(got) != 0 {
		t.Fatalf("dlq %v", got)
	}
	b.txnNoPop(txnPopPath(b.queue, "", ""))
}

func TestTxnClaim40_AckOfSecondConsumesBoth(t *testing.T) {
	b := setup(t, testserver.Options{})
	src := b.txnSeed("Default", txnNoBody, "m1", "m2")
	b.txnCommit(obj{"operations": []any{txnAckOp(src, 1, nil)}, "requiredLeases": []any{src.LeaseID}})
	txnWantState(t, src.PartitionID, "__QUEUE_MODE__", 2, false)
	b.push("", obj{"transactionId": "m3", "payload": 3})
	b.txnMustPop(txnPopPath(b.queue, "", "batch=10"), "m3")
}

func TestTxnClaim41_ResentBundleIsQDUPAndChangesNothing(t *testing.T) {
	b := setup(t, testserver.Options{})
	src := b.txnSeed("in", txnNoBody, "m1")
	out := b.queue + "-out"
	bundle := obj{"operations": []any{txnAckOp(src, 0, nil), obj{"type": "push", "items": []any{
		obj{"queue": out, "partition": "o", "transactionId": "out-m1-a", "payload": "a"},
		obj{"queue": out, "partition": "o", "transactionId": "out-m1-b", "payload": "b"}}}},
		"requiredLeases": []any{src.LeaseID}}
	b.txnCommit(bundle)
	before := txnState(t, src.PartitionID, "__QUEUE_MODE__")
	b.txnWantRollback(bundle, txnQDUP(out, "o"))
	if after := txnState(t, src.PartitionID, "__QUEUE_MODE__"); after != before || after.Cursor != 1 {
		t.Fatalf("source state %+v, was %+v", after, before)
	}
	txnWantStored(t, out, [3]string{"o", "out-m1-a", `"a"`}, [3]string{"o", "out-m1-b", `"b"`})
}

func TestTxnClaim42_ResentAckOnlyBundleIsAlreadyCommitted(t *testing.T) {
	b := setup(t, testserver.Options{})
	src := b.txnSeed("in", txnNoBody, "m1", "m2")
	bundle := obj{"operations": []any{txnAckOp(src, 0, nil), txnAckOp(src, 1, nil)}, "requiredLeases": []any{src.LeaseID}}
	b.txnCommit(bundle)
	b.push("in", obj{"transactionId": "m3", "payload": 3})
	next := b.txnMustPop(txnPopPath(b.queue, "", ""), "m3") // a new live lease the resend must not touch
	before := txnState(t, src.PartitionID, "__QUEUE_MODE__")
	code, raw := b.txnSend(bundle)
	txnWantJSON(t, code, raw, http.StatusOK, obj{"transactionId": txnUUIDv7, "success": true,
		"results": []any{txnAckRes(0, "m1", false, true), txnAckRes(1, "m2", false, true)}})
	// An already committed ack is never lease-checked, whatever lease it names.
	code, raw = b.txnSend(obj{"operations": []any{txnAckOp(src, 1, obj{"leaseId": uuid.NewString()})},
		"requiredLeases": []any{uuid.NewString()}})
	txnWantJSON(t, code, raw, http.StatusOK, obj{"transactionId": txnUUIDv7, "success": true,
		"results": []any{txnAckRes(0, "m2", false, true)}})
	after := txnState(t, src.PartitionID, "__QUEUE_MODE__")
	if after.Cursor != 2 || after.LeaseID == nil || *after.LeaseID != next.LeaseID || *after.BatchEnd != *before.BatchEnd ||
		after.RetryCount != before.RetryCount {
		t.Fatalf("state %+v, was %+v", after, before)
	}
}

func TestTxnClaim43_QDUPWinsOverWrongLease(t *testing.T) {
	b := setup(t, testserver.Options{})
	src := b.txnSeed("in", txnNoBody, "m1")
	b.push("in", obj{"transactionId": "taken", "payload": 0})
	b.txnWantRollback(obj{"operations": []any{txnAckOp(src, 0, obj{"leaseId": uuid.NewString()}),
		obj{"type": "push", "queue": b.queue, "partition": "in", "transactionId": "taken"}}}, txnQDUP(b.queue, "in"))
	b.txnWantRollback(obj{"operations": []any{txnAckOp(src, 0, nil),
		obj{"type": "push", "queue": b.queue, "partition": "in", "transactionId": "taken"}},
		"requiredLeases": []any{uuid.NewString()}}, txnQDUP(b.queue, "in"))
	txnWantState(t, src.PartitionID, "__QUEUE_MODE__", 0, true)
}

func TestTxnClaim44_QDUPLeavesTheAckUnapplied(t *testing.T) {
	b := setup(t, testserver.Options{})
	src := b.txnSeed("in", txnNoBody, "m1")
	out := b.queue + "-out"
	code, raw := b.do(http.MethodPost, "/api/v1/push", obj{"items": []any{obj{"queue": out, "transactionId": "done", "payload": 1}}})
	if code != http.StatusCreated {
		t.Fatalf("push: %d %s", code, raw)
	}
	b.txnWantRollback(obj{"operations": []any{txnAckOp(src, 0, nil),
		obj{"type": "push", "queue": out, "transactionId": "done"}}, "requiredLeases": []any{src.LeaseID}},
		txnQDUP(out, "Default"))
	txnWantState(t, src.PartitionID, "__QUEUE_MODE__", 0, true)
	a := b.ack(obj{"transactionId": "m1", "partitionId": src.PartitionID, "leaseId": src.LeaseID})
	if !a.Success || a.AlreadyCommitted {
		t.Fatalf("the source message was consumed by the rolled-back bundle: %+v", a)
	}
}

func TestTxnClaim45_QFULLWritesNothing(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.txnConfigure(b.queue, obj{"maxSize": 3})
	b.push("", obj{"transactionId": "s1", "payload": 1}, obj{"transactionId": "s2", "payload": 2})
	other := b.queue + "-other"
	b.txnConfigure(other, nil)
	// One item fits, two do not: the whole bundle rolls back.
	b.txnWantRollback(obj{"operations": []any{obj{"type": "push", "queue": other, "transactionId": "o"},
		obj{"type": "push", "items": []any{obj{"queue": b.queue, "transactionId": "n1"},
			obj{"queue": b.queue, "partition": "x", "transactionId": "n2"}}}}},
		`QFULL queue "`+b.queue+`" is full; transaction rolled back`)
	// QDUP is reported before QFULL.
	b.txnWantRollback(obj{"operations": []any{obj{"type": "push", "items": []any{obj{"queue": b.queue, "transactionId": "n1"},
		obj{"queue": b.queue, "transactionId": "n2"}, obj{"queue": b.queue, "transactionId": "s1"}}}}},
		txnQDUP(b.queue, "Default"))
	txnWantStored(t, b.queue, [3]string{"Default", "s1", "1"}, [3]string{"Default", "s2", "2"})
	if rows := txnMessages(t, other); len(rows) != 0 {
		t.Fatalf("rolled-back push stored %+v", rows)
	}
	b.txnCommit(obj{"operations": []any{obj{"type": "push", "queue": b.queue, "transactionId": "n1"}}})
	b.txnWantRollback(obj{"operations": []any{obj{"type": "push", "queue": b.queue, "transactionId": "n2"}}},
		`QFULL queue "`+b.queue+`" is full; transaction rolled back`)
	if n := len(txnMessages(t, b.queue)); n != 3 {
		t.Fatalf("%d messages stored, want 3", n)
	}
}

// txnHiddenLength hides a reader's length, so the body goes out chunked.
type txnHiddenLength struct{ r io.Reader }

func (h txnHiddenLength) Read(p []byte) (int, error) { return h.r.Read(p) }

func TestTxnClaim46_BodyOver64MiB(t *testing.T) {
	b := setup(t, testserver.Options{})
	head := `{"operations":[{"type":"push","queue":"` + b.queue + `","payload":"`
	body := bytes.Repeat([]byte("x"), 64<<20+1)
	copy(body, head)
	copy(body[len(body)-4:], `"}]}`)
	for _, r := range []io.Reader{bytes.NewReader(body), txnHiddenLength{bytes.NewReader(body)}} {
		resp, err := http.Post(b.srv.URL+txnPath, "application/json", r)
		if err != nil {
			t.Fatalf("the 413 did not arrive: %v", err)
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		txnWantJSON(t, resp.StatusCode, raw, http.StatusRequestEntityTooLarge, obj{"error": "Request body too large"})
	}
	if txnQueueExists(t, b.queue) {
		t.Fatal("an oversized body created its queue")
	}
}

func TestTxnClaim48_DatabaseUnreachable(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, "postgres://postgres@127.0.0.1:1/x?sslmode=disable&connect_timeout=1", testserver.Options{})
	start := time.Now()
	code, raw := doURL(t, http.MethodPost, srv.URL+txnPath, obj{"operations": []any{
		obj{"type": "push", "queue": "q-claim48", "payload": 1},
		obj{"type": "ack", "transactionId": "t", "partitionId": uuid.NewString()}}})
	txnWantJSON(t, code, raw, http.StatusInternalServerError, obj{"transactionId": txnUUIDv7, "success": false,
		"error": "Database unavailable", "results": []any{}})
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("answered after %v", d)
	}
	// Validation still answers 400 without a database.
	code, raw = doURL(t, http.MethodPost, srv.URL+txnPath, obj{"operations": []any{}})
	txnWantJSON(t, code, raw, http.StatusBadRequest, obj{"error": "operations array cannot be empty"})
}

// Claim 50 over a whole pipeline step (TestTxnClaim50_EncryptedQueueBothPushForms covers the
// plain push forms): a stage reads an encrypted queue and writes both push forms into another
// encrypted queue; keys stay plain, so a resend is still a QDUP.
func TestTxnClaim50_EncryptedStageAckAndPush(t *testing.T) {
	b := setup(t, testserver.Options{EncryptionKey: strings.Repeat("3c", 32)})
	out := b.queue + "-out"
	b.txnConfigure(b.queue, obj{"encryptionEnabled": true})
	b.txnConfigure(out, obj{"encryptionEnabled": true})
	b.txnCommit(obj{"operations": []any{obj{"type": "push", "queue": b.queue, "transactionId": "in-1",
		"payload": obj{"secret": "alpha"}}}})
	src := b.txnMustPop(txnPopPath(b.queue, "", ""), "in-1")
	if string(src.Messages[0].Data) != `{"secret":"alpha"}` {
		t.Fatalf("popped %s", src.Messages[0].Data)
	}
	bundle := obj{"operations": []any{txnAckOp(src, 0, nil),
		obj{"type": "push", "queue": out, "transactionId": "flat-1", "data": obj{"secret": "bravo"}},
		obj{"type": "push", "items": []any{obj{"queue": out, "transactionId": "nested-1", "payload": []any{"charlie", 3}}}}},
		"requiredLeases": []any{src.LeaseID}}
	b.txnCommit(bundle)
	b.txnWantRollback(bundle, txnQDUP(out, "Default"))
	for _, q := range []string{b.queue, out} {
		for _, m := range txnMessages(t, q) {
			var env map[string]string
			if json.Unmarshal([]byte(m.Payload), &env) != nil || len(env) != 3 || env["encrypted"] == "" ||
				env["iv"] == "" || env["authTag"] == "" || strings.Contains(m.Payload, "alpha") ||
				strings.Contains(m.Payload, "bravo") || strings.Contains(m.Payload, "charlie") {
				t.Fatalf("%s stores %s", m.Key, m.Payload)
			}
		}
	}
	p := b.txnMustPop(txnPopPath(out, "", "batch=5"), "flat-1", "nested-1")
	if string(p.Messages[0].Data) != `{"secret":"bravo"}` || string(p.Messages[1].Data) != `["charlie",3]` {
		t.Fatalf("popped %s %s", p.Messages[0].Data, p.Messages[1].Data)
	}
}

// txnParkedPop starts a long-poll pop and returns once the broker has parked it; the channel
// yields the pop's status and body.
func (b *bundle) txnParkedPop(path string) <-chan [2]any {
	b.t.Helper()
	done := make(chan [2]any, 1)
	parked := b.srv.Broker.Hub().Parked()
	go func() {
		resp, err := http.Get(b.srv.URL + path)
		if err != nil {
			done <- [2]any{0, err.Error()}
			return
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		done <- [2]any{resp.StatusCode, raw}
	}()
	lpWaitParked(b.t, b.srv, parked+1)
	return done
}

// txnAwaitPop waits at most limit for a parked pop and requires it to deliver keys.
func txnAwaitPop(t testing.TB, done <-chan [2]any, limit time.Duration, keys ...string) popped {
	t.Helper()
	select {
	case r := <-done:
		raw, _ := r[1].([]byte)
		if r[0] != http.StatusOK {
			t.Fatalf("parked pop: %v %s", r[0], raw)
		}
		p := decode[popped](t, raw)
		var got []string
		for _, m := range p.Messages {
			got = append(got, m.TransactionID)
		}
		if strings.Join(got, ",") != strings.Join(keys, ",") {
			t.Fatalf("parked pop delivered %v, want %v", got, keys)
		}
		return p
	case <-time.After(limit):
		t.Fatalf("the parked pop was not woken within %v", limit)
	}
	return popped{}
}

// The fallback poll is slowed to 10 s here, so only a wake-up can deliver within the limit.
var txnSlowPoll = testserver.Options{PollInitial: 10 * time.Second, PollMax: 10 * time.Second}

func TestTxnClaim52_CommitWakesParkedPop(t *testing.T) {
	b := setup(t, txnSlowPoll)
	b.txnConfigure(b.queue, nil)
	done := b.txnParkedPop(txnPopPath(b.queue, "", "wait=true&timeout=30000"))
	b.txnCommit(obj{"operations": []any{obj{"type": "push", "queue": b.queue, "transactionId": "w1", "payload": 1}}})
	txnAwaitPop(t, done, time.Second, "w1")
}

// Step 12 of §3: pops parked on a queue whose lease an ack released are woken too.
func TestTxnReleasingAckWakesParkedPop(t *testing.T) {
	b := setup(t, txnSlowPoll)
	src := b.txnSeed("Default", txnNoBody, "m1")
	done := b.txnParkedPop(txnPopPath(b.queue, "", "wait=true&timeout=30000"))
	b.txnCommit(obj{"operations": []any{txnAckOp(src, 0, obj{"status": "retry"})}, "requiredLeases": []any{src.LeaseID}})
	txnAwaitPop(t, done, time.Second, "m1")
}

func TestTxnClaim53_CompletedAndFailedInOneBatch(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.txnConfigure(b.queue, obj{"retryLimit": 3, "retryDelay": 0})
	src := b.txnSeed("Default", txnNoBody, "m1", "m2", "m3")
	res := b.txnCommit(obj{"operations": []any{txnAckOp(src, 1, obj{"status": "failed"}),
		txnAckOp(src, 0, obj{"status": "completed"})}, "requiredLeases": []any{src.LeaseID}})
	if diffs := txnMatch("results", []any{res[0], res[1]}, []any{txnAckRes(0, "m2", false, false),
		txnAckRes(1, "m1", false, false)}); diffs != nil {
		t.Fatal(diffs)
	}
	if c := txnWantState(t, src.PartitionID, "__QUEUE_MODE__", 1, false); c.RetryCount != 1 || c.BatchEnd != nil {
		t.Fatalf("state %+v", c)
	}
	p := b.txnMustPop(txnPopPath(b.queue, "", "batch=10"), "m2", "m3")
	if p.Messages[0].RetryCount != 1 || p.Messages[1].RetryCount != 1 {
		t.Fatalf("redelivered %+v", p.Messages)
	}
	if got := txnDLQReasons(t, b.queue); len(got) != 0 {
		t.Fatalf("dlq %v", got)
	}
}

// requiredLeases entries are lease ids: one that is not a UUID ("" included) names a lease
// nobody holds, so it never resolves to the live lease (§4), and never reaches the database
// as a malformed UUID.
func TestTxnRequiredLeasesMalformedEntries(t *testing.T) {
	b := setup(t, testserver.Options{})
	src := b.txnSeed("Default", txnNoBody, "m1", "m2")
	for _, rl := range []any{[]any{""}, []any{"", ""}, []any{"zz"}, []any{"", "zz"}} {
		b.txnWantRollback(obj{"operations": []any{txnAckOp(src, 0, nil)}, "requiredLeases": rl},
			txnQLEASE(src.PartitionID))
	}
	txnWantState(t, src.PartitionID, "__QUEUE_MODE__", 0, true)
	// Next to the real lease they are harmless: the pair's recorded lease is in the list.
	b.txnCommit(obj{"operations": []any{txnAckOp(src, 0, nil)}, "requiredLeases": []any{"", src.LeaseID, "zz"}})
	b.txnCommit(obj{"operations": []any{txnAckOp(src, 1, nil)},
		"requiredLeases": []any{strings.ToUpper(src.LeaseID), ""}})
	txnWantState(t, src.PartitionID, "__QUEUE_MODE__", 2, false)
}

// §5: of several rollback causes the first row of the table wins (QTXN, QDUP, QFULL, QLEASE,
// QBATCH), and within a row the earliest entry in flattened order, whatever order the
// broker locks and evaluates them in.
func TestTxnRollbackPrecedence(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.push("a", obj{"transactionId": "a1", "payload": 1}, obj{"transactionId": "a2", "payload": 2},
		obj{"transactionId": "taken", "payload": 3})
	b.push("c", obj{"transactionId": "c1", "payload": 1}, obj{"transactionId": "c2", "payload": 2})
	pa := b.txnMustPop(txnPopPath(b.queue, "a", "batch=1"), "a1")
	pc := b.txnMustPop(txnPopPath(b.queue, "c", "batch=1"), "c1")
	full, full2 := b.queue+"-full", b.queue+"-full2"
	for _, q := range []string{full, full2} {
		b.txnConfigure(q, obj{"maxSize": 1})
		b.txnCommit(obj{"operations": []any{obj{"type": "push", "queue": q}}})
	}
	leases := []any{pa.LeaseID, pc.LeaseID}
	beyondA := obj{"type": "ack", "transactionId": "a2", "partitionId": pa.PartitionID}
	beyondC := obj{"type": "ack", "transactionId": "c2", "partitionId": pc.PartitionID}
	wrongA, wrongC := txnAckOp(pa, 0, obj{"leaseId": uuid.NewString()}), txnAckOp(pc, 0, obj{"leaseId": uuid.NewString()})
	pushFull, pushFull2 := obj{"type": "push", "queue": full}, obj{"type": "push", "queue": full2}
	pushTaken := obj{"type": "push", "queue": b.queue, "partition": "a", "transactionId": "taken"}
	unknown := obj{"type": "ack", "transactionId": "nope", "partitionId": pa.PartitionID}
	for _, c := range []struct {
		ops  []any
		want string
	}{
		{[]any{beyondA, wrongC}, txnQLEASE(pc.PartitionID)},
		{[]any{beyondA, beyondC}, txnQBATCH(pa.PartitionID)},
		{[]any{beyondC, beyondA}, txnQBATCH(pc.PartitionID)},
		{[]any{wrongA, wrongC}, txnQLEASE(pa.PartitionID)},
		{[]any{wrongC, wrongA}, txnQLEASE(pc.PartitionID)},
		{[]any{wrongC, beyondA, pushFull}, `QFULL queue "` + full + `" is full; transaction rolled back`},
		{[]any{pushFull2, pushFull}, `QFULL queue "` + full2 + `" is full; transaction rolled back`},
		{[]any{pushFull, pushFull2}, `QFULL queue "` + full + `" is full; transaction rolled back`},
		{[]any{wrongC, pushFull, pushTaken}, txnQDUP(b.queue, "a")},
		{[]any{pushTaken, wrongA, unknown}, txnQTXN},
	} {
		b.txnWantRollback(obj{"operations": c.ops, "requiredLeases": leases}, c.want)
	}
	txnWantState(t, pa.PartitionID, "__QUEUE_MODE__", 0, true)
	txnWantState(t, pc.PartitionID, "__QUEUE_MODE__", 0, true)
	for _, q := range []string{full, full2} {
		if n := len(txnMessages(t, q)); n != 1 {
			t.Fatalf("%s holds %d messages, want 1", q, n)
		}
	}
}

// §2: a nested push with no items contributes nothing; a call that flattens to nothing
// commits nothing and answers success with no results.
func TestTxnEmptyItemsCommitNothing(t *testing.T) {
	b := setup(t, testserver.Options{})
	code, raw := b.txnSend(obj{"operations": []any{obj{"type": "push", "items": []any{}, "queue": b.queue}}})
	txnWantJSON(t, code, raw, http.StatusOK, obj{"transactionId": txnUUIDv7, "success": true, "results": []any{}})
	code, raw = b.txnSend(obj{"operations": []any{obj{"type": "push", "items": []any{}},
		obj{"type": "push", "queue": b.queue, "transactionId": "only"}, obj{"type": "push", "items": []any{}}}})
	txnWantJSON(t, code, raw, http.StatusOK, obj{"transactionId": txnUUIDv7, "success": true,
		"results": []any{txnPushRes(0, "only", b.queue)}})
	txnWantStored(t, b.queue, [3]string{"Default", "only", "{}"})
}
