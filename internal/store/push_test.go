package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queen-go/queen/internal/mq"
)

// One call naming several (queue, partition) pairs, interleaved and repeated, some of them
// new: each item lands in the partition it names (the names travel once per distinct pair).
func TestPushResolvesEachItemsPartition(t *testing.T) {
	ctx := context.Background()
	s := migratedSchema(t, "push_pairs")
	pairs := [][2]string{{"pairs-a", "p1"}, {"pairs-b", "p1"}, {"pairs-a", "p2"}, {"pairs-a", "p1"}, {"pairs-b", "p1"}, {"pairs-c", "Default"}}
	var items []PushRow
	for i := range 4 {
		for _, p := range pairs {
			items = append(items, PushRow{Queue: p[0], Partition: p[1], Key: fmt.Sprint("k-", i, "-", p[0], "-", p[1], "-", len(items)),
				ID: uuid.NewString(), Payload: []byte(`{}`)})
		}
	}
	res, err := s.Push(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(items) {
		t.Fatalf("%d results for %d items", len(res), len(items))
	}
	for i, r := range res {
		var queue, partition string
		if err := s.pool.QueryRow(ctx, `SELECT q.name, p.name FROM partitions p JOIN queues q ON q.id = p.queue_id
			WHERE p.id = $1`, r.PartitionID).Scan(&queue, &partition); err != nil {
			t.Fatal(err)
		}
		if r.Status != mq.StatusQueued || queue != items[i].Queue || partition != items[i].Partition || r.Queue != items[i].Queue {
			t.Fatalf("item %d (%s/%s): %+v in %s/%s", i, items[i].Queue, items[i].Partition, r, queue, partition)
		}
	}
}

// A push names partitions whose ids this store remembers from earlier pushes. When one was
// deleted meanwhile (here with its queue, possibly by another instance), the push finds it
// missing, resolves the names again, creates the queue anew and writes there.
func TestPushAfterItsPartitionWasDeletedWritesToTheNewOne(t *testing.T) {
	ctx := context.Background()
	s, other := migratedSchema(t, "push_cache"), openSchema(t, "push_cache")
	const queue = "cached"
	push := func(key string) mq.PushResult {
		t.Helper()
		res, err := s.Push(ctx, []PushRow{{Queue: queue, Partition: "p", Key: key, ID: uuid.NewString(), Payload: []byte(`1`)}})
		if err != nil || len(res) != 1 || res[0].Status != mq.StatusQueued {
			t.Fatalf("push %s: %v %+v", key, err, res)
		}
		return res[0]
	}
	first := push("k1")
	if again := push("k2"); again.PartitionID != first.PartitionID {
		t.Fatalf("same partition, ids %s then %s", first.PartitionID, again.PartitionID)
	}
	if existed, err := other.DeleteQueue(ctx, queue); err != nil || !existed {
		t.Fatalf("delete: %v %v", existed, err)
	}
	recreated := push("k1") // the key is free again: the old message went with its queue
	if recreated.PartitionID == first.PartitionID {
		t.Fatalf("wrote to the deleted partition %s", first.PartitionID)
	}
	var n int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM messages WHERE partition_id = $1", recreated.PartitionID).Scan(&n); err != nil || n != 1 {
		t.Fatalf("messages in the new partition: %d, %v", n, err)
	}
	if ids := s.partitions.lookup("", []string{queue}, []string{"p"}); len(ids) != 1 || ids[0] != recreated.PartitionID {
		t.Fatalf("remembered %v, want the new id %s", ids, recreated.PartitionID)
	}
}

// The cache of partition ids starts over instead of growing past its bound.
func TestPartitionCacheStaysBounded(t *testing.T) {
	c := partitionCache{maxEntries: 3}
	for i := range 10 {
		c.remember("", []string{"q"}, []string{fmt.Sprint(i)}, []string{fmt.Sprint("id", i)})
		if len(c.ids) > 3 {
			t.Fatalf("%d entries after %d pairs", len(c.ids), i+1)
		}
	}
	if ids := c.lookup("", []string{"q"}, []string{"9"}); len(ids) != 1 || ids[0] != "id9" {
		t.Fatalf("the newest pair is not remembered: %v", ids)
	}
	if c.lookup("", []string{"q", "q"}, []string{"9", "0"}) != nil {
		t.Fatal("a lookup with an unknown pair must resolve all names")
	}
}

// Deduplication of keys (docs/api/concepts.md §4.3), decided by qg_push_items. Moved from
// internal/httpapi/dedup_test.go.

func TestDedupWithinOneRequest(t *testing.T) {
	b := setup(t)
	first, second, other, third := row(b.queue, "pA", "k1"), row(b.queue, "pA", "k1"), row(b.queue, "pA", "k2"), row(b.queue, "pA", "k1")
	first.Payload, second.Payload, third.Payload = []byte(`"first"`), []byte(`"second"`), []byte(`"third"`)
	res := b.pushRows(first, second, other, third)
	if res[0].Status != mq.StatusQueued || res[2].Status != mq.StatusQueued {
		t.Fatalf("push %+v", res)
	}
	for _, i := range []int{1, 3} {
		if r := res[i]; r.Status != mq.StatusDuplicate || r.MessageID != res[0].MessageID {
			t.Fatalf("item %d: %+v, want duplicate of %s", i, r, res[0].MessageID)
		}
	}
	p := b.mustPop(PopRequest{Batch: 10}, "k1", "k2")
	if string(p.Messages[0].Payload) != `"first"` || p.Messages[0].ID != res[0].MessageID {
		t.Fatalf("the first item must win: %+v", p.Messages[0])
	}
}

func TestDedupAcrossRequestsAndPartitions(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.DedupWindowSeconds = 60 })
	first := b.pushKeys("pA", "k1")[0]
	// The same key in another partition is another message.
	other := b.pushKeys("pB", "k1")[0]
	if other.MessageID == first.MessageID || other.PartitionID == first.PartitionID {
		t.Fatalf("pA %+v, pB %+v", first, other)
	}
	// Consumed or not, and past the window, a stored message keeps its key taken.
	p := b.mustPop(PopRequest{Partition: "pA"}, "k1")
	b.mustAck(ackOf(p, 0, mq.AckCompleted))
	b.clock.Advance(10 * time.Minute)
	for _, part := range []string{"pA", "pB"} {
		res := b.pushRows(row(b.queue, part, "k1"))
		want := first.MessageID
		if part == "pB" {
			want = other.MessageID
		}
		if res[0].Status != mq.StatusDuplicate || res[0].MessageID != want {
			t.Fatalf("%s: %+v, want duplicate of %s", part, res[0], want)
		}
	}
	b.noPop(PopRequest{Partition: "pA"})
}

// remove deletes stored messages of partitionID the way retention does (qg_remove_messages):
// the rows go, their keys are kept as tombstones while their dedup window lasts.
func (b *testBundle) remove(partitionID string, keys ...string) {
	b.t.Helper()
	b.exec(`SELECT qg_remove_messages(array_agg(partition_id), array_agg(position), $3)
		FROM messages WHERE partition_id = $1 AND transaction_id = ANY($2)`, partitionID, keys, b.clock.Now())
}

func TestDedupWindowAfterRemoval(t *testing.T) {
	b := setup(t)
	window := func(s int) {
		b.configure(b.queue, func(o *mq.QueueOptions) { o.DedupWindowSeconds = s })
	}
	window(60)
	gone := b.pushKeys("pA", "k1", "k2")
	b.remove(gone[0].PartitionID, "k1", "k2")

	// Younger than the window: still taken, reported with the removed message's id.
	b.clock.Advance(59 * time.Second)
	if res := b.pushRows(row(b.queue, "pA", "k1")); res[0].Status != mq.StatusDuplicate || res[0].MessageID != gone[0].MessageID {
		t.Fatalf("inside the window: %+v", res[0])
	}
	// The window in force is the queue's current one.
	window(30)
	if fresh := b.pushRows(row(b.queue, "pA", "k2"))[0]; fresh.Status != mq.StatusQueued || fresh.MessageID == gone[1].MessageID {
		t.Fatalf("after shrinking the window: %+v", fresh)
	}
	window(60)
	// Older than the window: free again.
	b.clock.Advance(time.Second)
	if res := b.pushRows(row(b.queue, "pA", "k1")); res[0].Status != mq.StatusQueued || res[0].MessageID == gone[0].MessageID {
		t.Fatalf("after the window: %+v", res[0])
	}
	if got := b.drain(PopRequest{Batch: 10}); !slices.Equal(got, []string{"k2", "k1"}) {
		t.Fatalf("delivered %v", got)
	}
	// The new message takes the key again.
	if res := b.pushRows(row(b.queue, "pA", "k1")); res[0].Status != mq.StatusDuplicate {
		t.Fatalf("re-stored key: %+v", res[0])
	}
}

func TestDedupConcurrentWritersStoreOneMessage(t *testing.T) {
	b := setup(t)
	b.pushKeys("pA", "warm") // the partition exists: writers meet on its lock
	const n = 8
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res, err := b.s.Push(b.ctx, []PushRow{row(b.queue, "pA", "same")})
			if err != nil || len(res) != 1 {
				t.Errorf("push: %v %+v", err, res)
				return
			}
			ids[i] = res[0].MessageID
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("concurrent pushes of one key answered different ids %v", ids)
		}
	}
	var count int
	if err := b.s.pool.QueryRow(b.ctx, `SELECT count(*) FROM messages WHERE transaction_id = 'same'`).Scan(&count); err != nil || count != 1 {
		t.Fatalf("stored %d messages (%v)", count, err)
	}
}

// maxSize (docs/api/concepts.md §2.2), decided per item by qg_push_items. Moved from
// internal/httpapi/queueopts_test.go.
func TestOptionMaxSize(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.MaxSize = 2 })
	status := func(res []mq.PushResult) []string {
		out := make([]string, len(res))
		for i, r := range res {
			out[i] = r.Status
			if r.Status == mq.StatusFailed && r.Queue != b.queue {
				t.Fatalf("item %d %+v", i, r)
			}
		}
		return out
	}
	res := b.pushRows(row(b.queue, "Default", "a1"), row(b.queue, "pB", "b1"), row(b.queue, "Default", "a2"),
		row("other", "Default", "o1"), // later items are still tried
		row(b.queue, "Default", "a1"), // a taken key is a duplicate
		row(b.queue, "pB", "b2"))
	if got, want := status(res), []string{"queued", "queued", "failed", "queued", "duplicate", "failed"}; !slices.Equal(got, want) {
		t.Fatalf("statuses %v, want %v", got, want)
	}
	// Consuming frees capacity: a1 consumed by queue mode, its only consumer.
	p := b.mustPop(PopRequest{Partition: "Default"}, "a1")
	if got := status(b.pushRows(row(b.queue, "Default", "a3"))); got[0] != mq.StatusFailed {
		t.Fatalf("a leased message is still unconsumed: %v", got)
	}
	b.mustAck(ackOf(p, 0, mq.AckCompleted))
	if got := status(b.pushRows(row(b.queue, "Default", "a3"), row(b.queue, "Default", "a4"))); !slices.Equal(got, []string{"queued", "failed"}) {
		t.Fatalf("after consuming one: %v", got)
	}
	// A group registering now is a consumer of every partition: b1 stays unconsumed until
	// every consumer of pB (queue mode has none) passed it.
	b.mustPop(PopRequest{Partition: "Default", Group: "g", AutoAck: true, Batch: 10}, "a1", "a3")
	if got := status(b.pushRows(row(b.queue, "pB", "b3"))); got[0] != mq.StatusFailed {
		t.Fatalf("b1 is unconsumed by g, a3 by queue mode: %v", got)
	}
	b.mustPop(PopRequest{Partition: "pB", Group: "g", AutoAck: true}, "b1")
	if got := status(b.pushRows(row(b.queue, "pB", "b3"), row(b.queue, "pB", "b4"))); !slices.Equal(got, []string{"queued", "failed"}) {
		t.Fatalf("only a3 is unconsumed: %v", got)
	}
}

// Calls of 2 to 99 items run qg_push_set under generic plans, larger ones under custom plans:
// the same function under two plan modes must decide every item alike (dedup within the call
// and against stored keys, maxSize, several queues and partitions in one call). The custom
// run pads each call with 100 items to a queue of their own, which takes it past the bound.
func TestPushSmallAndLargeCallsAgree(t *testing.T) {
	run := func(t *testing.T, pad int) [][]string {
		b := setup(t)
		b.configure(b.queue, func(o *mq.QueueOptions) { o.MaxSize = 3 })
		var out [][]string
		for _, call := range [][]PushRow{
			{row(b.queue, "pA", "k1"), row(b.queue, "pA", "k1"), row(b.queue, "pB", "k2"), row("other", "pA", "o1"),
				row(b.queue, "pA", "k3"), row(b.queue, "pB", "k4")},
			{row(b.queue, "pA", "k1"), row("other", "pA", "o1"), row("other", "pA", "o2"), row("other", "pB", "o2")},
		} {
			for i := range pad {
				call = append(call, row("padding", "p", fmt.Sprintf("pad-%d-%d", len(out), i)))
			}
			var st []string
			for _, r := range b.pushRows(call...)[:len(call)-pad] {
				st = append(st, r.Status)
			}
			out = append(out, st)
		}
		// Positions follow the request order within each partition.
		b.mustPop(PopRequest{Queue: "other", Partition: "pA", Batch: 10}, "o1", "o2")
		return out
	}
	var generic, custom [][]string
	t.Run("generic", func(t *testing.T) { generic = run(t, 0) })
	t.Run("custom", func(t *testing.T) { custom = run(t, 100) })
	want := [][]string{{"queued", "duplicate", "queued", "queued", "queued", "failed"}, {"duplicate", "duplicate", "queued", "queued"}}
	if fmt.Sprint(generic) != fmt.Sprint(want) || fmt.Sprint(custom) != fmt.Sprint(want) {
		t.Fatalf("statuses: generic %v, custom %v, want %v", generic, custom, want)
	}
}

// A one-item call runs qg_push_one, more run qg_push_set. For one item both must decide and
// write alike: queued at the next position, a stored key or unexpired tombstone taken (an
// expired one not), a capped queue failing the item unless it is uncapped, strict mode
// raising QG002 and QG003, a missing partition QG001, createdAt never below the partition's
// newest, and work registered for the queue's groups.
func TestPushOneAgreesWithTheSetPath(t *testing.T) {
	run := func(t *testing.T, set bool) []string {
		b := setup(t)
		b.configure("capq", func(o *mq.QueueOptions) { o.MaxSize = 1 })
		b.configure(b.queue, func(o *mq.QueueOptions) { o.DedupWindowSeconds = 60 })
		b.pushRows(row(b.queue, "p", "seed"), row("capq", "p", "seed"))
		if _, err := b.s.Pop(b.ctx, PopRequest{Queue: b.queue, Group: "g", Batch: 1, Partitions: 1,
			LeaseID: uuid.NewString(), SubscriptionMode: "all"}); err != nil {
			t.Fatal(err)
		}
		pid := func(queue string) string {
			var id string
			if err := b.s.pool.QueryRow(b.ctx, `SELECT p.id::text FROM partitions p JOIN queues q ON q.id = p.queue_id
				WHERE q.name = $1 AND p.name = 'p'`, queue).Scan(&id); err != nil {
				t.Fatal(err)
			}
			return id
		}
		qp, cp := pid(b.queue), pid("capq")
		// Tombstones: one inside the queue's 60 s window, one expired.
		for _, tb := range []struct{ key, age string }{{"gone-recent", "10 seconds"}, {"gone-old", "1 hour"}} {
			if _, err := b.s.pool.Exec(b.ctx, `INSERT INTO dedup_tombstones (partition_id, transaction_id, message_id, created_at)
				VALUES ($1, $2, gen_random_uuid(), clock_timestamp() - $3::interval)`, qp, tb.key, tb.age); err != nil {
				t.Fatal(err)
			}
		}
		call := "qg_push_items"
		if set {
			call = "qg_push_set"
		}
		var out []string
		push := func(p, key string, strict, uncapped bool) {
			id := uuid.Must(uuid.NewV7()).String()
			var st string
			var pos *int64
			var mid string
			err := b.s.pool.QueryRow(b.ctx, `SELECT status, mid::text, pos FROM `+call+`(ARRAY[$1]::uuid[], ARRAY[$2], ARRAY[$3]::uuid[],
				ARRAY['{"k":1}'], ARRAY[false], ARRAY[NULL]::uuid[], ARRAY[NULL]::text[], NULL::timestamptz, $4::boolean, ARRAY[$5::boolean])`,
				p, key, id, strict, uncapped).Scan(&st, &mid, &pos)
			if err != nil {
				out = append(out, fmt.Sprintf("%s: error %s", key, pgCode(err)))
				return
			}
			p1 := "-"
			if pos != nil {
				p1 = fmt.Sprint(*pos)
			}
			out = append(out, fmt.Sprintf("%s: %s pos %s own-id %v", key, st, p1, mid == id))
		}
		push(qp, "k1", false, false)
		push(qp, "k1", false, false)
		push(qp, "k1", true, false)
		push(qp, "gone-recent", false, false)
		push(qp, "gone-old", false, false)
		push(cp, "c1", false, false)
		push(cp, "c1", true, false)
		push(cp, "c2", true, false)
		push(cp, "c3", false, true)
		push(uuid.NewString(), "x", false, false)
		var work int
		var ordered *bool
		if err := b.s.pool.QueryRow(b.ctx, `SELECT (SELECT count(*) FROM partition_work WHERE partition_id = $1 AND consumer_group = 'g'),
			(SELECT bool_and(created_at >= prev) FROM (SELECT created_at, lag(created_at) OVER (ORDER BY position) AS prev
			 FROM messages WHERE partition_id = $1) x WHERE prev IS NOT NULL)`, qp).Scan(&work, &ordered); err != nil {
			t.Fatal(err)
		}
		return append(out, fmt.Sprintf("work for g: %d, createdAt in position order: %v", work, ordered != nil && *ordered))
	}
	var one, set []string
	t.Run("one", func(t *testing.T) { one = run(t, false) })
	t.Run("set", func(t *testing.T) { set = run(t, true) })
	want := []string{
		"k1: queued pos 2 own-id true", "k1: taken pos - own-id false", "k1: error QG002",
		"gone-recent: taken pos - own-id false", "gone-old: queued pos 3 own-id true",
		"c1: failed pos - own-id true", "c1: error QG003", "c2: error QG003", "c3: queued pos 2 own-id true",
		"x: error QG001", "work for g: 1, createdAt in position order: true",
	}
	if !slices.Equal(one, want) || !slices.Equal(set, want) {
		t.Fatalf("one item:\n%s\nset path:\n%s\nwant:\n%s", strings.Join(one, "\n"), strings.Join(set, "\n"), strings.Join(want, "\n"))
	}
}
