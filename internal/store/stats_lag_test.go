package store

// The consumer-group listings read the lag the stats job stores per (partition, group) pair
// (qg_lagging_pairs, qg_consumer_groups; docs/api/admin-api.md §7), and the messages listing
// bounds its walk by the partitions' last write (qg_list_messages). These tests hold them to
// the live computations they replace.

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// livePairLag is qg_pair_lag over every pair of the test's queue on the test clock, by
// "group/partition".
func (b *testBundle) livePairLag() map[string]mq.PairLag {
	b.t.Helper()
	rows, err := b.s.pool.Query(b.ctx, `SELECT c.consumer_group, p.name, l.offset_lag, l.time_lag, l.oldest_at
		FROM consumers c JOIN partitions p ON p.id = c.partition_id JOIN queues q ON q.id = c.queue_id
		CROSS JOIN LATERAL qg_pair_lag(c.partition_id, c.consumer_group, c.cursor, $2) l
		WHERE q.name = $1`, b.queue, b.clock.Now())
	if err != nil {
		b.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]mq.PairLag{}
	for rows.Next() {
		var p mq.PairLag
		if err := rows.Scan(&p.Group, &p.Partition, &p.OffsetLag, &p.TimeLag, &p.OldestUnconsumed); err != nil {
			b.t.Fatal(err)
		}
		out[p.Group+"/"+p.Partition] = p
	}
	if err := rows.Err(); err != nil {
		b.t.Fatal(err)
	}
	return out
}

// listedPairLag is the lagging listing (every pair) of the test's queue, by "group/partition".
func (b *testBundle) listedPairLag() map[string]mq.PairLag {
	b.t.Helper()
	pairs, err := b.s.LaggingPairs(b.ctx, mq.LagFilter{Queue: b.queue, Sort: "timeLag", Desc: true, Page: mq.Page{Limit: mq.MaxListRows}})
	if err != nil {
		b.t.Fatal(err)
	}
	out := map[string]mq.PairLag{}
	for _, p := range pairs {
		out[p.Group+"/"+p.Partition] = p
	}
	return out
}

// sameLag fails unless both sets hold the same pairs with the same offset lag, time lag and
// oldest unconsumed message.
func sameLag(t *testing.T, what string, got, want map[string]mq.PairLag) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d pairs %v, want %d %v", what, len(got), got, len(want), want)
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok || g.OffsetLag != w.OffsetLag || g.TimeLag != w.TimeLag ||
			(g.OldestUnconsumed == nil) != (w.OldestUnconsumed == nil) ||
			(g.OldestUnconsumed != nil && !g.OldestUnconsumed.Equal(*w.OldestUnconsumed)) {
			t.Fatalf("%s: pair %s %+v, want %+v", what, k, g, w)
		}
	}
}

// groupTotals sums the live lag per group as the consumer-group listing reports it.
func groupTotals(live map[string]mq.PairLag) map[string]mq.GroupSummary {
	out := map[string]mq.GroupSummary{}
	for _, p := range live {
		g := out[p.Group]
		g.Members++
		g.TotalLag += p.OffsetLag
		if p.OffsetLag > 0 {
			g.PartitionsWithLag++
		}
		g.MaxTimeLag = max(g.MaxTimeLag, p.TimeLag)
		out[p.Group] = g
	}
	return out
}

// sameGroups fails unless the consumer-group listing of the test's queue reports the live sums.
func (b *testBundle) sameGroups(what string, live map[string]mq.PairLag) {
	b.t.Helper()
	rows, err := b.s.ConsumerGroups(b.ctx, mq.GroupFilter{Queue: b.queue, Sort: "name", Page: mq.Page{Limit: mq.MaxListRows}})
	if err != nil {
		b.t.Fatal(err)
	}
	want := groupTotals(live)
	if len(rows) != len(want) {
		b.t.Fatalf("%s: groups %+v, want %+v", what, rows, want)
	}
	for _, r := range rows {
		w := want[r.Group]
		if r.Members != w.Members || r.TotalLag != w.TotalLag || r.PartitionsWithLag != w.PartitionsWithLag || r.MaxTimeLag != w.MaxTimeLag {
			b.t.Fatalf("%s: group %s %+v, want %+v", what, r.Group, r, w)
		}
	}
}

func TestStoredLagMatchesLiveAfterStatsRun(t *testing.T) {
	b := setup(t)
	b.pushKeys("p1", "a", "b", "c")
	b.clock.Advance(10 * time.Second)
	b.pushKeys("p2", "d", "e")
	b.pushKeys("p3", "f")
	b.mustAck(ackOf(b.mustPop(PopRequest{Group: "g1", Partition: "p1", Batch: 2}, "a", "b"), 0, mq.AckCompleted))
	b.mustPop(PopRequest{Group: "g1", Partition: "p2", Batch: 1}, "d") // leased, not consumed
	b.mustPop(PopRequest{Group: "g2", Partition: "p3", Batch: 1}, "f")
	b.mustPop(PopRequest{Partition: "p1", Batch: 3}, "a", "b", "c") // queue mode
	b.clock.Advance(30 * time.Second)

	b.refreshStats()
	live := b.livePairLag()
	if len(live) == 0 {
		t.Fatal("no pairs")
	}
	sameLag(t, "after a stats run", b.listedPairLag(), live)
	b.sameGroups("after a stats run", live)

	// Without a run, time goes on: the time lag is the age, now, of the oldest message that was
	// unconsumed at the run, so it still equals the live one while nobody consumed.
	b.clock.Advance(400 * time.Second)
	live = b.livePairLag()
	sameLag(t, "400 s later", b.listedPairLag(), live)
	b.sameGroups("400 s later", live)

	// A consumption shows from the next run on (the lag is as of the last run).
	before := b.listedPairLag()
	p := b.mustPop(PopRequest{Group: "g2", Partition: "p1", Batch: 3}, "a", "b", "c")
	for i := range 3 {
		b.mustAck(ackOf(p, i, mq.AckCompleted))
	}
	sameLag(t, "consumed, before the next run", b.listedPairLag(), before)
	b.refreshStats()
	live = b.livePairLag()
	if live["g2/p1"].OffsetLag != 0 {
		t.Fatalf("live lag of g2/p1 after consuming: %+v", live["g2/p1"])
	}
	sameLag(t, "after the next run", b.listedPairLag(), live)
	b.sameGroups("after the next run", live)
}

func TestDeletedGroupLeavesStoredLag(t *testing.T) {
	b := setup(t)
	b.pushKeys("p1", "a")
	b.mustPop(PopRequest{Group: "gone", Partition: "p1", Batch: 1}, "a")
	b.mustPop(PopRequest{Group: "kept", Partition: "p1", Batch: 1}, "a")
	b.refreshStats()
	if got := b.listedPairLag(); len(got) != 2 {
		t.Fatalf("pairs %v", got)
	}
	if _, _, err := b.s.DeleteConsumerGroup(b.ctx, "gone", b.queue, true); err != nil {
		t.Fatal(err)
	}
	if got := b.listedPairLag(); len(got) != 1 || got["kept/p1"].Group != "kept" {
		t.Fatalf("after deleting a group, before a stats run: %v", got)
	}
}

// bruteMessages lists the ids of the stored messages created in [from, to], newest first with
// the listing's ties (partition, then position, descending), straight from the table.
func (b *testBundle) bruteMessages(from, to time.Time) []string {
	b.t.Helper()
	return b.texts(`SELECT m.id::text FROM messages m
		WHERE m.created_at >= $1 AND m.created_at <= $2
		ORDER BY m.created_at DESC, m.partition_id, m.position DESC`, from, to)
}

func TestListMessagesAcrossPartitionsMatchesCreatedAtOrder(t *testing.T) {
	b := setup(t)
	start := b.clock.Now()
	// Many partitions written at a few instants (equal createdAt across partitions: ties), some
	// with several messages, one whose newest messages were removed (its last write is then
	// later than anything it stores).
	var removedFrom string
	for round := range 3 {
		for i := range 12 {
			keys := []string{fmt.Sprintf("r%d-%d-a", round, i)}
			if i%4 == 0 {
				keys = append(keys, fmt.Sprintf("r%d-%d-b", round, i), fmt.Sprintf("r%d-%d-c", round, i))
			}
			res := b.pushKeys(fmt.Sprintf("p%02d", i), keys...)
			if round == 2 && i == 4 {
				removedFrom = res[0].PartitionID
			}
		}
		b.clock.Advance(time.Second)
	}
	b.remove(removedFrom, "r2-4-b", "r2-4-c")
	end := b.clock.Now()

	list := func(f mq.MessageFilter) []string {
		t.Helper()
		rows, err := b.s.ListMessages(b.ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]string, len(rows))
		for i, r := range rows {
			ids[i] = r.ID
		}
		return ids
	}
	for _, w := range []struct{ from, to time.Time }{
		{start, end}, // everything
		{start, start.Add(1500 * time.Millisecond)},      // a window ending before the last writes
		{start.Add(500 * time.Millisecond), end},         // one starting after the first
		{start.Add(1500 * time.Millisecond), end},        // only the last round
		{end.Add(time.Second), end.Add(2 * time.Second)}, // nothing
	} {
		want := b.bruteMessages(w.from, w.to)
		for _, limit := range []int{1, 5, 13, 100} {
			var got []string
			for off := 0; off <= len(want); off += limit {
				from, to := w.from, w.to
				got = append(got, list(mq.MessageFilter{From: &from, To: &to, Page: mq.Page{Limit: limit, Offset: off}})...)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("window %v–%v, pages of %d:\n got %v\nwant %v", w.from, w.to, limit, got, want)
			}
		}
	}
}
