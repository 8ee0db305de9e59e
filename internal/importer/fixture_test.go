package importer

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/queen-go/queen/internal/encryption"
)

//go:embed testdata/queen_v015.sql
var queenDDL string

// testKey is the QUEEN_ENCRYPTION_KEY of the fixture's Queen and of the broker that serves it.
const testKey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

// fixMsg is one message of the fixture.
type fixMsg struct {
	id        uuid.UUID
	key       string
	payload   string // the JSON a consumer gets back
	createdAt time.Time
}

// fixture is the Queen database the tests import, and what each group must get after it.
type fixture struct {
	// parts holds each "queue/partition"'s messages in Queen's delivery order.
	parts map[string][]fixMsg
	// rest holds, per "queue/partition/group", the transactionIds the group has yet to get.
	rest map[string][]string
	// dlq is the number of dead letters; dupKey a stored key of orders/p1.
	dlq int
}

var base = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// buildFixture creates Queen's schema from the fixture DDL in schema (queen and queen_streams
// when schema is "queen") and fills it: several queues and option sets, many partitions,
// messages sharing a creation time (one push), groups at different positions, queue mode,
// a lease in flight, groups subscribed in modes new and timestamp, dead letters, traces,
// encrypted payloads, NULL options, stream queries with state. extra messages per partition
// of the queue "bulk" are generated in SQL (for the speed test).
func buildFixture(ctx context.Context, t testing.TB, conn *pgx.Conn) *fixture {
	t.Helper()
	if _, err := conn.Exec(ctx, queenDDL); err != nil {
		t.Fatalf("fixture DDL: %v", err)
	}
	f := &fixture{parts: map[string][]fixMsg{}, rest: map[string][]string{}}
	rng := rand.New(rand.NewPCG(1, 2))
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("fixture: %v\n%s", err, sql)
		}
	}
	key, err := encryption.ParseKey(testKey)
	if err != nil {
		t.Fatal(err)
	}
	queue := func(name string, cols string, vals ...any) uuid.UUID {
		id := uuid.New()
		ph := []string{"$1", "$2"}
		for i := range vals {
			ph = append(ph, fmt.Sprintf("$%d", i+3))
		}
		exec("INSERT INTO queen.queues (id, name"+cols+", created_at) VALUES ("+strings.Join(ph, ", ")+", '2026-02-01Z')",
			append([]any{id, name}, vals...)...)
		return id
	}
	parts := map[string]uuid.UUID{}
	partition := func(q uuid.UUID, qname, name string, n int, encrypted bool) {
		pid := uuid.New()
		parts[qname+"/"+name] = pid
		exec("INSERT INTO queen.partitions (id, queue_id, name, created_at, last_activity) VALUES ($1, $2, $3, '2026-02-01Z', '2026-03-02Z')", pid, q, name)
		var msgs []fixMsg
		for i := range n {
			m := fixMsg{id: uuid.UUID(randUUID(rng)), key: fmt.Sprintf("%s-%s-%d", qname, name, i),
				payload:   fmt.Sprintf(`{"n":%d,"p":"%s"}`, i, name),
				createdAt: base.Add(time.Duration(i/3) * time.Second)} // three per push share a time
			stored := m.payload
			if encrypted {
				b, err := key.Seal([]byte(m.payload))
				if err != nil {
					t.Fatal(err)
				}
				stored = string(b)
			}
			var trace *uuid.UUID
			if i%2 == 0 {
				tr := uuid.New()
				trace = &tr
			}
			var sub *string
			if i%3 == 0 {
				s := "alice"
				sub = &s
			}
			exec(`INSERT INTO queen.messages (id, transaction_id, trace_id, partition_id, payload, created_at, is_encrypted, producer_sub)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, m.id, m.key, trace, pid, stored, m.createdAt, encrypted, sub)
			msgs = append(msgs, m)
		}
		slices.SortFunc(msgs, func(a, b fixMsg) int {
			if c := a.createdAt.Compare(b.createdAt); c != 0 {
				return c
			}
			return bytes.Compare(a.id[:], b.id[:])
		})
		f.parts[qname+"/"+name] = msgs
	}
	// position gives group a Queen cursor on the partition after the first `consumed`
	// messages in delivery order; lease adds a lease in flight over the next three.
	position := func(qp, group string, consumed int, lease bool) {
		msgs := f.parts[qp]
		var lastID any = "00000000-0000-0000-0000-000000000000"
		var lastAt any
		if consumed > 0 {
			lastID, lastAt = msgs[consumed-1].id, msgs[consumed-1].createdAt
		}
		var worker, expires any
		if lease {
			worker, expires = uuid.New().String(), time.Now().Add(time.Hour)
		}
		exec(`INSERT INTO queen.partition_consumers (partition_id, consumer_group, last_consumed_id, last_consumed_created_at,
				total_messages_consumed, total_batches_consumed, lease_expires_at, batch_size, worker_id, batch_retry_count, created_at)
			VALUES ($1, $2, $3, $4, $5, 1, $6, 3, $7, 0, '2026-02-02Z')`, parts[qp], group, lastID, lastAt, consumed, expires, worker)
		f.expect(qp, group, consumed)
	}

	orders := queue("orders", ", namespace, task, priority, lease_time, retry_limit, retry_delay, ttl, dead_letter_queue, dlq_after_max_retries, delayed_processing, window_buffer, retention_seconds, completed_retention_seconds, retention_enabled, encryption_enabled, max_wait_time_seconds, max_queue_size",
		"shop", "fulfil", 3, 60, 5, 2000, 7200, true, true, 0, 0, 86400, 3600, true, false, 0, 0)
	partition(orders, "orders", "Default", 0, false)
	partition(orders, "orders", "p1", 12, false)
	partition(orders, "orders", "p2", 7, false)
	partition(orders, "orders", "p3", 5, false)
	for i := range 20 {
		partition(orders, "orders", fmt.Sprintf("m%02d", i), 2+i%3, false) // many small partitions
	}
	position("orders/p1", "__QUEUE_MODE__", 5, false)
	position("orders/p2", "__QUEUE_MODE__", 2, true) // leased at import: delivered again
	f.expect("orders/p3", "__QUEUE_MODE__", 0)       // no row: from the first
	for i := range 20 {
		qp := fmt.Sprintf("orders/m%02d", i)
		position(qp, "__QUEUE_MODE__", i%3, false)
	}
	position("orders/p1", "g-all", 0, false)
	position("orders/p2", "g-all", 7, false)
	position("orders/p3", "g-all", 1, true)
	// g-new subscribed (mode new) when p1's 7th message was pushed; no position anywhere yet.
	newTS := f.parts["orders/p1"][6].createdAt
	exec(`INSERT INTO queen.consumer_groups_metadata (consumer_group, queue_name, subscription_mode, subscription_timestamp, created_at)
		VALUES ('g-new', 'orders', 'new', $1, $1)`, newTS)
	// g-ts subscribed from a timestamp, and has consumed on p1 already.
	tsTS := base.Add(2 * time.Second)
	exec(`INSERT INTO queen.consumer_groups_metadata (consumer_group, queue_name, subscription_mode, subscription_timestamp, created_at)
		VALUES ('g-ts', 'orders', 'timestamp', $1, '2026-02-03Z')`, tsTS)
	position("orders/p1", "g-ts", 9, false)
	for qp, msgs := range f.parts {
		if !strings.HasPrefix(qp, "orders/") {
			continue
		}
		for _, g := range []struct {
			name string
			ts   time.Time
		}{{"g-new", newTS}, {"g-ts", tsTS}} {
			if _, ok := f.rest[qp+"/"+g.name]; ok {
				continue
			}
			f.expect(qp, g.name, len(slices.DeleteFunc(slices.Clone(msgs), func(m fixMsg) bool { return !m.createdAt.Before(g.ts) })))
		}
		if _, ok := f.rest[qp+"/g-all"]; !ok {
			f.expect(qp, "g-all", 0)
		}
	}
	// Dead letters: two of p2's messages failed for g-all.
	for i, m := range f.parts["orders/p2"][:2] {
		exec(`INSERT INTO queen.dead_letter_queue (id, message_id, partition_id, consumer_group, error_message, retry_count, original_created_at, failed_at)
			VALUES ($1, $2, $3, 'g-all', $4, 5, $5, '2026-03-01T13:00:00Z')`, uuid.New(), m.id, parts["orders/p2"], fmt.Sprintf("boom %d", i), m.createdAt)
		f.dlq++
	}
	// Traces on p1's first message, one with names, one with Queen's NULLs.
	first := f.parts["orders/p1"][0]
	tr1, tr2 := uuid.New(), uuid.New()
	exec(`INSERT INTO queen.message_traces (id, message_id, partition_id, transaction_id, consumer_group, event_type, data, created_at, worker_id)
		VALUES ($1, $2, $3, $4, 'g-all', 'processing', '{"step":1}', '2026-03-01T12:30:00Z', 'w1'),
		       ($5, $2, $3, $4, NULL, NULL, '{"step":2}', '2026-03-01T12:31:00Z', NULL)`, tr1, first.id, parts["orders/p1"], first.key, tr2)
	exec(`INSERT INTO queen.message_trace_names (trace_id, trace_name) VALUES ($1, 'order-1'), ($1, 'shop')`, tr1)

	secure := queue("secure", ", encryption_enabled, lease_time", true, 30)
	partition(secure, "secure", "Default", 3, true)
	position("secure/Default", "__QUEUE_MODE__", 1, false)

	plain := queue("plain", ", namespace, task, priority, ttl", nil, nil, nil, nil) // NULL options
	partition(plain, "plain", "Default", 4, false)
	f.expect("plain/Default", "__QUEUE_MODE__", 0)

	empty := queue("empty", "")
	partition(empty, "empty", "Default", 0, false)

	qid := uuid.New()
	exec(`INSERT INTO queen_streams.queries (id, name, source_queue, sink_queue, config_hash, created_at, updated_at)
		VALUES ($1, 'agg', 'orders', NULL, 'h1', '2026-02-05Z', '2026-02-06Z')`, qid)
	exec(`INSERT INTO queen_streams.state (query_id, partition_id, key, value, updated_at)
		VALUES ($1, $2, 'k1', '{"sum":3}', '2026-02-07Z'), ($1, $3, 'gone', '{"sum":1}', '2026-02-07Z')`,
		qid, parts["orders/p1"], uuid.New())
	return f
}

// expect records that group has consumed the first `consumed` messages of qp.
func (f *fixture) expect(qp, group string, consumed int) {
	var keys []string
	for _, m := range f.parts[qp][consumed:] {
		keys = append(keys, m.key)
	}
	f.rest[qp+"/"+group] = keys
}

func randUUID(r *rand.Rand) [16]byte {
	var b [16]byte
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return b
}

// payloadOf returns the JSON a consumer of qp gets for key.
func (f *fixture) payloadOf(qp, key string) json.RawMessage {
	for _, m := range f.parts[qp] {
		if m.key == key {
			return json.RawMessage(m.payload)
		}
	}
	return nil
}
