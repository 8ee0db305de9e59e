package store

import (
	"context"
	_ "embed"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queen-go/queen/internal/mq"
)

// The item-by-item qg_ack_items before the set-based rewrite, installed as qg_ack_items_ref.
//
//go:embed testdata/ack_items_reference.sql
var ackItemsReference string

const (
	eqParts      = 10000 // partitions of queue "eq", one ack pair each
	eqPairsQueue = 50    // partitions of queue "eq2", acked by two groups each
	eqGroup      = "g1"
	eqLease      = "11111111-1111-4111-8111-111111111111" // the pop of "eq" (queue mode)
	eqLease2     = "22222222-2222-4222-8222-222222222222" // the pop of "eq2" by the queue mode
	eqLeaseG1    = "33333333-3333-4333-8333-333333333333" // the pop of "eq2" by g1
	eqWrongLease = "44444444-4444-4444-8444-444444444444"
	eqNoPart     = "55555555-5555-4555-8555-555555555555" // no such partition
)

// eqEnv is one copy of the equivalence fixture: the same names, keys, leases and clock in its
// own schema (partition ids differ).
type eqEnv struct {
	s   *Store
	now time.Time
	pid map[string]string // "queue/partition" -> partition id
}

var eqT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func eqKeys(k int) []string {
	keys := make([]string, 1+k%3)
	for j := range keys {
		keys[j] = fmt.Sprintf("k%05d-%d", k, j)
	}
	return keys
}

// newEqEnv pushes 1-3 messages on each of 10,000 partitions of "eq" and pops them all under one
// lease; pushes 2 messages on each of 50 partitions of "eq2", popped by the queue mode and by
// g1; then moves some pairs into the states the items must meet: an expired lease (k%10 = 5),
// retries exhausted (6), a first message already committed (9), a message after the batch (k%7 = 0).
func newEqEnv(t *testing.T, schema string) *eqEnv {
	t.Helper()
	ctx := context.Background()
	e := &eqEnv{s: migratedSchema(t, schema), now: eqT0, pid: map[string]string{}}
	e.s.SetClock(func() time.Time { return e.now })
	var rows []PushRow
	for k := range eqParts {
		for _, key := range eqKeys(k) {
			rows = append(rows, PushRow{Queue: "eq", Partition: fmt.Sprintf("p%05d", k), Key: key, ID: eqID(key), Payload: []byte(`{"n":1}`)})
		}
	}
	for k := range eqPairsQueue {
		for j := range 2 {
			key := fmt.Sprintf("r%02d-%d", k, j)
			rows = append(rows, PushRow{Queue: "eq2", Partition: fmt.Sprintf("q%02d", k), Key: key, ID: eqID(key), Payload: []byte(`2`)})
		}
	}
	if _, err := e.s.Push(ctx, rows); err != nil {
		t.Fatal(err)
	}
	e.exec(t, `UPDATE queues SET retry_limit = 2, retry_delay = 5000`)
	e.now = eqT0.Add(time.Second)
	// The 10,000 partitions are claimed 1,000 per pop, the most one pop may claim
	// (docs/api/data-api.md: partitions above 1,000 read as 1,000), all under one lease: a first
	// claim takes an advisory lock until its commit, and 10,000 of them in one transaction can
	// exhaust the lock table of a server others share.
	popRequests := []PopRequest{
		{Queue: "eq2", Group: batchGroup, Batch: 2 * eqPairsQueue, Partitions: eqPairsQueue, LeaseID: eqLease2, SubscriptionMode: "all"},
		{Queue: "eq2", Group: eqGroup, Batch: 2 * eqPairsQueue, Partitions: eqPairsQueue, LeaseID: eqLeaseG1, SubscriptionMode: "all"},
	}
	for _, p := range append([]PopRequest{{Queue: "eq", Group: batchGroup, Batch: len(rows), Partitions: 1000, LeaseID: eqLease, SubscriptionMode: "all"}}, popRequests...) {
		var msgs []mq.Message
		for {
			got, err := e.s.Pop(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, got...)
			if len(got) == 0 || p.Queue != "eq" {
				break
			}
		}
		want := len(rows) - 2*eqPairsQueue
		if p.Queue == "eq2" {
			want = 2 * eqPairsQueue
		}
		if len(msgs) != want {
			t.Fatalf("pop %s/%s: %d messages, want %d", p.Queue, p.Group, len(msgs), want)
		}
	}
	e.exec(t, `UPDATE consumers c SET lease_expires_at = $1 FROM partitions p
		WHERE p.id = c.partition_id AND p.name LIKE 'p%' AND substr(p.name, 2)::int % 10 = 5`, eqT0.Add(1500*time.Millisecond))
	e.exec(t, `UPDATE consumers c SET retry_count = 2 FROM partitions p
		WHERE p.id = c.partition_id AND p.name LIKE 'p%' AND substr(p.name, 2)::int % 10 = 6`)
	e.exec(t, `UPDATE consumers c SET cursor = 1 FROM partitions p
		WHERE p.id = c.partition_id AND p.name LIKE 'p%' AND substr(p.name, 2)::int % 10 = 9`)
	var extra []PushRow
	for k := 0; k < eqParts; k += 7 {
		key := fmt.Sprintf("x%05d", k)
		extra = append(extra, PushRow{Queue: "eq", Partition: fmt.Sprintf("p%05d", k), Key: key, ID: eqID(key), Payload: []byte(`3`)})
	}
	if _, err := e.s.Push(ctx, extra); err != nil {
		t.Fatal(err)
	}
	rs, err := e.s.pool.Query(ctx, `SELECT q.name || '/' || p.name, p.id::text FROM partitions p JOIN queues q ON q.id = p.queue_id`)
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var name, id string
		if err := rs.Scan(&name, &id); err != nil {
			t.Fatal(err)
		}
		e.pid[name] = id
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	e.now = eqT0.Add(2 * time.Second)
	return e
}

// eqID is a message id derived from its key, the same in both environments.
func eqID(key string) string {
	var b [16]byte
	copy(b[:], key)
	b[6], b[8] = 0x40|b[6]&0x0f, 0x80|b[8]&0x3f
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func (e *eqEnv) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := e.s.pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// eqItem is an ack item by names, resolved in each environment.
type eqItem struct {
	queue, part, key, group, status, lease, err string
}

// eqItems: every partition of "eq" gets a pattern by k%10 — unknown key, failed first (a release
// point before completions), a retry after completions or before DLQ requests, DLQ, a wrong lease, an expired lease
// (with and without a lease on the item), retries exhausted, reverse order with a duplicate,
// a partial completion, an already committed message — plus an item beyond the batch on
// k%7 = 0; "eq2" is acked by two groups on the same partitions; a few items name no
// partition. The whole list is shuffled, so the pairs interleave.
func eqItems() []eqItem {
	var out []eqItem
	for k := range eqParts {
		part := fmt.Sprintf("p%05d", k)
		keys := eqKeys(k)
		n := len(keys)
		it := func(key, status, lease string) eqItem {
			return eqItem{queue: "eq", part: part, key: key, group: batchGroup, status: status, lease: lease}
		}
		all := func(status, lease string) {
			for _, key := range keys {
				out = append(out, it(key, status, lease))
			}
		}
		switch k % 10 {
		case 0:
			out = append(out, it(fmt.Sprintf("nope%05d", k), "completed", eqLease))
			all("completed", eqLease)
		case 1:
			out = append(out, it(keys[0], "failed", eqLease))
			for _, key := range keys[1:] {
				out = append(out, it(key, "completed", eqLease))
			}
		case 2:
			if k%20 == 2 { // completions before the release point
				out = append(out, it(keys[n-1], "retry", eqLease))
				for _, key := range keys[:n-1] {
					out = append(out, it(key, "completed", eqLease))
				}
			} else { // DLQ requests after it: no effect
				for _, key := range keys[1:] {
					out = append(out, it(key, "dlq", eqLease))
				}
				out = append(out, it(keys[0], "retry", eqLease))
			}
		case 3:
			d := it(keys[0], "dlq", eqLease)
			if k%20 == 3 {
				d.err = "bad payload"
			}
			out = append(out, d)
			for _, key := range keys[1:] {
				out = append(out, it(key, "completed", eqLease))
			}
		case 4:
			all("completed", eqWrongLease)
		case 5:
			out = append(out, it(keys[0], "completed", eqLease), it(keys[n-1], "completed", ""))
		case 6:
			all("failed", eqLease)
		case 7:
			for j := n - 1; j >= 0; j-- {
				out = append(out, it(keys[j], "completed", eqLease))
			}
			out = append(out, it(keys[0], "completed", eqLease))
		case 8:
			out = append(out, it(keys[0], "completed", eqLease))
		case 9:
			all("completed", eqLease)
		}
		if k%7 == 0 {
			out = append(out, it(fmt.Sprintf("x%05d", k), "completed", eqLease))
		}
	}
	for k := range eqPairsQueue {
		part := fmt.Sprintf("q%02d", k)
		r0, r1 := fmt.Sprintf("r%02d-0", k), fmt.Sprintf("r%02d-1", k)
		out = append(out,
			eqItem{queue: "eq2", part: part, key: r1, group: eqGroup, status: "failed", lease: eqLeaseG1},
			eqItem{queue: "eq2", part: part, key: r0, group: eqGroup, status: "completed", lease: eqLeaseG1},
			eqItem{queue: "eq2", part: part, key: r0, group: batchGroup, status: "completed", lease: eqLease2},
			eqItem{queue: "eq2", part: part, key: r1, group: batchGroup, status: [...]string{"completed", "dlq", "retry"}[k%3], lease: eqLease2})
	}
	for k := range 5 {
		out = append(out, eqItem{part: "", key: fmt.Sprintf("k%05d-0", k), group: batchGroup, status: "completed", lease: eqLease})
	}
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func (e *eqEnv) ackItems(items []eqItem) []mq.AckItem {
	out := make([]mq.AckItem, len(items))
	for i, it := range items {
		pid := eqNoPart
		if it.part != "" {
			pid = e.pid[it.queue+"/"+it.part]
		}
		out[i] = mq.AckItem{PartitionID: pid, TransactionID: it.key, Group: it.group, Status: it.status, LeaseID: it.lease, Error: it.err}
	}
	return out
}

// ackPerPair acks items one (partition, group) pair at a time, in request order within each
// pair, through the reference function; results come back in item order.
func (e *eqEnv) ackPerPair(t *testing.T, items []mq.AckItem) []mq.AckResult {
	t.Helper()
	ctx := context.Background()
	type pair struct{ pid, group string }
	var order []pair
	byPair := map[pair][]int{}
	for i, it := range items {
		p := pair{it.PartitionID, it.Group}
		if _, ok := byPair[p]; !ok {
			order = append(order, p)
		}
		byPair[p] = append(byPair[p], i)
	}
	ref := strings.Replace(sqlAck, "qg_ack_items(", "qg_ack_items_ref(", 1)
	out := make([]mq.AckResult, len(items))
	batch := &pgx.Batch{}
	for _, p := range order {
		idx := byPair[p]
		sub := make([]mq.AckItem, len(idx))
		for j, i := range idx {
			sub[j] = items[i]
		}
		a := ackArrays(sub)
		args := ackArgs{PIDs: a.pids, Keys: a.keys, Groups: a.groups, Statuses: a.statuses, Leases: a.leases,
			Errors: a.errors, Now: e.now}
		batch.Queue(ref, args.args()...).Query(func(rows pgx.Rows) error {
			j := 0
			for rows.Next() {
				var r mq.AckResult
				if err := rows.Scan(&r.Success, &r.Error, &r.Queue, &r.Partition, &r.LeaseReleased, &r.DLQ, &r.AlreadyCommitted); err != nil {
					return err
				}
				r.Error = ackVerdict(r.Error)
				out[idx[j]] = r
				j++
			}
			if j != len(idx) {
				return fmt.Errorf("pair %v: %d results for %d items", p, j, len(idx))
			}
			return rows.Err()
		})
	}
	if err := e.s.pool.SendBatch(ctx, batch).Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// dump lists the rows an ack writes — consumer rows, DLQ entries, the work index — by names.
func (e *eqEnv) dump(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, q := range []string{
		`SELECT 'consumer', q.name, p.name, c.consumer_group, c.cursor, c.lease_id, c.lease_expires_at, c.batch_end,
		        c.retry_count, c.retry_not_before, c.messages_consumed, c.batches_consumed, c.last_consumed_at
		 FROM consumers c JOIN partitions p ON p.id = c.partition_id JOIN queues q ON q.id = p.queue_id
		 ORDER BY 2, 3, 4`,
		`SELECT 'dlq', d.queue_name, d.partition_name, d.consumer_group, d.transaction_id, d.message_id, d.error_message,
		        d.retry_count, d.payload::text, d.failed_at
		 FROM dlq d ORDER BY 2, 3, 4, 5`,
		`SELECT 'work', q.name, p.name, w.consumer_group, w.next_at
		 FROM partition_work w JOIN partitions p ON p.id = w.partition_id JOIN queues q ON q.id = p.queue_id
		 ORDER BY 2, 3, 4`,
	} {
		rows, err := e.s.pool.Query(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			v, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprint(v))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func fmtResult(r mq.AckResult) string {
	str := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return *p
	}
	return fmt.Sprintf("success=%v error=%s queue=%s partition=%s released=%v dlq=%v committed=%v",
		r.Success, str(r.Error), str(r.Queue), str(r.Partition), r.LeaseReleased, r.DLQ, r.AlreadyCommitted)
}

// An ack batch over 10,000 distinct partitions (and pairs of two groups on one partition) with
// every kind of item — completed, failed, retry, dlq, unknown keys and partitions, wrong and
// expired leases, exhausted retries, already committed, beyond the batch, duplicates — gives
// exactly the per-item results and writes exactly the rows that acking the same items one pair
// at a time through the former item-by-item function does (docs/api/operations.md §9.4: the set-based
// qg_ack_items is the same evaluation, docs/api/concepts.md §8.2-8.3).
func TestAckBatchEqualsAckPerPair(t *testing.T) {
	ctx := context.Background()
	batchEnv := newEqEnv(t, "ack_equiv_batch")
	pairEnv := newEqEnv(t, "ack_equiv_pairs")
	if _, err := pairEnv.s.pool.Exec(ctx, ackItemsReference); err != nil {
		t.Fatal(err)
	}
	items := eqItems()

	got, err := batchEnv.s.Ack(ctx, batchEnv.ackItems(items))
	if err != nil {
		t.Fatal(err)
	}
	want := pairEnv.ackPerPair(t, pairEnv.ackItems(items))
	if len(got) != len(want) {
		t.Fatalf("%d results, want %d", len(got), len(want))
	}
	kinds := map[string]int{}
	for i := range want {
		g, w := fmtResult(got[i]), fmtResult(want[i])
		if g != w {
			t.Fatalf("item %d %+v:\n got %s\nwant %s", i, items[i], g, w)
		}
		kinds[strings.SplitN(w, " queue=", 2)[0]+fmt.Sprintf(" released=%v dlq=%v committed=%v", want[i].LeaseReleased, want[i].DLQ, want[i].AlreadyCommitted)]++
	}
	// The fixture reaches every verdict and effect.
	for _, must := range []string{"error=Message not found", "error=Invalid or expired lease", "error=Message is beyond the leased batch", "dlq=true", "committed=true", "released=false"} {
		found := false
		for k := range kinds {
			found = found || strings.Contains(k, must)
		}
		if !found {
			t.Errorf("no item with %q among %v", must, kinds)
		}
	}
	if len(kinds) < 6 {
		t.Errorf("only %d kinds of results: %v", len(kinds), kinds)
	}

	gotRows, wantRows := batchEnv.dump(t), pairEnv.dump(t)
	if !slices.Equal(gotRows, wantRows) {
		for i := range min(len(gotRows), len(wantRows)) {
			if gotRows[i] != wantRows[i] {
				t.Fatalf("row %d:\n got %s\nwant %s", i, gotRows[i], wantRows[i])
			}
		}
		t.Fatalf("%d rows, want %d", len(gotRows), len(wantRows))
	}
}
