package store

// The store's conformance suite (one file per SQL family: push, pop, ack, lease, transaction,
// seek/groups, retention, admin) tests the rules the SQL functions decide by calling the store
// directly, against real PostgreSQL, with an injected clock. Each test gets a migrated schema
// of its own (from the pool of schema_pool_test.go: migrated once, reset to the migrated state
// between tests) and a testBundle (the pattern of River's riverdrivertest): the store, a fake
// clock and helpers to push, pop, ack and read state the API does not show.

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queen-go/queen/internal/mq"
)

// testClock is a settable clock: it starts at a given time and moves only when told.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// testBundle is what a conformance test works with.
type testBundle struct {
	t     *testing.T
	ctx   context.Context
	s     *Store
	clock *testClock
	queue string // the test's default queue
	// segmented: retention runs close the open message segment and drop it at once (hold 0)
	// before their row-by-row batches (segmentedSetup).
	segmented bool
}

// setup gives the test a migrated schema of its own (pooledSchema), drives the store from a fake
// clock and names a default queue.
func setup(t *testing.T) *testBundle {
	t.Helper()
	s := pooledSchema(t)
	clock := &testClock{now: time.Now().UTC().Truncate(time.Microsecond)}
	s.SetClock(clock.Now)
	return &testBundle{t: t, ctx: context.Background(), s: s, clock: clock, queue: "q"}
}

// configure sets queue's options (the defaults changed by edit) with the labels its name
// derives, as the broker does for a configure without labels.
func (b *testBundle) configure(queue string, edit func(*mq.QueueOptions)) {
	b.t.Helper()
	ns, task := mq.DeriveLabels(queue)
	b.configureIn(queue, ns, task, edit)
}

func (b *testBundle) configureIn(queue, namespace, task string, edit func(*mq.QueueOptions)) {
	b.t.Helper()
	o := mq.DefaultQueueOptions()
	if edit != nil {
		edit(&o)
	}
	if _, _, err := b.s.Configure(b.ctx, queue, namespace, task, o); err != nil {
		b.t.Fatalf("configure %s: %v", queue, err)
	}
}

// pushRows pushes rows as they are and returns the results.
func (b *testBundle) pushRows(rows ...PushRow) []mq.PushResult {
	b.t.Helper()
	res, err := b.s.Push(b.ctx, rows)
	if err != nil {
		b.t.Fatalf("push: %v", err)
	}
	if len(res) != len(rows) {
		b.t.Fatalf("push: %d results for %d rows", len(res), len(rows))
	}
	return res
}

// row is a push of key (payload {"k":key}) into queue/partition.
func row(queue, partition, key string) PushRow {
	payload, _ := json.Marshal(map[string]string{"k": key})
	return PushRow{Queue: queue, Partition: partition, Key: key, ID: uuid.NewString(), Payload: payload}
}

// pushKeys pushes one message per key into partition of the test's queue, requiring queued.
func (b *testBundle) pushKeys(partition string, keys ...string) []mq.PushResult {
	b.t.Helper()
	return b.pushKeysTo(b.queue, partition, keys...)
}

func (b *testBundle) pushKeysTo(queue, partition string, keys ...string) []mq.PushResult {
	b.t.Helper()
	rows := make([]PushRow, len(keys))
	for i, k := range keys {
		rows[i] = row(queue, partition, k)
	}
	res := b.pushRows(rows...)
	for i, r := range res {
		if r.Status != mq.StatusQueued {
			b.t.Fatalf("push %s: %+v", keys[i], r)
		}
	}
	return res
}

// popped is the answer of one pop: its messages, in order, with the lease and group.
type popped struct {
	Messages []mq.Message
	LeaseID  string // "" with autoAck
	Group    string
}

func (p popped) keys() []string {
	out := make([]string, len(p.Messages))
	for i, m := range p.Messages {
		out[i] = m.TransactionID
	}
	return out
}

// partitions counts the partitions a pop claimed.
func (p popped) partitions() int {
	n := 0
	for i, m := range p.Messages {
		if i == 0 || m.PartitionID != p.Messages[i-1].PartitionID {
			n++
		}
	}
	return n
}

// req completes a pop request the way the broker does: the test's queue unless a namespace or
// task is named, queue mode for no group, batch and partitions at least 1, mode all, a fresh
// lease id.
func (b *testBundle) req(r PopRequest) PopRequest {
	if r.Queue == "" && r.Namespace == "" && r.Task == "" {
		r.Queue = b.queue
	}
	if r.Group == "" {
		r.Group = mq.QueueMode
	}
	r.Batch = max(r.Batch, 1)
	if r.Partition != "" || r.Partitions < 1 {
		r.Partitions = 1
	}
	if r.SubscriptionMode == "" {
		r.SubscriptionMode = "all"
	}
	if r.LeaseID == "" {
		r.LeaseID = uuid.NewString()
	}
	return r
}

// pop pops; ok is false when nothing was delivered.
func (b *testBundle) pop(r PopRequest) (popped, bool) {
	b.t.Helper()
	r = b.req(r)
	msgs, err := b.s.Pop(b.ctx, r)
	if err != nil {
		b.t.Fatalf("pop %+v: %v", r, err)
	}
	p := popped{Messages: msgs, Group: r.Group}
	if !r.AutoAck {
		p.LeaseID = r.LeaseID
	}
	return p, len(msgs) > 0
}

// mustPop pops and requires exactly the given keys, in order.
func (b *testBundle) mustPop(r PopRequest, keys ...string) popped {
	b.t.Helper()
	p, ok := b.pop(r)
	if !ok {
		b.t.Fatalf("pop %+v: nothing, want %v", r, keys)
	}
	if got := p.keys(); !slices.Equal(got, keys) {
		b.t.Fatalf("pop %+v: got %v, want %v", r, got, keys)
	}
	return p
}

// noPop requires a pop that delivers nothing.
func (b *testBundle) noPop(r PopRequest) {
	b.t.Helper()
	if p, ok := b.pop(r); ok {
		b.t.Fatalf("pop %+v: got %v, want nothing", r, p.keys())
	}
}

// ackOf is the ack of message i of p (with its lease and group) with status.
func ackOf(p popped, i int, status string) mq.AckItem {
	m := p.Messages[i]
	return mq.AckItem{PartitionID: m.PartitionID, TransactionID: m.TransactionID, Group: p.Group, Status: status, LeaseID: p.LeaseID}
}

// ack acknowledges items in one call.
func (b *testBundle) ack(items ...mq.AckItem) []mq.AckResult {
	b.t.Helper()
	res, err := b.s.Ack(b.ctx, items)
	if err != nil {
		b.t.Fatalf("ack: %v", err)
	}
	if len(res) != len(items) {
		b.t.Fatalf("ack: %d results for %d items", len(res), len(items))
	}
	return res
}

// mustAck acknowledges one item and requires success.
func (b *testBundle) mustAck(a mq.AckItem) mq.AckResult {
	b.t.Helper()
	r := b.ack(a)[0]
	if !r.Success {
		b.t.Fatalf("ack %+v: %+v (%s)", a, r, str(r.Error))
	}
	return r
}

// rejected requires an ack result rejected with msg.
func rejected(t *testing.T, r mq.AckResult, msg string) {
	t.Helper()
	if r.Success || str(r.Error) != msg || r.DLQ || r.AlreadyCommitted {
		t.Fatalf("ack %+v (%s), want rejected with %q", r, str(r.Error), msg)
	}
}

func str(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// drain pops with r until nothing comes, completing each batch, and returns every delivered
// key in delivery order.
func (b *testBundle) drain(r PopRequest) []string {
	b.t.Helper()
	var got []string
	for range 100 {
		p, ok := b.pop(r)
		if !ok {
			return got
		}
		got = append(got, p.keys()...)
		if !r.AutoAck {
			b.mustAck(ackOf(p, len(p.Messages)-1, mq.AckCompleted))
		}
	}
	b.t.Fatal("drain did not end")
	return nil
}

// consumerState is a row of table consumers.
type consumerState struct {
	Found          bool
	Cursor         int64
	LeaseID        *string
	LeaseExpiresAt *time.Time
	BatchEnd       *int64
	RetryCount     int
	RetryNotBefore *time.Time
}

// state reads the consumer row of (queue, partition, group).
func (b *testBundle) state(queue, partition, group string) consumerState {
	b.t.Helper()
	var c consumerState
	err := b.s.pool.QueryRow(b.ctx, `
		SELECT c.cursor, c.lease_id::text, c.lease_expires_at, c.batch_end, c.retry_count, c.retry_not_before
		FROM consumers c JOIN partitions p ON p.id = c.partition_id JOIN queues q ON q.id = p.queue_id
		WHERE q.name = $1 AND p.name = $2 AND c.consumer_group = $3`, queue, partition, group).
		Scan(&c.Cursor, &c.LeaseID, &c.LeaseExpiresAt, &c.BatchEnd, &c.RetryCount, &c.RetryNotBefore)
	if err == pgx.ErrNoRows {
		return c
	}
	if err != nil {
		b.t.Fatalf("consumer state: %v", err)
	}
	c.Found = true
	return c
}

// dlqRow is a row of table dlq.
type dlqRow struct {
	TransactionID, Group, Error, MessageID string
	RetryCount                             int
}

// dlq lists the DLQ rows of a queue in the order they were written.
func (b *testBundle) dlq(queue string) []dlqRow {
	b.t.Helper()
	rows, err := b.s.pool.Query(b.ctx, `
		SELECT transaction_id, consumer_group, error_message, message_id::text, retry_count
		FROM dlq WHERE queue_name = $1 ORDER BY failed_at, transaction_id`, queue)
	if err != nil {
		b.t.Fatalf("dlq: %v", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (dlqRow, error) {
		var d dlqRow
		err := r.Scan(&d.TransactionID, &d.Group, &d.Error, &d.MessageID, &d.RetryCount)
		return d, err
	})
	if err != nil {
		b.t.Fatalf("dlq: %v", err)
	}
	return out
}

// queryTexts runs a query of one text column and returns its values in order. It runs on a
// store unit, in the test context's scope (every tenant), so a pooled session that last served
// another tenant's call does not narrow it (scope.go).
func (b *testBundle) queryTexts(sql string, args ...any) (out []string, err error) {
	err = b.s.withConn(b.ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		rows, err := c.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	return out, err
}

// texts is queryTexts for the test's goroutine: an error fails the test.
func (b *testBundle) texts(sql string, args ...any) []string {
	b.t.Helper()
	out, err := b.queryTexts(sql, args...)
	if err != nil {
		b.t.Fatalf("%s: %v", sql, err)
	}
	return out
}

// partitionNames lists the partitions of a queue by name.
func (b *testBundle) partitionNames(queue string) []string {
	b.t.Helper()
	return b.texts(`SELECT p.name FROM partitions p JOIN queues q ON q.id = p.queue_id WHERE q.name = $1 ORDER BY p.name`, queue)
}

// exec runs SQL in the test's schema.
func (b *testBundle) exec(sql string, args ...any) {
	b.t.Helper()
	err := b.s.withConn(b.ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		_, err := c.Exec(ctx, sql, args...)
		return err
	})
	if err != nil {
		b.t.Fatalf("exec: %v", err)
	}
}

// near requires got within a millisecond of want.
func near(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if d := got.Sub(want); d < -time.Millisecond || d > time.Millisecond {
		t.Fatalf("%s %v, want %v", what, got, want)
	}
}
