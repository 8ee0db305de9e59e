package httpapi_test

// POST /api/v1/transaction over real HTTP against real PostgreSQL: one test per testable claim
// of docs/api/transaction.md §9, the claim number in the test's name. This file holds claims 1–20
// (validation, pushes) and the helpers, prefixed txn, that transaction_claims_*_test.go and
// transaction_concurrency_test.go share. Where a claim says nothing is written or no queue is
// created, the tests look at the tables themselves.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/testserver"
)

const txnPath = "/api/v1/transaction"

// txnSend posts a transaction body (see doURL for the body forms) and returns status and body.
func (b *bundle) txnSend(body any) (int, []byte) {
	b.t.Helper()
	return b.do(http.MethodPost, txnPath, body)
}

// txnCommit posts a bundle that must commit and returns its results.
func (b *bundle) txnCommit(body any) []map[string]any {
	b.t.Helper()
	code, raw := b.txnSend(body)
	ans := decode[map[string]any](b.t, raw)
	if code != http.StatusOK || ans["success"] != true {
		b.t.Fatalf("transaction did not commit: %d %s", code, raw)
	}
	var out []map[string]any
	for _, r := range ans["results"].([]any) {
		out = append(out, r.(map[string]any))
	}
	return out
}

// txnWantRollback posts body and requires the rollback answer of docs/api/transaction.md §6 with msg.
func (b *bundle) txnWantRollback(body any, msg string) {
	b.t.Helper()
	code, raw := b.txnSend(body)
	txnWantJSON(b.t, code, raw, http.StatusOK, txnRollback(msg))
}

// txnWant400 posts body and requires 400 {"error":msg}.
func (b *bundle) txnWant400(body any, msg string) {
	b.t.Helper()
	code, raw := b.txnSend(body)
	txnWantJSON(b.t, code, raw, http.StatusBadRequest, obj{"error": msg})
}

// txnRollback is the exact rollback body with error msg.
func txnRollback(msg string) obj {
	return obj{"transactionId": txnUUIDv7, "success": false, "error": msg, "results": []any{}}
}

// txnPushRes is the exact result of a stored push entry (docs/api/transaction.md §6); tx may be a
// txnCheck when the key is minted.
func txnPushRes(index int, tx any, queue string) obj {
	return obj{"index": index, "type": "push", "success": true, "transactionId": tx,
		"messageId": txnUUIDv7, "queueName": queue, "partitionId": txnAnyUUID}
}

// txnAckRes is the exact result of a committed ack entry.
func txnAckRes(index int, tx string, dlq, already bool) obj {
	return obj{"index": index, "type": "ack", "success": true, "transactionId": tx, "error": nil,
		"dlq": dlq, "alreadyCommitted": already}
}

// txnCheck stands in an expected body for a value the test cannot know (minted ids).
type txnCheck struct {
	name string
	ok   func(any) bool
}

var (
	txnUUIDv7  = txnCheck{"a canonical UUIDv7", func(v any) bool { s, ok := v.(string); return ok && txnIsUUIDv7(s) }}
	txnAnyUUID = txnCheck{"a canonical UUID", func(v any) bool {
		s, ok := v.(string)
		u, err := uuid.Parse(s)
		return ok && err == nil && u.String() == s
	}}
)

func txnIsUUIDv7(s string) bool {
	u, err := uuid.Parse(s)
	return err == nil && u.Version() == 7 && u.String() == s
}

// txnWantJSON requires status code and a body equal to want, and returns the decoded body.
func txnWantJSON(t testing.TB, code int, body []byte, wantCode int, want obj) map[string]any {
	t.Helper()
	if code != wantCode {
		t.Fatalf("status %d, want %d: %s", code, wantCode, body)
	}
	got := decode[map[string]any](t, body)
	if diffs := txnMatch("body", got, want); len(diffs) > 0 {
		t.Fatalf("%s\n%s", body, strings.Join(diffs, "\n"))
	}
	return got
}

// txnMatch compares a decoded JSON value with want: objects must have exactly want's keys,
// arrays want's length, ints match equal JSON numbers and a txnCheck what it accepts.
func txnMatch(path string, got, want any) []string {
	bad := []string{fmt.Sprintf("%s: got %#v, want %#v", path, got, want)}
	switch w := want.(type) {
	case txnCheck:
		if !w.ok(got) {
			return []string{fmt.Sprintf("%s: got %#v, want %s", path, got, w.name)}
		}
		return nil
	case obj:
		g, ok := got.(map[string]any)
		if !ok {
			return bad
		}
		var out []string
		for k := range g {
			if _, ok := w[k]; !ok {
				out = append(out, fmt.Sprintf("%s.%s: unexpected key (%#v)", path, k, g[k]))
			}
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				out = append(out, fmt.Sprintf("%s.%s: missing", path, k))
				continue
			}
			out = append(out, txnMatch(path+"."+k, gv, wv)...)
		}
		return out
	case []obj:
		anys := make([]any, len(w))
		for i := range w {
			anys[i] = w[i]
		}
		return txnMatch(path, got, anys)
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return bad
		}
		var out []string
		for i := range w {
			out = append(out, txnMatch(fmt.Sprintf("%s[%d]", path, i), g[i], w[i])...)
		}
		return out
	case int:
		if f, ok := got.(float64); !ok || f != float64(w) {
			return bad
		}
		return nil
	}
	if got != want {
		return bad
	}
	return nil
}

// txnQueueExists reports whether a queue row named name exists.
func txnQueueExists(t testing.TB, name string) bool {
	t.Helper()
	var n int
	if err := stateDB(t).QueryRow(context.Background(), "SELECT count(*) FROM queues WHERE name = $1", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// txnRow is one stored message.
type txnRow struct {
	Partition, Key, ID, Payload string
	TraceID                     *string
	Position                    int64
}

// txnMessages lists a queue's stored messages by partition name, then position.
func txnMessages(t testing.TB, queue string) []txnRow {
	t.Helper()
	rows, err := stateDB(t).Query(context.Background(), `
		SELECT p.name, m.transaction_id, m.id::text, m.payload::text, m.trace_id::text, m.position
		FROM messages m JOIN partitions p ON p.id = m.partition_id JOIN queues q ON q.id = p.queue_id
		WHERE q.name = $1 ORDER BY p.name, m.position`, queue)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (txnRow, error) {
		var m txnRow
		err := r.Scan(&m.Partition, &m.Key, &m.ID, &m.Payload, &m.TraceID, &m.Position)
		return m, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// txnWantStored requires the queue to hold exactly these (partition, key, payload) triples in
// partition-name and position order; payloads compare as JSON values, a "" payload not at all.
func txnWantStored(t testing.TB, queue string, want ...[3]string) []txnRow {
	t.Helper()
	got := txnMessages(t, queue)
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = got[i].Partition == want[i][0] && got[i].Key == want[i][1] && (want[i][2] == "" || txnSameJSON(got[i].Payload, want[i][2]))
	}
	if !ok {
		t.Fatalf("queue %s holds %+v, want %v", queue, got, want)
	}
	return got
}

// txnSameJSON reports whether two JSON texts hold equal values.
func txnSameJSON(a, b string) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}

// txnConsumer is a row of table consumers.
type txnConsumer struct {
	Found      bool
	Cursor     int64
	LeaseID    *string
	BatchEnd   *int64
	RetryCount int
}

// txnState reads the consumer state of (partition id, group).
func txnState(t testing.TB, partitionID, group string) txnConsumer {
	t.Helper()
	var c txnConsumer
	err := stateDB(t).QueryRow(context.Background(), `
		SELECT cursor, lease_id::text, batch_end, retry_count FROM consumers
		WHERE partition_id = $1 AND consumer_group = $2`, partitionID, group).
		Scan(&c.Cursor, &c.LeaseID, &c.BatchEnd, &c.RetryCount)
	if err == pgx.ErrNoRows {
		return c
	}
	if err != nil {
		t.Fatalf("consumer state: %v", err)
	}
	c.Found = true
	return c
}

// txnConfigure configures a queue with options, requiring 200.
func (b *bundle) txnConfigure(queue string, opts obj) {
	b.t.Helper()
	if code, body := b.do(http.MethodPost, "/api/v1/configure", obj{"queue": queue, "options": opts}); code != http.StatusOK {
		b.t.Fatalf("configure: %d %s", code, body)
	}
}

// txnPopPath is the pop route of a queue (and partition, when not "") with a query string.
func txnPopPath(queue, partition, query string) string {
	p := "/api/v1/pop/queue/" + url.PathEscape(queue)
	if partition != "" {
		p += "/partition/" + url.PathEscape(partition)
	}
	return p + "?" + query
}

// txnMustPop pops and requires exactly the keys given, in order.
func (b *bundle) txnMustPop(path string, keys ...string) popped {
	b.t.Helper()
	p, ok := b.pop(path)
	var got []string
	for _, m := range p.Messages {
		got = append(got, m.TransactionID)
	}
	if !ok || strings.Join(got, ",") != strings.Join(keys, ",") {
		b.t.Fatalf("pop %s: got %v (delivered %v), want %v", path, got, ok, keys)
	}
	return p
}

// txnNoPop requires a pop to answer 204.
func (b *bundle) txnNoPop(path string) {
	b.t.Helper()
	if p, ok := b.pop(path); ok {
		b.t.Fatalf("pop %s delivered %+v, want 204", path, p.Messages)
	}
}

// txnSeed pushes messages with the given keys into a partition of the bundle's queue and pops
// them all under one lease (batch = len(keys)), returning the pop.
func (b *bundle) txnSeed(partition, query string, keys ...string) popped {
	b.t.Helper()
	items := make([]obj, len(keys))
	for i, k := range keys {
		items[i] = obj{"transactionId": k, "payload": obj{"k": k}}
	}
	b.push(partition, items...)
	return b.txnMustPop(txnPopPath(b.queue, partition, fmt.Sprintf("batch=%d&%s", len(keys), query)), keys...)
}

// txnAckOp is an ack operation of message i of p.
func txnAckOp(p popped, i int, extra obj) obj {
	op := obj{"type": "ack", "transactionId": p.Messages[i].TransactionID, "partitionId": p.PartitionID}
	for k, v := range extra {
		op[k] = v
	}
	return op
}

func TestTxnClaim01_InvalidJSON(t *testing.T) {
	b := setup(t, testserver.Options{})
	for _, body := range []string{`{"operations":[`, `hello`, `{"operations":[]}x`} {
		code, raw := b.txnSend(body)
		got := decode[map[string]any](t, raw)
		msg, _ := got["error"].(string)
		if code != http.StatusBadRequest || len(got) != 1 || !strings.HasPrefix(msg, "Invalid JSON: ") || len(msg) <= len("Invalid JSON: ") {
			t.Fatalf("%q: %d %s", body, code, raw)
		}
	}
}

func TestTxnClaim02_EmptyBody(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.txnWant400("", "Empty request body")
	b.txnWant400(nil, "Empty request body")
}

func TestTxnClaim03_EmptyObject(t *testing.T) {
	b := setup(t, testserver.Options{})
	// A body that is not an object has no operations either.
	for _, body := range []string{`{}`, `[]`, `null`, `"operations"`, `{"operations":null}`} {
		b.txnWant400(body, "operations array required")
	}
}

func TestTxnClaim04_OperationsNotAnArray(t *testing.T) {
	b := setup(t, testserver.Options{})
	for _, ops := range []any{obj{"type": "push"}, "push", 1, true} {
		b.txnWant400(obj{"operations": ops}, "operations array required")
	}
}

func TestTxnClaim05_EmptyOperations(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.txnWant400(obj{"operations": []any{}}, "operations array cannot be empty")
}

func TestTxnClaim06_UnknownTypeWritesNothing(t *testing.T) {
	b := setup(t, testserver.Options{})
	push := obj{"type": "push", "queue": b.queue, "payload": 1}
	b.txnWant400(obj{"operations": []any{push, obj{"type": "delete"}}}, "Unknown operation type: delete")
	// Every operation's type is checked before any item: a bad item earlier does not win.
	bad := obj{"type": "push", "queue": b.queue, "traceId": "nope"}
	b.txnWant400(obj{"operations": []any{bad, obj{"type": "Push"}}}, "Unknown operation type: Push")
	if txnQueueExists(t, b.queue) {
		t.Fatal("a rejected bundle created its queue")
	}
}

func TestTxnClaim07_MissingTypeIsNull(t *testing.T) {
	b := setup(t, testserver.Options{})
	for _, op := range []any{obj{"queue": b.queue, "payload": 1}, obj{"type": 5}, obj{"type": nil}, "push", []any{}} {
		b.txnWant400(obj{"operations": []any{op}}, "Unknown operation type: null")
	}
	if txnQueueExists(t, b.queue) {
		t.Fatal("a rejected bundle created its queue")
	}
}

func TestTxnClaim08_BadTraceIDWritesNothing(t *testing.T) {
	b := setup(t, testserver.Options{})
	ok := obj{"queue": b.queue, "payload": 1}
	bad := obj{"queue": b.queue, "payload": 2, "traceId": "not-a-uuid"}
	for _, ops := range [][]any{
		{obj{"type": "push", "items": []any{ok, bad}}},
		{obj{"type": "push", "queue": b.queue, "traceId": "not-a-uuid"}},
		{obj{"type": "push", "queue": b.queue, "traceId": 7}},
		{obj{"type": "push", "queue": b.queue, "traceId": "{" + uuid.NewString() + "}"}},
	} {
		b.txnWant400(obj{"operations": ops}, "TraceId must be a valid UUID")
	}
	if txnQueueExists(t, b.queue) {
		t.Fatal("a rejected bundle created its queue")
	}
}

func TestTxnClaim09_RequiredLeasesNotAnArray(t *testing.T) {
	b := setup(t, testserver.Options{})
	push := obj{"type": "push", "queue": b.queue, "payload": 1}
	for _, rl := range []any{"x", obj{}, []any{1}, []any{"a", nil}} {
		b.txnWant400(obj{"operations": []any{push}, "requiredLeases": rl}, "requiredLeases must be an array of strings")
	}
	// Check 6 comes before the item checks (7-12).
	bad := obj{"type": "push", "queue": b.queue, "traceId": "nope"}
	b.txnWant400(obj{"operations": []any{bad}, "requiredLeases": "x"}, "requiredLeases must be an array of strings")
	if txnQueueExists(t, b.queue) {
		t.Fatal("a rejected bundle created its queue")
	}
}

func TestTxnClaim10_NestedPushCommits(t *testing.T) {
	b := setup(t, testserver.Options{})
	code, raw := b.txnSend(obj{"operations": []any{obj{"type": "push", "items": []any{
		obj{"queue": b.queue, "partition": "p1", "transactionId": "k-10", "payload": obj{"orderId": 8891}}}}}})
	ans := txnWantJSON(t, code, raw, http.StatusOK, obj{"transactionId": txnUUIDv7, "success": true,
		"results": []any{txnPushRes(0, "k-10", b.queue)}})
	res := ans["results"].([]any)[0].(map[string]any)
	p := b.txnMustPop(txnPopPath(b.queue, "", ""), "k-10")
	if string(p.Messages[0].Data) != `{"orderId":8891}` || p.Messages[0].ID != res["messageId"] ||
		p.PartitionID != res["partitionId"] || p.Partition != "p1" {
		t.Fatalf("popped %+v for result %v", p, res)
	}
}

func TestTxnClaim11_CallIDIsUUIDv7NotAMessageID(t *testing.T) {
	b := setup(t, testserver.Options{})
	items := []any{obj{"queue": b.queue, "payload": 1}, obj{"queue": b.queue, "payload": 2},
		obj{"queue": b.queue, "partition": "x", "payload": 3}}
	seen := map[string]bool{}
	for _, key := range []string{"k", "k2"} {
		items[1].(obj)["transactionId"] = key // the second call must commit too
		code, raw := b.txnSend(obj{"operations": []any{obj{"type": "push", "items": items}}})
		ans := txnWantJSON(t, code, raw, http.StatusOK, obj{"transactionId": txnUUIDv7, "success": true,
			"results": []any{txnPushRes(0, txnUUIDv7, b.queue), txnPushRes(1, key, b.queue), txnPushRes(2, txnUUIDv7, b.queue)}})
		id := ans["transactionId"].(string)
		if seen[id] {
			t.Fatalf("call id %s reused", id)
		}
		seen[id] = true
		for _, r := range ans["results"].([]any) {
			r := r.(map[string]any)
			if r["messageId"] == id || r["transactionId"] == id {
				t.Fatalf("call id %s names a message: %s", id, raw)
			}
		}
	}
	if n := len(txnMessages(t, b.queue)); n != 6 {
		t.Fatalf("%d messages stored, want 6", n)
	}
}

func TestTxnClaim12_FlatPushCommits(t *testing.T) {
	b := setup(t, testserver.Options{})
	code, raw := b.txnSend(obj{"operations": []any{obj{"type": "push", "queue": b.queue, "partition": "f",
		"transactionId": "flat-1", "payload": obj{"a": []any{1, "x"}}}}})
	txnWantJSON(t, code, raw, http.StatusOK, obj{"transactionId": txnUUIDv7, "success": true,
		"results": []any{txnPushRes(0, "flat-1", b.queue)}})
	p := b.txnMustPop(txnPopPath(b.queue, "f", ""), "flat-1")
	if string(p.Messages[0].Data) != `{"a":[1,"x"]}` {
		t.Fatalf("popped %s", p.Messages[0].Data)
	}
}

func TestTxnClaim13_DataIsPayloadAlias(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.txnCommit(obj{"operations": []any{
		obj{"type": "push", "queue": b.queue, "transactionId": "flat", "data": obj{"form": "flat"}},
		obj{"type": "push", "items": []any{obj{"queue": b.queue, "transactionId": "nested", "data": []any{"nested"}},
			obj{"queue": b.queue, "transactionId": "null", "data": nil}}}}})
	txnWantStored(t, b.queue, [3]string{"Default", "flat", `{"form":"flat"}`},
		[3]string{"Default", "nested", `["nested"]`}, [3]string{"Default", "null", "null"})
	p := b.txnMustPop(txnPopPath(b.queue, "", "batch=3"), "flat", "nested", "null")
	if string(p.Messages[0].Data) != `{"form":"flat"}` || string(p.Messages[1].Data) != `["nested"]` || string(p.Messages[2].Data) != "null" {
		t.Fatalf("popped %+v", p.Messages)
	}
}

func TestTxnClaim14_PayloadWinsOverData(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.txnCommit(obj{"operations": []any{
		obj{"type": "push", "queue": b.queue, "transactionId": "flat", "data": "d", "payload": "p"},
		obj{"type": "push", "items": []any{obj{"queue": b.queue, "transactionId": "nested", "payload": nil, "data": "d"}}}}})
	txnWantStored(t, b.queue, [3]string{"Default", "flat", `"p"`}, [3]string{"Default", "nested", "null"})
}

func TestTxnClaim15_DefaultPayloadAndPartition(t *testing.T) {
	b := setup(t, testserver.Options{})
	res := b.txnCommit(obj{"operations": []any{
		obj{"type": "push", "queue": b.queue, "transactionId": "flat"},
		obj{"type": "push", "items": []any{obj{"queue": b.queue, "transactionId": "nested", "partition": ""}},
			"payload": "ignored: the operation's other keys do not apply to its items"}}})
	if res[0]["partitionId"] != res[1]["partitionId"] {
		t.Fatalf("results %v", res)
	}
	txnWantStored(t, b.queue, [3]string{"Default", "flat", "{}"}, [3]string{"Default", "nested", "{}"})
	p := b.txnMustPop(txnPopPath(b.queue, "Default", "batch=2"), "flat", "nested")
	if p.Partition != "Default" || p.PartitionID != res[0]["partitionId"] || string(p.Messages[0].Data) != "{}" {
		t.Fatalf("popped %+v", p)
	}
}

func TestTxnClaim16_MintedKeyIsTheMessageID(t *testing.T) {
	b := setup(t, testserver.Options{})
	res := b.txnCommit(obj{"operations": []any{obj{"type": "push", "items": []any{
		obj{"queue": b.queue, "partition": "p", "payload": 1},
		obj{"queue": b.queue, "partition": "p", "payload": 2, "transactionId": ""}}}}})
	for _, r := range res {
		if r["transactionId"] != r["messageId"] || !txnIsUUIDv7(r["messageId"].(string)) {
			t.Fatalf("result %v", r)
		}
	}
	rows := txnMessages(t, b.queue)
	if len(rows) != 2 || rows[0].Key != res[0]["messageId"] || rows[0].ID != rows[0].Key {
		t.Fatalf("stored %+v", rows)
	}
	got := b.push("p", obj{"transactionId": res[0]["messageId"], "payload": 3})
	if got[0].Status != "duplicate" || got[0].MessageID != res[0]["messageId"] {
		t.Fatalf("push of the minted key: %+v", got)
	}
	if n := len(txnMessages(t, b.queue)); n != 2 {
		t.Fatalf("%d messages stored, want 2", n)
	}
}

func TestTxnClaim17_TraceIDReturnedByPop(t *testing.T) {
	b := setup(t, testserver.Options{})
	trace, upper := uuid.NewString(), uuid.NewString()
	b.txnCommit(obj{"operations": []any{
		obj{"type": "push", "queue": b.queue, "transactionId": "t1", "traceId": trace},
		obj{"type": "push", "items": []any{obj{"queue": b.queue, "transactionId": "t2", "traceId": strings.ToUpper(upper)},
			obj{"queue": b.queue, "transactionId": "t3", "traceId": ""}}}}})
	p := b.txnMustPop(txnPopPath(b.queue, "", "batch=3"), "t1", "t2", "t3")
	m := p.Messages
	if m[0].TraceID == nil || *m[0].TraceID != trace || m[1].TraceID == nil || *m[1].TraceID != upper || m[2].TraceID != nil {
		t.Fatalf("traceIds %v %v %v", m[0].TraceID, m[1].TraceID, m[2].TraceID)
	}
}

func TestTxnClaim18_ResultsInFlattenedOrder(t *testing.T) {
	b := setup(t, testserver.Options{})
	src := b.txnSeed("in", "", "m1")
	out := b.queue + "-out"
	code, raw := b.txnSend(obj{"operations": []any{
		txnAckOp(src, 0, nil),
		obj{"type": "push", "items": []any{obj{"queue": out, "transactionId": "a"},
			obj{"queue": out, "transactionId": "b"}, obj{"queue": out, "partition": "z", "transactionId": "c"}}}},
		"requiredLeases": []any{src.LeaseID}})
	txnWantJSON(t, code, raw, http.StatusOK, obj{"transactionId": txnUUIDv7, "success": true, "results": []any{
		txnAckRes(0, "m1", false, false), txnPushRes(1, "a", out), txnPushRes(2, "b", out), txnPushRes(3, "c", out)}})
	txnWantStored(t, out, [3]string{"Default", "a", "{}"}, [3]string{"Default", "b", "{}"}, [3]string{"z", "c", "{}"})
}

func TestTxnClaim19_IntraBundleDuplicate(t *testing.T) {
	b := setup(t, testserver.Options{})
	code, raw := b.txnSend(obj{"operations": []any{
		obj{"type": "push", "queue": b.queue, "partition": "p", "transactionId": "same", "payload": "first"},
		obj{"type": "push", "items": []any{obj{"queue": b.queue, "partition": "p", "transactionId": "same", "payload": "second"}}}}})
	dup := txnPushRes(1, "same", b.queue)
	dup["duplicate"] = true
	ans := txnWantJSON(t, code, raw, http.StatusOK, obj{"transactionId": txnUUIDv7, "success": true,
		"results": []any{txnPushRes(0, "same", b.queue), dup}})
	res := ans["results"].([]any)
	first, second := res[0].(map[string]any), res[1].(map[string]any)
	if first["messageId"] != second["messageId"] || first["partitionId"] != second["partitionId"] {
		t.Fatalf("duplicate does not echo the winner: %s", raw)
	}
	rows := txnWantStored(t, b.queue, [3]string{"p", "same", `"first"`})
	if rows[0].ID != first["messageId"] {
		t.Fatalf("stored %+v", rows)
	}
}

func TestTxnClaim20_SameKeyInTwoPartitions(t *testing.T) {
	b := setup(t, testserver.Options{})
	code, raw := b.txnSend(obj{"operations": []any{obj{"type": "push", "items": []any{
		obj{"queue": b.queue, "partition": "a", "transactionId": "same", "payload": "a"},
		obj{"queue": b.queue, "partition": "b", "transactionId": "same", "payload": "b"}}}}})
	ans := txnWantJSON(t, code, raw, http.StatusOK, obj{"transactionId": txnUUIDv7, "success": true,
		"results": []any{txnPushRes(0, "same", b.queue), txnPushRes(1, "same", b.queue)}})
	res := ans["results"].([]any)
	if res[0].(map[string]any)["messageId"] == res[1].(map[string]any)["messageId"] {
		t.Fatalf("two partitions share a message: %s", raw)
	}
	txnWantStored(t, b.queue, [3]string{"a", "same", `"a"`}, [3]string{"b", "same", `"b"`})
}
