package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// Consumers of two groups pop and ack a queue while an operator requeues group g's DLQ
// entries, by id, by filter and through the message retry, all at once (run it with -race).
// Invariants (docs/design.md, docs/api/concepts.md §9.2-9.3): g gets every message once, in
// order per partition, and every dead-lettered message exactly once more; h, which never
// dead-letters, gets every message exactly once and nothing requeued; no cursor skips a
// message; at the end g's DLQ, requeued set and work index are empty.
func TestRequeueConcurrentInvariants(t *testing.T) {
	b := setup(t)
	const parts, perPart, workers = 4, 60, 6
	var rows []PushRow
	for p := range parts {
		for i := range perPart {
			key := fmt.Sprintf("p%d-%03d", p, i)
			if i%7 == 3 {
				key = "dl-" + key // g dead-letters these on their first delivery
			}
			rows = append(rows, PushRow{Queue: b.queue, Partition: fmt.Sprintf("p%d", p), Key: key, ID: eqID(key),
				Payload: []byte(`1`)})
		}
	}
	res, err := b.s.Push(b.ctx, rows)
	if err != nil {
		t.Fatal(err)
	}
	pids, partitionOf := map[string]string{}, map[string]string{}
	for i, r := range rows {
		pids[r.Partition], partitionOf[r.Key] = res[i].PartitionID, r.Partition
	}
	dead := 0
	for _, r := range rows {
		if strings.HasPrefix(r.Key, "dl-") {
			dead++
		}
	}

	var mu sync.Mutex
	deliveries := map[string][]string{} // group -> keys in delivery order (per worker appended under mu)
	firstOrder := map[string][]string{} // "g/p0" -> first deliveries, in the order their batches came
	seen := map[string]int{}            // g: deliveries per key
	var errs []error
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	done := make(chan struct{})
	deadline := time.Now().Add(2 * time.Minute)

	consume := func(group string, dlq bool) {
		for {
			select {
			case <-done:
				return
			default:
			}
			if time.Now().After(deadline) {
				return
			}
			req := b.req(PopRequest{Group: group, Batch: 1 + rand.IntN(5)})
			msgs, err := b.s.Pop(b.ctx, req)
			if err != nil {
				fail(err)
				return
			}
			if len(msgs) == 0 {
				time.Sleep(time.Millisecond) // a consumer's poll interval, not an ordering
				continue
			}
			items := make([]mq.AckItem, len(msgs))
			mu.Lock()
			for i, m := range msgs {
				st := mq.AckCompleted
				if dlq && strings.HasPrefix(m.TransactionID, "dl-") && seen[m.TransactionID] == 0 {
					st = mq.AckDLQ
				}
				if group == "g" {
					if seen[m.TransactionID] == 0 {
						firstOrder[m.Partition] = append(firstOrder[m.Partition], m.TransactionID)
					}
					seen[m.TransactionID]++
				}
				deliveries[group] = append(deliveries[group], m.TransactionID)
				items[i] = mq.AckItem{PartitionID: m.PartitionID, TransactionID: m.TransactionID, Group: group,
					Status: st, LeaseID: req.LeaseID}
			}
			mu.Unlock()
			res, err := b.s.Ack(b.ctx, items)
			if err != nil {
				fail(err)
				return
			}
			for i, r := range res {
				if !r.Success {
					fail(fmt.Errorf("ack %s of %s: %s", items[i].TransactionID, group, str(r.Error)))
				}
			}
		}
	}
	requeue := func() {
		for n := 0; ; n++ {
			select {
			case <-done:
				return
			default:
			}
			if time.Now().After(deadline) {
				return
			}
			var err error
			switch n % 3 {
			case 0:
				var ids []string
				ids, err = b.entryIDs("g")
				if err == nil && len(ids) > 0 {
					_, err = b.s.RedeliverDLQEntries(b.ctx, ids)
				}
			case 1:
				_, err = b.s.RedeliverDLQMatching(b.ctx, mq.DLQFilter{Queue: b.queue, Group: "g"}, 3)
			case 2:
				var keys []string
				keys, err = b.entryKeys("g")
				for _, k := range keys {
					if err == nil {
						_, _, _, err = b.s.RetryMessage(b.ctx, pids[partitionOf[k]], k, "g")
					}
				}
			}
			if err != nil {
				fail(err)
				return
			}
			time.Sleep(2 * time.Millisecond) // the requeuer's pace, not an ordering
		}
	}

	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { consume("g", true) })
	}
	for range 2 {
		wg.Go(func() { consume("h", false) })
	}
	wg.Go(requeue)
	for {
		mu.Lock()
		complete := len(deliveries["g"]) >= len(rows)+dead && len(deliveries["h"]) >= len(rows)
		stop := len(errs) > 0 || time.Now().After(deadline)
		mu.Unlock()
		if complete || stop {
			break
		}
		time.Sleep(20 * time.Millisecond) // a poll interval of a bounded wait
	}
	close(done)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatal(errs)
	}

	// h: every message exactly once, nothing more.
	hk := slices.Clone(deliveries["h"])
	slices.Sort(hk)
	if len(hk) != len(rows) || len(slices.Compact(hk)) != len(rows) {
		t.Fatalf("h got %d deliveries (%d distinct), want %d once each", len(deliveries["h"]), len(slices.Compact(hk)), len(rows))
	}
	// g: every message once, dead-lettered ones exactly twice.
	for _, r := range rows {
		want := 1
		if strings.HasPrefix(r.Key, "dl-") {
			want = 2
		}
		if seen[r.Key] != want {
			t.Errorf("g got %s %d times, want %d", r.Key, seen[r.Key], want)
		}
	}
	if len(deliveries["g"]) != len(rows)+dead {
		t.Errorf("g: %d deliveries, want %d", len(deliveries["g"]), len(rows)+dead)
	}
	// First deliveries in partition order: no cursor skipped or reordered.
	for p := range parts {
		got := firstOrder[fmt.Sprintf("p%d", p)]
		if !slices.IsSortedFunc(got, func(a, c string) int {
			return strings.Compare(strings.TrimPrefix(a, "dl-"), strings.TrimPrefix(c, "dl-"))
		}) || len(got) != perPart {
			t.Errorf("p%d first deliveries out of order or missing: %v", p, got)
		}
	}
	var left, set, work int
	b.s.pool.QueryRow(b.ctx, `SELECT (SELECT count(*) FROM dlq WHERE consumer_group = 'g'),
		(SELECT count(*) FROM requeued), (SELECT count(*) FROM partition_work WHERE consumer_group = 'g')`).Scan(&left, &set, &work)
	if left != 0 || set != 0 {
		t.Errorf("left: %d entries, %d requeued", left, set)
	}
	for p := range parts {
		if s := b.state(b.queue, fmt.Sprintf("p%d", p), "g"); s.Cursor != perPart || s.LeaseID != nil {
			t.Errorf("p%d: %+v", p, s)
		}
	}
	b.noPop(PopRequest{Group: "g"})
	b.noPop(PopRequest{Group: "h"})
	t.Logf("work rows left for g: %d (stale rows are cleared by the next pop)", work)
}

// entryIDs lists the ids of group's DLQ entries on the test's queue.
func (b *testBundle) entryIDs(group string) ([]string, error) {
	return b.queryTexts(`SELECT id::text FROM dlq WHERE queue_name = $1 AND consumer_group = $2 ORDER BY id`, b.queue, group)
}

// entryKeys lists the transaction ids of group's DLQ entries on the test's queue.
func (b *testBundle) entryKeys(group string) ([]string, error) {
	return b.queryTexts(`SELECT transaction_id FROM dlq WHERE queue_name = $1 AND consumer_group = $2
		ORDER BY transaction_id`, b.queue, group)
}
