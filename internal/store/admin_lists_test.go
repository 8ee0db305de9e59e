package store

import (
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/internal/mq"
)

// The dashboard's listings in SQL (docs/api/admin-api.md "Listing parameters"; M6-M8, M11).

func queueNames(qs []mq.QueueSummary) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.Name
	}
	return out
}

func TestListQueues(t *testing.T) {
	b := setup(t)
	b.configureIn("orders", "shop", "t1", nil)
	b.configureIn("audit", "ops", "", nil)
	b.configureIn("Big_%", "shop", "t2", nil)
	b.pushKeysTo("orders", "p1", "a", "b", "c")
	b.pushKeysTo("orders", "p2", "d")
	b.pushKeysTo("audit", "p1", "e")

	// Before any stats run the queues exist with live partition counts and zero counters.
	l, err := b.s.ListQueues(b.ctx, mq.QueueListFilter{Sort: "name", Page: mq.Page{Limit: 100}})
	if err != nil || l.Total != 3 || l.StatsAt != nil || !slices.Equal(queueNames(l.Queues), []string{"Big_%", "audit", "orders"}) ||
		l.Queues[2].Partitions != 3 || l.Queues[2].Total != 0 {
		t.Fatalf("before stats: %+v err %v", l, err)
	}
	p := b.mustPop(PopRequest{Queue: "orders", Partition: "p1", Batch: 1}, "a")
	b.mustAck(ackOf(p, 0, mq.AckCompleted))
	b.mustPop(PopRequest{Queue: "orders", Partition: "p1", Batch: 1}, "b") // leased
	b.refreshStats()

	l, err = b.s.ListQueues(b.ctx, mq.QueueListFilter{Namespace: "shop", Task: "t1", Sort: "name", Page: mq.Page{Limit: 10}})
	if err != nil || l.Total != 1 || len(l.Queues) != 1 || l.StatsAt == nil {
		t.Fatalf("shop/t1: %+v err %v", l, err)
	}
	if q := l.Queues[0]; q.Name != "orders" || q.Total != 4 || q.Pending != 2 || q.Processing != 1 || q.Partitions != 3 ||
		q.DeadLetter != 0 || q.ID == "" || q.CreatedAt.IsZero() {
		t.Fatalf("orders row %+v", q)
	}
	for _, c := range []struct {
		f     mq.QueueListFilter
		want  []string
		total int64
	}{
		{mq.QueueListFilter{Sort: "total", Desc: true}, []string{"orders", "audit", "Big_%"}, 3},
		{mq.QueueListFilter{Sort: "total"}, []string{"Big_%", "audit", "orders"}, 3},
		{mq.QueueListFilter{Sort: "partitions", Desc: true}, []string{"orders", "audit", "Big_%"}, 3}, // 3, 2, 1 (Default included)
		{mq.QueueListFilter{Sort: "pending", Desc: true}, []string{"orders", "audit", "Big_%"}, 3},
		{mq.QueueListFilter{Sort: "processing", Desc: true}, []string{"orders", "Big_%", "audit"}, 3},
		{mq.QueueListFilter{Sort: "namespace"}, []string{"audit", "Big_%", "orders"}, 3},
		{mq.QueueListFilter{Sort: "task", Desc: true}, []string{"Big_%", "orders", "audit"}, 3},
		{mq.QueueListFilter{Sort: "createdAt", Desc: true}, []string{"Big_%", "audit", "orders"}, 3},
		{mq.QueueListFilter{Sort: "deadLetter"}, []string{"Big_%", "audit", "orders"}, 3},
		{mq.QueueListFilter{Sort: "lag"}, []string{"Big_%", "audit", "orders"}, 3},
		{mq.QueueListFilter{Sort: "name", Search: "_%"}, []string{"Big_%"}, 1}, // literal
		{mq.QueueListFilter{Sort: "name", Search: "BIG"}, []string{"Big_%"}, 1},
		{mq.QueueListFilter{Sort: "name", Search: "\\"}, nil, 0},
		{mq.QueueListFilter{Sort: "name", Namespace: "none"}, nil, 0},
		{mq.QueueListFilter{Sort: "name", Page: mq.Page{Limit: 1, Offset: 1}}, []string{"audit"}, 3},
		{mq.QueueListFilter{Sort: "name", Page: mq.Page{Limit: 0}}, nil, 3},
	} {
		if c.f.Page.Limit == 0 && c.want != nil {
			c.f.Page.Limit = 100
		}
		l, err := b.s.ListQueues(b.ctx, c.f)
		if got := queueNames(l.Queues); err != nil || !slices.Equal(got, append([]string{}, c.want...)) || l.Total != c.total {
			t.Fatalf("%+v: %v total %d err %v, want %v total %d", c.f, got, l.Total, err, c.want, c.total)
		}
	}
}

// Every option of mq.OptionTable comes back from the queue detail with the value configured
// (each set to a value of its own), and the partitions are searched, sorted and paged.
func TestStatusQueueOptionsAndPartitionPage(t *testing.T) {
	b := setup(t)
	want := mq.DefaultQueueOptions()
	for i, o := range mq.OptionTable {
		if o.IsBool() {
			*o.Bool(&want) = !*o.Bool(&want)
		} else {
			*o.Int(&want) = 1000 + i
		}
	}
	b.configureIn("orders", "shop", "", func(o *mq.QueueOptions) { *o = want })
	b.pushKeysTo("orders", "p_b", "a", "b", "c")
	b.pushKeysTo("orders", "P%1", "d")
	b.refreshStats()

	q, found, err := b.s.StatusQueue(b.ctx, "orders", mq.PartitionPage{Sort: "total", Desc: true, Page: mq.Page{Limit: 10}})
	if err != nil || !found || q.Options != want {
		t.Fatalf("options %+v found %v err %v, want %+v", q.Options, found, err, want)
	}
	names := func(ps []mq.PartitionStatus) (out []string) {
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	if got := names(q.Partitions); !slices.Equal(got, []string{"p_b", "P%1", "Default"}) || q.PartitionCount != 3 ||
		q.Partitions[0].Counters.Total != 3 || q.Totals.Total != 4 {
		t.Fatalf("by total: %v count %d totals %+v", got, q.PartitionCount, q.Totals)
	}
	q, _, err = b.s.StatusQueue(b.ctx, "orders", mq.PartitionPage{Search: "%", Sort: "name", Page: mq.Page{Limit: 10}})
	if got := names(q.Partitions); err != nil || !slices.Equal(got, []string{"P%1"}) || q.PartitionCount != 1 || q.Totals.Total != 4 {
		t.Fatalf("search %%: %v count %d err %v", got, q.PartitionCount, err)
	}
	q, _, err = b.s.StatusQueue(b.ctx, "orders", mq.PartitionPage{Sort: "name", Desc: true, Page: mq.Page{Limit: 1, Offset: 1}})
	if got := names(q.Partitions); err != nil || !slices.Equal(got, []string{"P%1"}) || q.PartitionCount != 3 {
		t.Fatalf("page 2 by name desc: %v err %v", got, err)
	}
	if _, found, err := b.s.StatusQueue(b.ctx, "nope", mq.PartitionPage{Sort: "name", Page: mq.Page{Limit: 1}}); found || err != nil {
		t.Fatalf("unknown queue: found %v err %v", found, err)
	}
}

// Run records of the background jobs across instances (M12): latest run, outcomes, 24 h
// counts per instance, pruning of day-old records.
func TestJobRunRecords(t *testing.T) {
	b := setup(t)
	t0 := b.clock.Now()
	rec := func(job, worker string, at time.Time, errText string) {
		t.Helper()
		if err := b.s.RecordJobRun(b.ctx, mq.JobRun{Job: job, StartedAt: at, WorkerID: worker, Hostname: "h-" + worker,
			Duration: 42 * time.Millisecond, Error: errText}); err != nil {
			t.Fatal(err)
		}
	}
	rec(mq.JobStats, "w1", t0.Add(-25*time.Hour), "") // older than a day: pruned by the next record
	rec(mq.JobStats, "w1", t0.Add(-2*time.Minute), "")
	rec(mq.JobStats, "w2", t0.Add(-time.Minute), "dial tcp db:5432: refused")
	rec(mq.JobRetention, "w2", t0.Add(-3*time.Minute), "")

	jobs, err := b.s.JobSummaries(b.ctx)
	if err != nil || len(jobs) != len(mq.JobNames) {
		t.Fatalf("summaries %+v err %v", jobs, err)
	}
	byName := map[string]mq.JobSummary{}
	for i, j := range jobs {
		if j.Name != mq.JobNames[i] {
			t.Fatalf("order %d: %s", i, j.Name)
		}
		byName[j.Name] = j
	}
	st := byName[mq.JobStats]
	if st.Leader == nil || *st.Leader != "w2" || !st.LastFailed || st.LastError == nil || *st.LastError != "dial tcp db:5432: refused" ||
		st.LastDurationMs != 42 || st.Runs != 2 || st.Failures != 1 || st.LastSuccessAt == nil || st.LastFailureAt == nil ||
		!st.LastRunAt.Equal(t0.Add(-time.Minute)) || st.Running {
		t.Fatalf("stats %+v", st)
	}
	if len(st.Instances) != 2 || st.Instances[0].WorkerID != "w2" || st.Instances[0].Failures != 1 ||
		st.Instances[1].WorkerID != "w1" || st.Instances[1].Runs != 1 || st.Instances[1].Hostname != "h-w1" {
		t.Fatalf("stats instances %+v", st.Instances)
	}
	if ev := byName[mq.JobEviction]; ev.Leader != nil || ev.LastRunAt != nil || ev.Runs != 0 || len(ev.Instances) != 0 {
		t.Fatalf("eviction never ran: %+v", ev)
	}
	var left int
	if _, err := b.s.queryOne(b.ctx, "SELECT count(*) FROM job_run_log WHERE job = $1", []any{mq.JobStats}, &left); err != nil || left != 2 {
		t.Fatalf("stats records %d err %v, want the day-old one pruned", left, err)
	}
	// While a session holds the job's lock, running is true.
	led, err := b.s.TryLead(b.ctx, mq.JobEviction, func(*Leader) error {
		jobs, err := b.s.JobSummaries(b.ctx)
		if err != nil || !jobs[1].Running || jobs[0].Running {
			t.Errorf("while eviction's lock is held: %+v err %v", jobs, err)
		}
		return nil
	})
	if !led || err != nil {
		t.Fatalf("lead: %v %v", led, err)
	}
}

// Consumer-group and lagging listings filter and sort in SQL (M8); trace names are searched
// (M11); namespaces and tasks are searched and sorted; messages are looked up by key (M10).
func TestDashboardListFilters(t *testing.T) {
	b := setup(t)
	b.configureIn("orders", "shop", "", nil)
	b.configureIn("audit", "ops", "", nil)
	res := b.pushKeysTo("orders", "p1", "a", "b")
	b.pushKeysTo("orders", "p2", "c")
	b.pushKeysTo("audit", "p1", "a")
	p := b.mustPop(PopRequest{Queue: "orders", Partition: "p1", Group: "billing", Batch: 2}, "a", "b")
	b.mustAck(ackOf(p, 0, mq.AckCompleted))
	b.mustAck(ackOf(p, 1, mq.AckCompleted))
	b.mustPop(PopRequest{Queue: "audit", Partition: "p1", Group: "Bill-audit"}, "a")
	b.refreshStats() // the listings' lag is the stats job's
	b.clock.Advance(400 * time.Second)

	groups := func(f mq.GroupFilter) (out []string) {
		t.Helper()
		f.Page = mq.Page{Limit: 100}
		if f.Sort == "" {
			f.Sort = "name"
		}
		gs, err := b.s.ConsumerGroups(b.ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range gs {
			out = append(out, g.Group+"@"+g.Queue+":"+g.State)
		}
		return out
	}
	for _, c := range []struct {
		f    mq.GroupFilter
		want []string
	}{
		{mq.GroupFilter{}, []string{"Bill-audit@audit:Lagging", "billing@orders:Lagging"}},
		{mq.GroupFilter{Search: "BILL"}, []string{"Bill-audit@audit:Lagging", "billing@orders:Lagging"}},
		{mq.GroupFilter{Search: "-"}, []string{"Bill-audit@audit:Lagging"}},
		{mq.GroupFilter{Queue: "orders"}, []string{"billing@orders:Lagging"}},
		{mq.GroupFilter{Group: "billing", Queue: "audit"}, nil},
		{mq.GroupFilter{State: "Stable"}, nil},
		{mq.GroupFilter{Sort: "members", Desc: true}, []string{"billing@orders:Lagging", "Bill-audit@audit:Lagging"}},  // 3, 2
		{mq.GroupFilter{Sort: "totalLag", Desc: true}, []string{"Bill-audit@audit:Lagging", "billing@orders:Lagging"}}, // 1, 1: by name
	} {
		if got := groups(c.f); !slices.Equal(got, c.want) {
			t.Fatalf("%+v: %v, want %v", c.f, got, c.want)
		}
	}
	pairs, err := b.s.LaggingPairs(b.ctx, mq.LagFilter{Queue: "orders", Group: "billing", Sort: "partition", Page: mq.Page{Limit: 10}})
	if err != nil || len(pairs) != 3 || pairs[0].Partition != "Default" || pairs[1].Partition != "p1" || pairs[2].Partition != "p2" || pairs[2].TimeLag != 400 {
		t.Fatalf("lagging pairs %+v err %v", pairs, err)
	}
	if pairs, _ := b.s.LaggingPairs(b.ctx, mq.LagFilter{MinLag: 1, Queue: "orders", Sort: "timeLag", Desc: true, Page: mq.Page{Limit: 10}}); len(pairs) != 1 {
		t.Fatalf("lagging at least 1 s on orders: %+v", pairs)
	}

	for i, names := range [][]string{{"Checkout-Flow"}, {"checkout_v2", "refunds"}} {
		if _, err := b.s.AddTrace(b.ctx, mq.TraceRecord{ID: uuid.Must(uuid.NewV7()).String(), PartitionID: res[0].PartitionID,
			TransactionID: "a", Group: mq.QueueMode, EventType: "info", Data: []byte(`{"i":` + string(rune('0'+i)) + `}`),
			WorkerID: "w", Names: names}); err != nil {
			t.Fatal(err)
		}
	}
	for search, want := range map[string][]string{"checkout": {"checkout_v2", "Checkout-Flow"}, "_": {"checkout_v2"}, "": {"checkout_v2", "refunds", "Checkout-Flow"}} {
		ns, total, err := b.s.TraceNames(b.ctx, search, mq.Page{Limit: 10})
		var got []string
		for _, n := range ns {
			got = append(got, n.Name)
		}
		slices.Sort(got)
		slices.Sort(want)
		if err != nil || !slices.Equal(got, want) || total != int64(len(want)) {
			t.Fatalf("trace names %q: %v total %d err %v", search, got, total, err)
		}
	}

	l, err := b.s.LabelSummaries(b.ctx, mq.LabelFilter{Search: "O", Sort: "name", Desc: true, Page: mq.Page{Limit: 10}})
	if err != nil || l.Total != 2 || len(l.Labels) != 2 || l.Labels[0].Label != "shop" || l.Labels[1].Label != "ops" ||
		l.Labels[0].Queues != 1 || l.Labels[0].Partitions != 3 {
		t.Fatalf("namespaces: %+v err %v", l, err)
	}

	msgs, err := b.s.ListMessages(b.ctx, mq.MessageFilter{TransactionID: "a", Page: mq.Page{Limit: 10}})
	if err != nil || len(msgs) != 2 {
		t.Fatalf("by key, every queue, no window: %+v err %v", msgs, err)
	}
	msgs, err = b.s.ListMessages(b.ctx, mq.MessageFilter{TransactionID: "a", Namespace: "ops", Page: mq.Page{Limit: 10}})
	if err != nil || len(msgs) != 1 || msgs[0].Queue != "audit" {
		t.Fatalf("by key in ops: %+v err %v", msgs, err)
	}
}
