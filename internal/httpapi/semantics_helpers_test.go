package httpapi_test

// Helpers (prefixed sem) shared by the delivery-semantics tests: semantics_test.go,
// subscription_test.go, retry_test.go, lease_semantics_test.go, dedup_test.go and
// queueopts_test.go. State is checked directly in the database where the API does not show it.

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// semConsumer is a row of table consumers (docs/api/concepts.md §5.2).
type semConsumer struct {
	Found          bool
	Cursor         int64
	LeaseID        *string
	LeaseExpiresAt *time.Time
	BatchEnd       *int64
	RetryCount     int
	RetryNotBefore *time.Time
}

// semState reads the consumer state of (queue, partition, group).
func semState(t testing.TB, queue, partition, group string) semConsumer {
	t.Helper()
	var c semConsumer
	err := stateDB(t).QueryRow(context.Background(), `
		SELECT c.cursor, c.lease_id::text, c.lease_expires_at, c.batch_end, c.retry_count, c.retry_not_before
		FROM consumers c JOIN partitions p ON p.id = c.partition_id JOIN queues q ON q.id = p.queue_id
		WHERE q.name = $1 AND p.name = $2 AND c.consumer_group = $3`, queue, partition, group).
		Scan(&c.Cursor, &c.LeaseID, &c.LeaseExpiresAt, &c.BatchEnd, &c.RetryCount, &c.RetryNotBefore)
	if err == pgx.ErrNoRows {
		return c
	}
	if err != nil {
		t.Fatalf("consumer state: %v", err)
	}
	c.Found = true
	return c
}

// semConfigure configures queue name with options, requiring 200.
func (b *bundle) semConfigure(name string, body obj) {
	b.t.Helper()
	body["queue"] = name
	if code, out := b.do("POST", "/api/v1/configure", body); code != http.StatusOK {
		b.t.Fatalf("configure: %d %s", code, out)
	}
}

// semPushKeys pushes one message per key into partition, payload {"k":key}, requiring queued.
func (b *bundle) semPushKeys(partition string, keys ...string) []pushed {
	b.t.Helper()
	items := make([]obj, len(keys))
	for i, k := range keys {
		items[i] = obj{"payload": obj{"k": k}, "transactionId": k}
	}
	res := b.push(partition, items...)
	for i, r := range res {
		if r.Status != "queued" {
			b.t.Fatalf("push %s: %+v", keys[i], r)
		}
	}
	return res
}

// semMustPop pops and requires messages with exactly the given transaction ids, in order.
func (b *bundle) semMustPop(path string, keys ...string) popped {
	b.t.Helper()
	p, ok := b.pop(path)
	if !ok {
		b.t.Fatalf("pop %s: 204, want %v", path, keys)
	}
	if got := semKeys(p); !slices.Equal(got, keys) {
		b.t.Fatalf("pop %s: got %v, want %v", path, got, keys)
	}
	return p
}

// semNoPop requires a 204.
func (b *bundle) semNoPop(path string) {
	b.t.Helper()
	if p, ok := b.pop(path); ok {
		b.t.Fatalf("pop %s: got %v, want 204", path, semKeys(p))
	}
}

// semQ is the wildcard pop path of the test's queue.
func (b *bundle) semQ(query string) string {
	return "/api/v1/pop/queue/" + url.PathEscape(b.queue) + "?" + query
}

// semQP is the partition pop path of the test's queue.
func (b *bundle) semQP(partition, query string) string {
	return "/api/v1/pop/queue/" + url.PathEscape(b.queue) + "/partition/" + url.PathEscape(partition) + "?" + query
}

// semKeys lists the transaction ids of a pop, in order.
func semKeys(p popped) []string {
	out := make([]string, len(p.Messages))
	for i, m := range p.Messages {
		out[i] = m.TransactionID
	}
	return out
}

// semAckOf builds an ack of message i of p (with its lease and group) with status.
func semAckOf(p popped, i int, status string) obj {
	m := p.Messages[i]
	return obj{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": m.LeaseID,
		"consumerGroup": m.ConsumerGroup, "status": status}
}

// semAckBatch posts /api/v1/ack/batch, requiring 200.
func (b *bundle) semAckBatch(items ...obj) []acked {
	b.t.Helper()
	code, body := b.do("POST", "/api/v1/ack/batch", obj{"acknowledgments": items})
	if code != http.StatusOK {
		b.t.Fatalf("ack batch: %d %s", code, body)
	}
	res := decode[[]acked](b.t, body)
	if len(res) != len(items) {
		b.t.Fatalf("ack batch answer %s", body)
	}
	return res
}

// semMustAck acks and requires success.
func (b *bundle) semMustAck(a obj) acked {
	b.t.Helper()
	r := b.ack(a)
	if !r.Success {
		b.t.Fatalf("ack %v: %+v (%s)", a, r, semStr(r.Error))
	}
	return r
}

func semStr(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
