package store

// The partition listing (qg_list_partitions) and DLQ deletion (qg_dlq_delete*) of
// docs/api/admin-api.md §1.1 and §3.3, and the DLQ listing's entry id, error filter and
// messageStored flag (§3.1).

import (
	"slices"
	"testing"

	"github.com/queen-go/queen/internal/mq"
)

// refreshStats runs the stats job's SQL once, as a full run would, on the test clock.
func (b *testBundle) refreshStats() {
	b.t.Helper()
	b.exec(`SELECT qg_stats_partitions(p_run => '00000000-0000-7000-8000-000000000001', p_after => NULL,
		p_limit => 100000, p_now => $1)`, b.clock.Now())
	b.exec(`SELECT * FROM qg_stats_rollup(p_run => '00000000-0000-7000-8000-000000000001', p_now => $1)`, b.clock.Now())
}

func (b *testBundle) partitions(f mq.PartitionFilter) ([]string, int64) {
	b.t.Helper()
	if f.Sort == "" {
		f.Sort = "name"
	}
	if f.Page.Limit == 0 {
		f.Page.Limit = 100
	}
	rows, total, _, err := b.s.ListPartitions(b.ctx, f)
	if err != nil {
		b.t.Fatal(err)
	}
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = r.Queue + "/" + r.Name
	}
	return names, total
}

func TestListPartitions(t *testing.T) {
	b := setup(t)
	b.configureIn("orders", "shop", "t1", nil)
	b.configureIn("audit", "ops", "", nil)
	b.exec(`DELETE FROM partitions WHERE name = 'Default'`) // configure's own, not this test's
	b.pushKeysTo("orders", "p_b", "a", "b", "c")
	b.pushKeysTo("orders", "P%1", "d")
	b.pushKeysTo("audit", "p_b", "e")

	// Before any stats run the partitions exist, with zero counters and no stats time.
	rows, total, statsAt, err := b.s.ListPartitions(b.ctx, mq.PartitionFilter{Sort: "name", Page: mq.Page{Limit: 100}})
	if err != nil || total != 3 || len(rows) != 3 || statsAt != nil || rows[0].Total != 0 {
		t.Fatalf("before stats: %+v total %d statsAt %v err %v", rows, total, statsAt, err)
	}

	p := b.mustPop(PopRequest{Queue: "orders", Partition: "p_b", Batch: 1}, "a")
	b.mustAck(ackOf(p, 0, mq.AckCompleted))
	b.mustPop(PopRequest{Queue: "orders", Partition: "p_b", Batch: 1}, "b") // leased
	b.refreshStats()

	rows, total, statsAt, err = b.s.ListPartitions(b.ctx, mq.PartitionFilter{Queue: "orders", Search: "p_", Sort: "name",
		Page: mq.Page{Limit: 100}})
	if err != nil || total != 1 || len(rows) != 1 || statsAt == nil {
		t.Fatalf("orders, search p_: %+v total %d statsAt %v err %v", rows, total, statsAt, err)
	}
	r := rows[0]
	if r.Name != "p_b" || r.Queue != "orders" || r.Namespace != "shop" || r.Task != "t1" || r.Total != 3 ||
		r.Completed != 1 || r.Processing != 1 || r.Pending != 1 || r.ConsumerGroups != 1 || r.ActiveLeases != 1 ||
		r.Oldest == nil || r.Newest == nil || r.QueueID == "" {
		t.Fatalf("row %+v", r)
	}

	for _, c := range []struct {
		f     mq.PartitionFilter
		want  []string
		total int64
	}{
		{mq.PartitionFilter{}, []string{"orders/P%1", "audit/p_b", "orders/p_b"}, 3},
		{mq.PartitionFilter{Sort: "queue"}, []string{"audit/p_b", "orders/P%1", "orders/p_b"}, 3},
		{mq.PartitionFilter{Sort: "total", Desc: true}, []string{"orders/p_b", "orders/P%1", "audit/p_b"}, 3},
		{mq.PartitionFilter{Search: "%"}, []string{"orders/P%1"}, 1}, // literal, not a wildcard
		{mq.PartitionFilter{Search: "P_B"}, []string{"audit/p_b", "orders/p_b"}, 2},
		{mq.PartitionFilter{Namespace: "ops"}, []string{"audit/p_b"}, 1},
		{mq.PartitionFilter{Task: "t1", Page: mq.Page{Limit: 1, Offset: 1}}, []string{"orders/p_b"}, 2},
		{mq.PartitionFilter{Queue: "none"}, []string{}, 0},
	} {
		got, total := b.partitions(c.f)
		if !slices.Equal(got, c.want) || total != c.total {
			t.Fatalf("%+v: %v (total %d), want %v (total %d)", c.f, got, total, c.want, c.total)
		}
	}
}

func TestDLQEntryIDsErrorFilterAndDelete(t *testing.T) {
	b := setup(t)
	b.pushKeys("p", "a", "b", "c")
	for _, reason := range []string{"x", "y", "x"} {
		p := b.mustPop(PopRequest{Batch: 1}, b.dlqNext())
		a := ackOf(p, 0, mq.AckDLQ)
		a.Error = reason
		b.mustAck(a)
		b.clock.Advance(1e9)
	}
	list := func(f mq.DLQFilter) ([]mq.DLQEntry, int64) {
		f.Page.Limit = 100
		e, total, err := b.s.ListDLQ(b.ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		return e, total
	}
	all, total := list(mq.DLQFilter{})
	if total != 3 || all[0].DLQID == "" || all[0].DLQID == all[0].MessageID || !all[0].MessageStored {
		t.Fatalf("entries %+v", all)
	}
	if x, total := list(mq.DLQFilter{Error: "x"}); total != 2 || x[0].TransactionID != "c" || x[1].TransactionID != "a" {
		t.Fatalf("error x: %+v", x)
	}

	// One entry by id; again: it no longer exists.
	if ok, err := b.s.DeleteDLQEntry(b.ctx, all[0].DLQID); err != nil || !ok {
		t.Fatalf("delete: %v %v", ok, err)
	}
	if ok, err := b.s.DeleteDLQEntry(b.ctx, all[0].DLQID); err != nil || ok {
		t.Fatalf("delete again: %v %v", ok, err)
	}
	// The message stays stored when only its entry goes.
	if _, found, err := b.s.MessageDetail(b.ctx, all[0].PartitionID, "c"); err != nil || !found {
		t.Fatalf("message c after its entry was deleted: %v %v", found, err)
	}
	// By ids: only existing ones come back.
	got, err := b.s.DeleteDLQEntries(b.ctx, []string{all[1].DLQID, all[0].DLQID})
	if err != nil || !slices.Equal(got, []string{all[1].DLQID}) {
		t.Fatalf("delete by ids: %v %v", got, err)
	}
	// By filter, oldest first, with the remaining count.
	b.pushKeys("p", "d")
	p := b.mustPop(PopRequest{Batch: 1}, "d")
	b.mustAck(ackOf(p, 0, mq.AckDLQ))
	deleted, remaining, err := b.s.DeleteDLQMatching(b.ctx, mq.DLQFilter{}, 1)
	if err != nil || deleted != 1 || remaining != 1 {
		t.Fatalf("delete matching: %d %d %v", deleted, remaining, err)
	}
	if left, _ := list(mq.DLQFilter{}); len(left) != 1 || left[0].TransactionID != "d" {
		t.Fatalf("left %+v, want the newest (d)", left)
	}
	// A removed message's entry says so.
	b.exec(`DELETE FROM messages WHERE transaction_id = 'd'`)
	if left, _ := list(mq.DLQFilter{}); left[0].MessageStored {
		t.Fatalf("entry of a removed message: %+v", left[0])
	}
}

// dlqNext is the key the next queue-mode pop of partition p delivers (a, b, c in order).
func (b *testBundle) dlqNext() string {
	return string(rune('a' + b.state(b.queue, "p", mq.QueueMode).Cursor))
}
