package store

// The counters of the admin read side (qg_lagging_pairs, the overview), computed by the SQL
// with "now" from the test clock. Moved from internal/httpapi/admin_groups_test.go and
// admin_overview_test.go; the answers' shapes and parameters stay there. The lagging pairs
// are the stats job's (stats_lag_test.go holds them to the live computation).

import (
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// lagging lists the lagging pairs of the test's queue by group.
func (b *testBundle) lagging(minLag int64) map[string]mq.PairLag {
	b.t.Helper()
	pairs, err := b.s.LaggingPairs(b.ctx, mq.LagFilter{MinLag: minLag, Sort: "timeLag", Desc: true, Page: mq.Page{Limit: mq.MaxListRows}})
	if err != nil {
		b.t.Fatal(err)
	}
	out := map[string]mq.PairLag{}
	for _, p := range pairs {
		if p.Queue == b.queue {
			out[p.Group] = p
		}
	}
	return out
}

func TestAdminLaggingConsumers(t *testing.T) {
	b := setup(t)
	const held, done = "held", "done"
	res := b.pushKeys("p", "a")
	b.mustAck(ackOf(b.mustPop(PopRequest{Group: done}, "a"), 0, mq.AckCompleted))
	b.mustPop(PopRequest{}, "a") // queue mode's lease expires long before the check
	b.clock.Advance(2 * time.Hour)
	lease := b.mustPop(PopRequest{Group: held}, "a").LeaseID
	b.refreshStats() // the pairs and their lag are the stats job's

	got := b.lagging(3600)
	if _, ok := got[done]; len(got) != 2 || ok {
		t.Fatalf("lagging pairs %+v, want queue mode and %s", got, held)
	}
	q := got[mq.QueueMode]
	if q.Partition != "p" || q.PartitionID != res[0].PartitionID || q.LeaseID != nil || q.OffsetLag != 1 ||
		q.TimeLag != 7200 || q.LastConsumed != nil || q.OldestUnconsumed == nil {
		t.Fatalf("queue mode pair %+v", q)
	}
	if h := got[held]; h.LeaseID == nil || *h.LeaseID != lease {
		t.Fatalf("lease %v, want the live lease %s", h.LeaseID, lease)
	}
	if got := b.lagging(7201); len(got) != 0 {
		t.Fatalf("minimum above every lag: %+v", got)
	}
	all := b.lagging(0)
	if c, ok := all[done]; !ok || c.TimeLag != 0 || c.OffsetLag != 0 || c.OldestUnconsumed != nil || c.LastConsumed == nil {
		t.Fatalf("a minimum of 0 lists every pair, the caught-up one too: %+v", all)
	}
}

func TestAdminOverview(t *testing.T) {
	b := setup(t)
	b.pushKeys("p", "a", "b", "c")
	b.mustPop(PopRequest{}, "a")
	b.clock.Advance(120 * time.Second)
	b.pushKeys("p", "d", "e", "f") // written within the last minute

	// Before the stats job's first run the counters are zeros and StatsAt is nil; the object
	// counts are live.
	o, err := b.s.Overview(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The ingest throughput is the stats job's too: nothing before its first run.
	if o.Queues != 1 || o.Partitions != 1 || o.Counters.Total != 0 || o.StatsAt != nil || o.IngestedLastMinute != 0 {
		t.Fatalf("overview before a stats run %+v", o)
	}
	b.refreshStats()
	o, err = b.s.Overview(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := o.Counters
	if o.Queues != 1 || o.Partitions != 1 || c.Total != 6 || c.Processing != 1 || c.Unconsumed != 6 || c.DeadLetter != 0 {
		t.Fatalf("overview %+v", o)
	}
	if c.Pending()+c.Processing+c.Completed() != c.Total {
		t.Fatalf("total must be pending + processing + completed: %+v", c)
	}
	// Queue mode's pair on p is 120 s and 6 messages behind.
	if o.TimeLag.Max < 120 || o.OffsetLag.Max < 6 {
		t.Fatalf("lag %+v %+v", o.TimeLag, o.OffsetLag)
	}
	if o.IngestedLastMinute != 3 {
		t.Fatalf("ingested in the last minute: %d, want 3", o.IngestedLastMinute)
	}
	if o.StatsAt == nil || !o.StatsAt.Equal(b.clock.Now()) {
		t.Fatalf("stats at %v, want the run's time %v", o.StatsAt, b.clock.Now())
	}
}
