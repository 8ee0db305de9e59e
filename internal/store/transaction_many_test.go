package store

// Transactions (qg_transaction_many): several transaction requests in one database transaction,
// each all or nothing on its own, each answered exactly as Transaction answers it alone.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queen-go/queen/internal/mq"
)

// txnT0 is the fake clock's start in both copies of the equivalence fixture.
var txnT0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// Fixed leases of the fixture's pops, the same in both copies.
const (
	txnLeaseA   = "0a000000-0000-4000-8000-000000000001"
	txnLeaseB   = "0a000000-0000-4000-8000-000000000002"
	txnLeaseC   = "0a000000-0000-4000-8000-000000000003"
	txnLeaseD   = "0a000000-0000-4000-8000-000000000004"
	txnLeaseE   = "0a000000-0000-4000-8000-000000000005"
	txnLeaseF   = "0a000000-0000-4000-8000-000000000006"
	txnLeaseX   = "0a000000-0000-4000-8000-000000000007" // expired
	txnStalePID = "0b000000-0000-4000-8000-000000000001" // cached for out/o9, no such partition
)

// txnID is a message id derived from its key, the same in both copies.
func txnID(key string) string { return uuid.NewSHA1(uuid.NameSpaceOID, []byte(key)).String() }

// txnRow is row() with txnID's id.
func txnRow(queue, partition, key string) PushRow {
	r := row(queue, partition, key)
	r.ID = txnID(key)
	return r
}

// txnEnv is one copy of the equivalence fixture in a schema of its own: the same names, keys,
// ids, leases and clock (partition ids differ).
type txnEnv struct {
	*testBundle
	pid  map[string]string // "queue/partition" -> id
	name map[string]string // id -> "queue/partition"
}

// newTxnEnv: queue q with partitions a (m1, m2), b, c, d, e (m1 each) and f (m1..m3), each
// popped in queue mode under its lease (f: batch 1); queue exp (leaseTime 1) with x/m1, popped
// and then expired; queue out with o1 (key "taken") and o2; a cached id for out/o9 that names
// no partition.
func newTxnEnv(t *testing.T, schema string) *txnEnv {
	t.Helper()
	s := migratedSchema(t, schema)
	clock := &testClock{now: txnT0}
	s.SetClock(clock.Now)
	e := &txnEnv{testBundle: &testBundle{t: t, ctx: context.Background(), s: s, clock: clock, queue: "q"},
		pid: map[string]string{}, name: map[string]string{}}
	e.configure("exp", func(o *mq.QueueOptions) { o.LeaseTime = 1 })
	var rows []PushRow
	for _, p := range []struct{ part, keys string }{{"a", "m1 m2"}, {"b", "m1"}, {"c", "m1"}, {"d", "m1"}, {"e", "m1"}, {"f", "m1 m2 m3"}} {
		for _, k := range strings.Fields(p.keys) {
			rows = append(rows, txnRow("q", p.part, p.part+k))
		}
	}
	rows = append(rows, txnRow("exp", "x", "xm1"), txnRow("out", "o1", "taken"), txnRow("out", "o2", "seed"))
	e.pushRows(rows...)
	for _, p := range []struct {
		queue, part, lease string
		batch              int
	}{{"q", "a", txnLeaseA, 2}, {"q", "b", txnLeaseB, 1}, {"q", "c", txnLeaseC, 1}, {"q", "d", txnLeaseD, 1},
		{"q", "e", txnLeaseE, 1}, {"q", "f", txnLeaseF, 1}, {"exp", "x", txnLeaseX, 1}} {
		if got, ok := e.pop(PopRequest{Queue: p.queue, Partition: p.part, Batch: p.batch, LeaseID: p.lease}); !ok || len(got.Messages) != p.batch {
			t.Fatalf("pop %s/%s: %v", p.queue, p.part, got.keys())
		}
	}
	e.clock.Advance(2500 * time.Millisecond) // exp's lease is gone, the others (300 s) live
	e.readNames()
	e.s.partitions.remember("", []string{"out"}, []string{"o9"}, []string{txnStalePID})
	return e
}

// readNames reads the ids of the partitions that exist now.
func (e *txnEnv) readNames() {
	for _, r := range e.texts(`SELECT q.name || '/' || p.name || ' ' || p.id FROM partitions p JOIN queues q ON q.id = p.queue_id`) {
		n, id, _ := strings.Cut(r, " ")
		e.pid[n], e.name[id] = id, n
	}
}

// ack is the transaction ack of key in q/part (completed, group queue mode), with lease.
func (e *txnEnv) ack(queue, part, key, lease string) TxnAck {
	return TxnAck{Ack: mq.AckItem{TransactionID: key, PartitionID: e.pid[queue+"/"+part], Group: mq.QueueMode,
		Status: mq.AckCompleted, LeaseID: lease}}
}

// txnCallOf builds a request of ops (PushRow, TxnAck or mq.AckItem), indexed in order.
func txnCallOf(required []string, ops ...any) TxnCall {
	var c TxnCall
	for i, op := range ops {
		switch op := op.(type) {
		case PushRow:
			c.Pushes = append(c.Pushes, TxnPush{Index: i, Item: op})
		case TxnAck:
			op.Index = i
			c.Acks = append(c.Acks, op)
		case mq.AckItem:
			c.Acks = append(c.Acks, TxnAck{Index: i, Ack: op})
		default:
			panic(fmt.Sprintf("op %d: %T", i, op))
		}
	}
	c.Required = required
	return c
}

// requests are the equivalence fixture's requests, for env e, in the order they are sent, with
// the outcome each must have.
func (e *txnEnv) requests() ([]TxnCall, []string) {
	sub := "alice"
	bad := txnRow("out", "o1", "r9")
	bad.Payload = []byte(`{bad`)
	dlq := e.ack("q", "e", "em1", "")
	dlq.Ack.Status, dlq.Ack.Error = mq.AckDLQ, "poison"
	calls := []TxnCall{
		txnCallOf([]string{txnLeaseA}, e.ack("q", "a", "am1", ""), txnRow("out", "o1", "r0")),     // 0: commits
		txnCallOf(nil, txnRow("out", "o1", "r1"), e.ack("exp", "x", "xm1", txnLeaseX)),            // 1: expired lease
		txnCallOf([]string{txnLeaseC}, e.ack("q", "c", "cm1", ""), txnRow("out", "o1", "taken")),  // 2: stored key
		txnCallOf(nil, txnRow("out", "o1", "r3"), e.ack("q", "a", "nope", "")),                    // 3: unknown message
		txnCallOf([]string{txnLeaseD}, txnRow("out", "new", "r4"), e.ack("q", "d", "dm1", "")),    // 4: new partition
		txnCallOf([]string{txnLeaseE}, txnRow("out", "o2", "r5"), txnRow("out", "o2", "r5"), dlq), // 5: commits, dup + DLQ
		txnCallOf(nil, txnRow("out", "o1", "r0")),                                                 // 6: request 0's key
		txnCallOf(nil, e.ack("q", "f", "fm3", "")),                                                // 7: beyond the batch
		txnCallOf(nil, e.ack("q", "a", "am2", txnLeaseA)),                                         // 8: after request 0
		txnCallOf(nil, bad), // 9: QDB
		txnCallOf([]string{txnLeaseB}, e.ack("q", "b", "bm1", "")), // 10: other tenant
		txnCallOf(nil, txnRow("out", "o9", "r11")),                 // 11: stale cached id
		{}, // 12: nothing
	}
	calls[0].ProducerSub = &sub
	calls[10].Tenant = "other"
	want := []string{"", "QG005", "QG002", "QG004", "", "", "QG002", "QG006", "", "QDB", "QG004", "", ""}
	return calls, want
}

// outcome renders a request's outcome with partition ids as names, comparable across copies.
func (e *txnEnv) outcome(res []mq.TxnResult, err error) string {
	e.readNames() // the partitions the requests created
	var rb *mq.RollbackError
	switch {
	case errors.As(err, &rb):
		return e.named(fmt.Sprintf("rollback %s %q, %d results", rb.Code, rb.Error(), len(res)))
	case err != nil:
		return fmt.Sprintf("error %v, %d results", err, len(res))
	}
	var sb strings.Builder
	for _, r := range res {
		fmt.Fprintf(&sb, "[%d %s dup=%v mid=%s part=%s queue=%s dlq=%v committed=%v released=%v]",
			r.Index, r.Kind, r.Duplicate, r.MessageID, e.name[r.PartitionID], r.Queue, r.DLQ, r.AlreadyCommitted, r.LeaseReleased)
	}
	return sb.String()
}

// named replaces the partition ids in s by their names.
func (e *txnEnv) named(s string) string {
	for id, n := range e.name {
		s = strings.ReplaceAll(s, id, n)
	}
	return s
}

// dump is every row the requests can write, ids as names, in a fixed order.
func (e *txnEnv) dump() []string {
	e.t.Helper()
	return e.texts(`
		SELECT 'message ' || q.name || '/' || p.name || ' ' || m.position || ' ' || m.transaction_id || ' ' || m.id
		       || ' ' || m.payload::text || ' ' || coalesce(m.producer_sub, '-') || ' ' || m.created_at
		FROM messages m JOIN partitions p ON p.id = m.partition_id JOIN queues q ON q.id = p.queue_id
		UNION ALL
		SELECT 'partition ' || q.name || '/' || p.name || ' ' || h.last_position
		FROM partitions p JOIN queues q ON q.id = p.queue_id JOIN partition_heads h ON h.partition_id = p.id
		UNION ALL
		SELECT 'consumer ' || q.name || '/' || p.name || ' ' || c.consumer_group || ' ' || c.cursor || ' '
		       || coalesce(c.lease_id::text, '-') || ' ' || coalesce(c.batch_end::text, '-') || ' ' || c.retry_count
		       || ' ' || c.messages_consumed || ' ' || c.batches_consumed
		FROM consumers c JOIN partitions p ON p.id = c.partition_id JOIN queues q ON q.id = p.queue_id
		UNION ALL
		SELECT 'dlq ' || d.queue_name || '/' || d.partition_name || ' ' || d.consumer_group || ' ' || d.transaction_id
		       || ' ' || d.message_id || ' ' || d.error_message || ' ' || d.retry_count
		FROM dlq d
		UNION ALL
		SELECT 'work ' || q.name || '/' || p.name || ' ' || w.consumer_group
		FROM partition_work w JOIN partitions p ON p.id = w.partition_id JOIN queues q ON q.id = p.queue_id
		ORDER BY 1`)
}

// Each merged request gets exactly the outcome Transaction gives it alone (run one after
// another on a copy of the fixture), failing ones change nothing, and both copies end equal.
func TestTransactionsEachAsAlone(t *testing.T) {
	merged := newTxnEnv(t, "txn_many_merged")
	alone := newTxnEnv(t, "txn_many_alone")

	calls, want := merged.requests()
	out, err := merged.s.Transactions(merged.ctx, calls)
	if err != nil || len(out) != len(calls) {
		t.Fatalf("Transactions: %d outcomes, %v", len(out), err)
	}
	aloneCalls, _ := alone.requests()
	for r, c := range aloneCalls {
		res, err := alone.s.Transaction(alone.ctx, c.Pushes, c.Acks, c.Required, c.ProducerSub, c.Tenant)
		got, exp := merged.outcome(out[r].Results, out[r].Err), alone.outcome(res, err)
		t.Logf("request %d: %s", r, got)
		if got != exp {
			t.Errorf("request %d merged: %s\n            alone:  %s", r, got, exp)
		}
		var rb *mq.RollbackError
		switch {
		case want[r] == "" && err != nil, want[r] != "" && (!errors.As(err, &rb) || string(rb.Code) != want[r]):
			t.Errorf("request %d alone: %v, want %s", r, err, or(want[r], "commit"))
		}
	}

	// Every row as after the requests alone.
	if got, exp := merged.dump(), alone.dump(); !slices.Equal(got, exp) {
		t.Errorf("merged state differs from the requests run alone:\nmerged: %s\nalone:  %s",
			strings.Join(got, "\n        "), strings.Join(exp, "\n        "))
	}
	// And explicitly: the failed requests wrote nothing, the others what they pushed.
	b := merged.testBundle
	if keys := b.texts(`SELECT transaction_id FROM messages WHERE transaction_id IN ('r0', 'r1', 'r3', 'r4', 'r5', 'r9', 'r11') ORDER BY 1`); !slices.Equal(keys, []string{"r0", "r11", "r4", "r5"}) {
		t.Errorf("stored %v", keys)
	}
	if sub := b.texts(`SELECT producer_sub FROM messages WHERE transaction_id = 'r0'`); !slices.Equal(sub, []string{"alice"}) {
		t.Errorf("r0's producer sub %v", sub)
	}
	for _, p := range []struct {
		queue, part string
		cursor      int64
		leased      bool
	}{{"q", "a", 2, false}, {"q", "b", 0, true}, {"q", "c", 0, true}, {"q", "d", 1, false}, {"q", "e", 1, false},
		{"q", "f", 0, true}, {"exp", "x", 0, true}} {
		if c := b.state(p.queue, p.part, mq.QueueMode); c.Cursor != p.cursor || (c.LeaseID != nil) != p.leased {
			t.Errorf("consumer %s/%s: %+v, want cursor %d leased %v", p.queue, p.part, c, p.cursor, p.leased)
		}
	}
	if d := b.dlq("q"); len(d) != 1 || d[0].TransactionID != "em1" || d[0].Error != "poison" {
		t.Errorf("dlq %+v", d)
	}
	if ids := merged.s.partitions.lookup("", []string{"out", "out"}, []string{"o1", "o9"}); ids == nil || ids[1] == txnStalePID {
		t.Errorf("cache after the call: %v", ids)
	}

	// A second call finds the pushes' partitions in the cache and still answers as alone.
	again := []TxnCall{txnCallOf(nil, txnRow("out", "o1", "s0")), txnCallOf(nil, txnRow("out", "o1", "taken")), txnCallOf(nil, txnRow("out", "new", "s2"))}
	out, err = merged.s.Transactions(merged.ctx, again)
	if err != nil {
		t.Fatal(err)
	}
	for r, c := range again {
		res, err := alone.s.Transaction(alone.ctx, c.Pushes, c.Acks, c.Required, c.ProducerSub, c.Tenant)
		if got, exp := merged.outcome(out[r].Results, out[r].Err), alone.outcome(res, err); got != exp {
			t.Errorf("second call, request %d merged: %s\n                         alone:  %s", r, got, exp)
		}
	}
	if got, exp := merged.dump(), alone.dump(); !slices.Equal(got, exp) {
		t.Errorf("after the second call the states differ")
	}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Goroutines send merged calls whose requests each ack a message of their own and push to
// output partitions all calls share, in differing orders, while plain pushes write to the same
// partitions in reverse order: no call deadlocks (the pre-lock keeps the global lock order),
// every input is acked once and every output stored once.
func TestTransactionsConcurrentNoDeadlock(t *testing.T) {
	const (
		workers  = 6
		calls    = 6
		perCall  = 4
		outParts = 4
		inputs   = workers * calls * perCall
	)
	b := setup(t)
	in := make([]PushRow, inputs)
	for i := range in {
		in[i] = row("in", fmt.Sprintf("i%03d", i), fmt.Sprintf("in-%03d", i))
	}
	b.pushRows(in...)
	for o := range outParts {
		b.pushRows(row("out", fmt.Sprintf("o%d", o), fmt.Sprintf("seed-%d", o)))
	}
	// One pop claims every input partition (one message each) under one lease.
	src, _ := b.pop(PopRequest{Queue: "in", Batch: inputs, Partitions: inputs})
	if len(src.Messages) != inputs {
		t.Fatalf("popped %d inputs, want %d", len(src.Messages), inputs)
	}

	var wg sync.WaitGroup
	errs := make(chan error, workers*calls*perCall+4)
	for w := range workers {
		wg.Go(func() {
			for c := range calls {
				batch := make([]TxnCall, perCall)
				for r := range batch {
					n := (w*calls+c)*perCall + r
					m := src.Messages[n]
					ack := TxnAck{Ack: mq.AckItem{TransactionID: m.TransactionID, PartitionID: m.PartitionID,
						Group: mq.QueueMode, Status: mq.AckCompleted}}
					// Two output partitions per request; half the calls take them in the
					// opposite order: one call's first request holds what another's second
					// request needs, and the other way round.
					k := r
					if (w+c)%2 == 1 {
						k = perCall - 1 - r
					}
					o1, o2 := k%outParts, (k+2)%outParts
					p1, p2 := row("out", fmt.Sprintf("o%d", o1), fmt.Sprintf("out-%03d-1", n)), row("out", fmt.Sprintf("o%d", o2), fmt.Sprintf("out-%03d-2", n))
					if n%3 == 0 {
						batch[r] = txnCallOf([]string{src.LeaseID}, p1, ack, p2)
					} else {
						batch[r] = txnCallOf([]string{src.LeaseID}, ack, p2, p1)
					}
				}
				out, err := b.s.Transactions(b.ctx, batch)
				if err != nil {
					errs <- fmt.Errorf("worker %d call %d: %w", w, c, err)
					continue
				}
				for r, o := range out {
					if o.Err != nil {
						errs <- fmt.Errorf("worker %d call %d request %d: %w", w, c, r, o.Err)
						continue
					}
					for _, res := range o.Results {
						if res.Kind == "ack" && (res.AlreadyCommitted || !res.LeaseReleased) {
							errs <- fmt.Errorf("worker %d call %d request %d: ack %+v", w, c, r, res)
						}
					}
				}
			}
		})
	}
	for p := range 2 {
		wg.Go(func() {
			for i := range 20 {
				rows := make([]PushRow, outParts)
				for o := range outParts {
					rows[o] = row("out", fmt.Sprintf("o%d", outParts-1-o), fmt.Sprintf("plain-%d-%02d-%d", p, i, o))
				}
				if _, err := b.s.Push(b.ctx, rows); err != nil {
					errs <- fmt.Errorf("plain push %d/%d: %w", p, i, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	if got := b.texts(`SELECT x.cursor || ' ' || x.released || ' ' || count(*) FROM (
			SELECT c.cursor, c.lease_id IS NULL AS released FROM consumers c
			JOIN partitions p ON p.id = c.partition_id JOIN queues q ON q.id = p.queue_id WHERE q.name = 'in') x
		GROUP BY x.cursor, x.released ORDER BY 1`); !slices.Equal(got, []string{fmt.Sprintf("1 true %d", inputs)}) {
		t.Errorf("input consumers (cursor, released, count): %v, want every one of %d acked", got, inputs)
	}
	if got := b.texts(`SELECT count(*) || ' ' || count(DISTINCT transaction_id) FROM messages m
		JOIN partitions p ON p.id = m.partition_id JOIN queues q ON q.id = p.queue_id
		WHERE q.name = 'out' AND m.transaction_id LIKE 'out-%'`); !slices.Equal(got, []string{fmt.Sprintf("%d %d", 2*inputs, 2*inputs)}) {
		t.Errorf("outputs (stored, distinct): %v, want %d each", got, 2*inputs)
	}
}

// A merged call that fails as a whole, here at its commit (a deferred constraint trigger the
// test adds rejects one request's push after every request ran), commits nothing of any
// request and returns an error; so does one on a cancelled context, and one of too many
// requests, which never reaches the database.
func TestTransactionsWholeCallError(t *testing.T) {
	b := setup(t)
	src := b.seed("in", "", "m1")
	b.pushKeysTo("out", "o", "seed")
	b.exec(`CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.transaction_id = 'poison' THEN
				RAISE EXCEPTION 'poisoned';
			END IF;
			RETURN NULL;
		END $$`)
	b.exec(`CREATE CONSTRAINT TRIGGER poison AFTER INSERT ON messages DEFERRABLE INITIALLY DEFERRED
		FOR EACH ROW EXECUTE FUNCTION poison()`)
	calls := []TxnCall{
		txnCallOf([]string{src.LeaseID}, txnAck(src, 0), row("out", "o", "fine")),
		txnCallOf(nil, row("out", "o", "poison")),
		txnCallOf(nil, row("out", "o", "fine-too")),
	}
	before := b.texts(`SELECT transaction_id FROM messages ORDER BY 1`)
	unchanged := func(what string) {
		t.Helper()
		if got := b.texts(`SELECT transaction_id FROM messages ORDER BY 1`); !slices.Equal(got, before) {
			t.Errorf("%s: messages %v, want %v", what, got, before)
		}
		b.wantState("in", mq.QueueMode, 0, true)
	}

	out, err := b.s.Transactions(b.ctx, calls)
	if err == nil || !strings.Contains(err.Error(), "poisoned") || out != nil {
		t.Fatalf("Transactions: %v, %v; want the commit's error", out, err)
	}
	unchanged("failed commit")

	ctx, cancel := context.WithCancel(b.ctx)
	cancel()
	if out, err := b.s.Transactions(ctx, calls); err == nil || out != nil {
		t.Fatalf("cancelled: %v, %v; want an error", out, err)
	}
	unchanged("cancelled context")

	many := make([]TxnCall, MaxTxnCall+1)
	for i := range many {
		many[i] = txnCallOf(nil, row("out", "o", fmt.Sprintf("k%d", i)))
	}
	if out, err := b.s.Transactions(b.ctx, many); err == nil || out != nil {
		t.Fatalf("%d requests: %v, %v; want an error", len(many), out, err)
	}
	unchanged("too many requests")

	// The caller then runs each alone: the others commit, the poisoned one fails at its commit.
	for r, c := range calls {
		_, err := b.s.Transaction(b.ctx, c.Pushes, c.Acks, c.Required, c.ProducerSub, c.Tenant)
		var rb *mq.RollbackError
		if (r == 1) != (errors.As(err, &rb) && rb.Code == mq.CodeDatabase) || (r != 1 && err != nil) {
			t.Errorf("request %d alone: %v", r, err)
		}
	}
	b.wantState("in", mq.QueueMode, 1, false)
}
