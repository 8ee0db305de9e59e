package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queen-go/queen/internal/app"
)

// The file buffer through an outage (docs/api/operations.md §4.1–4.2): the network to
// PostgreSQL black-holes after a healthy start; pushes on two partitions answer 201 buffered,
// a key pushed twice among them; once the network is back the drain writes every item exactly
// once, in push order per partition, and consumers pop them.
func TestSpoolOutageReplaysExactlyOnceInOrder(t *testing.T) {
	target, through := proxied(t, testDSN)
	p := newProxy(t, target)
	schema := freshSchema("spool_outage")
	cfg := frozenConfig(t, through(p.ln.Addr()), schema)
	cfg.FileBufferFlushInterval = 50 * time.Millisecond
	cfg.EncryptionKey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	a := startApp(t, cfg, app.WithLogger(testLogger(t)))
	base := a.URL()
	pushEventually(t, base, "healthy")
	// An encrypted queue: the spool holds plain text, encryption is applied on replay.
	if r := call(base, "POST", "/api/v1/configure", map[string]any{"queue": "spool-enc",
		"options": map[string]any{"encryptionEnabled": true}}); r.code != 200 {
		t.Fatalf("configure: %d %s", r.code, r.body)
	}

	p.freeze()
	const queue, perPartition = "spool-outage", 15
	parts := []string{"p1", "p2"}
	for i := range perPartition {
		for _, part := range parts {
			key := fmt.Sprintf("%s-%02d", part, i)
			r := call(base, "POST", "/api/v1/push", map[string]any{"items": []any{
				map[string]any{"queue": queue, "partition": part, "transactionId": key, "payload": map[string]any{"i": i}}}})
			wantBuffered(t, r, queue, part, key)
		}
	}
	// A key pushed twice during the outage, and an item without a key (its minted key echoed).
	for range 2 {
		r := call(base, "POST", "/api/v1/push", map[string]any{"items": []any{
			map[string]any{"queue": queue, "partition": "p1", "transactionId": "twice", "payload": "twice"}}})
		wantBuffered(t, r, queue, "p1", "twice")
	}
	r := call(base, "POST", "/api/v1/push", map[string]any{"items": []any{map[string]any{"queue": queue, "payload": 1}}})
	minted := wantBuffered(t, r, queue, "Default", "")
	r = call(base, "POST", "/api/v1/push", map[string]any{"items": []any{
		map[string]any{"queue": "spool-enc", "transactionId": "enc-1", "payload": map[string]any{"secret": 42}}}})
	wantBuffered(t, r, "spool-enc", "Default", "enc-1")
	if b := bufferFigures(t, base); b["pending"].(float64) < 2*perPartition {
		t.Errorf("status/buffers during the outage: %v", b)
	}

	p.thaw()
	deadline := time.Now().Add(90 * time.Second)
	for {
		b := bufferFigures(t, base)
		if b["pending"].(float64) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("spool not drained: %v", b)
		}
		time.Sleep(100 * time.Millisecond) // a poll interval of a bounded wait
	}
	if d := a.Drainer().Stats(); d.Duplicates < 1 {
		t.Errorf("drainer stats %+v: the repeated key was not counted as a duplicate", d)
	}

	// Stored exactly once each, in push order per partition.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, testDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	stored := func(part string) []string {
		rows, err := conn.Query(ctx, fmt.Sprintf(`SELECT m.transaction_id FROM %[1]s.messages m
			JOIN %[1]s.partitions p ON p.id = m.partition_id JOIN %[1]s.queues q ON q.id = p.queue_id
			WHERE q.name = $1 AND p.name = $2 ORDER BY m.position`, pgx.Identifier{schema}.Sanitize()), queue, part)
		if err != nil {
			t.Fatal(err)
		}
		keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return keys
	}
	for _, part := range parts {
		want := make([]string, 0, perPartition+1)
		for i := range perPartition {
			want = append(want, fmt.Sprintf("%s-%02d", part, i))
		}
		if part == "p1" {
			want = append(want, "twice")
		}
		if got := stored(part); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("partition %s stored %v, want %v", part, got, want)
		}
	}
	if got := stored("Default"); len(got) != 1 || got[0] != minted {
		t.Errorf("Default stored %v, want [%s]", got, minted)
	}

	var encrypted bool
	var raw string
	if err := conn.QueryRow(ctx, fmt.Sprintf(`SELECT encrypted, payload::text FROM %s.messages WHERE transaction_id = 'enc-1'`,
		pgx.Identifier{schema}.Sanitize())).Scan(&encrypted, &raw); err != nil {
		t.Fatal(err)
	}
	if !encrypted || strings.Contains(raw, "secret") {
		t.Errorf("replayed into an encrypted queue: encrypted=%v payload %s", encrypted, raw)
	}
	if pr := call(base, "GET", "/api/v1/pop/queue/spool-enc?wait=false", nil); pr.code != 200 || !strings.Contains(pr.body, `"secret":42`) {
		t.Errorf("pop of the encrypted queue: %d %s", pr.code, pr.body)
	}

	// Consumable: a pop of p1 returns its items in order.
	pr := call(base, "GET", "/api/v1/pop/queue/"+queue+"/partition/p1?batch=100&wait=false", nil)
	var popped struct {
		Messages []struct {
			TransactionID string `json:"transactionId"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(pr.body), &popped); err != nil || pr.code != 200 {
		t.Fatalf("pop: %d %s", pr.code, pr.body)
	}
	if len(popped.Messages) != perPartition+1 || popped.Messages[0].TransactionID != "p1-00" ||
		popped.Messages[perPartition].TransactionID != "twice" {
		t.Errorf("pop of p1: %s", pr.body)
	}
}

// wantBuffered requires a 201 whose one item is buffered with queue, partition and key (any
// non-empty key when key is ""), and returns the key.
func wantBuffered(t *testing.T, r answer, queue, part, key string) string {
	t.Helper()
	var items []map[string]any
	if r.code != 201 || json.Unmarshal([]byte(r.body), &items) != nil || len(items) != 1 {
		t.Fatalf("push during the outage: %d %s %v", r.code, r.body, r.err)
	}
	it := items[0]
	got, _ := it["transactionId"].(string)
	if it["status"] != "buffered" || it["queue"] != queue || it["partition"] != part || it["index"] != 0.0 ||
		got == "" || (key != "" && got != key) || len(it) != 5 {
		t.Fatalf("buffered answer %s", r.body)
	}
	return got
}

// bufferFigures reads GET /api/v1/status/buffers.
func bufferFigures(t *testing.T, base string) map[string]any {
	t.Helper()
	r := call(base, "GET", "/api/v1/status/buffers", nil)
	var b map[string]any
	if r.code != 200 || json.Unmarshal([]byte(r.body), &b) != nil {
		t.Fatalf("status/buffers: %d %s", r.code, r.body)
	}
	return b
}
