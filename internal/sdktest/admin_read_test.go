package sdktest

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	queen "github.com/queen-go/queen/client"
)

// The read-side administration calls against a real broker: queue detail, messages, traces,
// consumer groups and status.
func TestAdminReadSide(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := testCtx(t)
	q := createQueue(t, c)
	res, err := q.Partition("p").Push(ctx, queen.Item{Payload: map[string]int{"n": 1}, TransactionID: "m1"},
		queen.Item{Payload: map[string]int{"n": 2}, TransactionID: "m2"})
	if err != nil || res.Err() != nil {
		t.Fatalf("push: %v %v", err, res.Err())
	}
	refreshStats(t)

	d, err := q.Detail(ctx)
	if err != nil || d.Name != q.Name() || d.Totals.Total != 2 {
		t.Fatalf("Detail: %v %+v", err, d)
	}
	var part *queen.PartitionInfo
	for i := range d.Partitions {
		if d.Partitions[i].Name == "p" {
			part = &d.Partitions[i]
		}
	}
	if part == nil || part.Stats.Pending != 2 || part.OldestMessage.IsZero() {
		t.Fatalf("partition p: %+v", d.Partitions)
	}
	if _, err := c.Queue("no-such-queue-" + q.Name()).Detail(ctx); !errors.Is(err, queen.ErrNotFound) {
		t.Fatalf("unknown queue: %v", err)
	}

	ms, err := c.Messages(ctx, queen.MessageQuery{Queue: q.Name(), Limit: 10})
	if err != nil || len(ms) != 2 || ms[0].PartitionID != part.ID || ms[0].Status != "pending" {
		t.Fatalf("Messages: %v %+v", err, ms)
	}
	m, err := c.Message(ctx, part.ID, "m1")
	if err != nil || string(m.Payload) != `{"n":1}` || m.Queue != q.Name() {
		t.Fatalf("Message: %v %+v", err, m)
	}

	body := `{"transactionId":"m1","partitionId":"` + part.ID + `","data":{"step":1},"traceNames":["` + q.Name() + `"]}`
	resp, err := http.Post(brokerURL+"/api/v1/traces", "application/json", strings.NewReader(body))
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("add trace: %v %v", err, resp)
	}
	resp.Body.Close()
	tr, err := c.MessageTraces(ctx, part.ID, "m1")
	if err != nil || len(tr) != 1 || string(tr[0].Data) != `{"step":1}` || tr[0].TraceNames[0] != q.Name() {
		t.Fatalf("MessageTraces: %v %+v", err, tr)
	}
	byName, err := c.TracesByName(ctx, q.Name(), 10, 0)
	if err != nil || byName.Total != 1 || byName.Traces[0].TransactionID != "m1" || byName.Traces[0].Queue != q.Name() {
		t.Fatalf("TracesByName: %v %+v", err, byName)
	}
	names, err := c.TraceNames(ctx, 1000, 0)
	if err != nil || names.Total < 1 {
		t.Fatalf("TraceNames: %v %+v", err, names)
	}

	found, err := c.DeleteMessage(ctx, part.ID, "m2")
	if err != nil || !found {
		t.Fatalf("DeleteMessage: %v %v", err, found)
	}
	if found, err := c.DeleteMessage(ctx, part.ID, "m2"); err != nil || found {
		t.Fatalf("DeleteMessage again: %v %v", err, found)
	}

	// A group that has read nothing lags by the message left.
	group := "readers-" + q.Name()
	if _, err := q.Pop(ctx, queen.PopOptions{ConsumerGroup: group, SubscriptionMode: queen.SubscriptionAll, Wait: wait, AutoAck: true}); err != nil {
		t.Fatalf("pop: %v", err)
	}
	mustPush(t, q.Partition("p"), map[string]int{"n": 3})
	refreshStats(t) // group lag is as of the last stats run (docs/api/admin-api.md §7)
	gs, err := c.ConsumerGroups(ctx)
	if err != nil {
		t.Fatalf("ConsumerGroups: %v", err)
	}
	var g *queen.ConsumerGroup
	for i := range gs {
		if gs[i].Name == group {
			g = &gs[i]
		}
	}
	if g == nil || g.Queue != q.Name() || g.TotalLag != 1 {
		t.Fatalf("group %s: %+v", group, gs)
	}
	gp, err := c.ConsumerGroupDetail(ctx, group)
	if err != nil || len(gp) != 2 { // Create made the Default partition
		t.Fatalf("ConsumerGroupDetail: %v %+v", err, gp)
	}
	if p := gp[1]; p.Queue != q.Name() || p.Partition != "p" || p.OffsetLag != 1 || p.TotalConsumed != 1 {
		t.Fatalf("ConsumerGroupDetail p: %+v", p)
	}
	lag, err := c.LaggingGroups(ctx, 0)
	if err != nil {
		t.Fatalf("LaggingGroups: %v", err)
	}
	var seen bool
	for _, l := range lag {
		seen = seen || (l.ConsumerGroup == group && l.OffsetLag == 1 && l.PartitionID == part.ID)
	}
	if !seen {
		t.Fatalf("LaggingGroups lacks %s: %+v", group, lag)
	}
	n, err := c.DeleteConsumerGroup(ctx, group)
	if err != nil || n != 2 {
		t.Fatalf("DeleteConsumerGroup: %v %d", err, n)
	}
	if _, err := c.ConsumerGroupDetail(ctx, group); !errors.Is(err, queen.ErrNotFound) {
		t.Fatalf("deleted group: %v", err)
	}

	st, err := c.Status(ctx, 10*time.Minute)
	if err != nil || st.TimeRange.To.Sub(st.TimeRange.From) < 9*time.Minute || len(st.Queues) == 0 { // counts wait for the stats job
		t.Fatalf("Status: %v %+v", err, st)
	}
}
