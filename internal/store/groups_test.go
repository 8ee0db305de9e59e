package store

// Subscription modes of named consumer groups (docs/api/concepts.md §5.3), decided at registration by
// qg_pop, and seeks (qg_seek_queue). Moved from internal/httpapi/subscription_test.go,
// seek_immediate_test.go and seek_delayed_test.go.

import (
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queen-go/queen/internal/mq"
)

// subscription reads the registration of group on queue; found is false when there is none.
func (b *testBundle) subscription(queue, group string) (mode string, ts *time.Time, found bool) {
	b.t.Helper()
	err := b.s.pool.QueryRow(b.ctx, `
		SELECT s.mode, s.subscription_timestamp FROM subscriptions s JOIN queues q ON q.id = s.queue_id
		WHERE q.name = $1 AND s.consumer_group = $2`, queue, group).Scan(&mode, &ts)
	if err == pgx.ErrNoRows {
		return "", nil, false
	}
	if err != nil {
		b.t.Fatalf("subscription: %v", err)
	}
	return mode, ts, true
}

// newFrom is a pop of group g registering with mode new as of the clock's now (what the
// broker sends for subscriptionMode=new and subscriptionFrom=now).
func (b *testBundle) newFrom(g string, batch int) PopRequest {
	now := b.clock.Now()
	return PopRequest{Group: g, Batch: batch, SubscriptionMode: "new", SubscriptionFrom: &now}
}

func TestSubscriptionAll(t *testing.T) {
	b := setup(t)
	b.pushKeys("pA", "a1", "a2")
	b.mustPop(PopRequest{Batch: 10, Group: "g1", SubscriptionMode: "all"}, "a1", "a2")
	if mode, ts, ok := b.subscription(b.queue, "g1"); !ok || mode != "all" || ts != nil {
		t.Fatalf("registration of g1: %q %v %v", mode, ts, ok)
	}
}

func TestSubscriptionNewStartsAfterExistingMessages(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, nil) // an empty Default exists at registration
	b.pushKeys("pA", "a1", "a2")
	b.pushKeys("pB", "b1")
	b.clock.Advance(time.Second)
	reg := b.clock.Now()
	b.noPop(b.newFrom("g", 10))

	mode, ts, ok := b.subscription(b.queue, "g")
	if !ok || mode != "new" || ts == nil || ts.Sub(reg).Abs() > time.Microsecond {
		t.Fatalf("registration %q %v %v, want new at %v", mode, ts, ok, reg)
	}
	for part, want := range map[string]int64{"pA": 2, "pB": 1, "Default": 0} {
		if st := b.state(b.queue, part, "g"); !st.Found || st.Cursor != want {
			t.Fatalf("%s cursor at registration %+v, want %d", part, st, want)
		}
	}

	b.clock.Advance(time.Second)
	b.pushKeys("pA", "a3")
	b.clock.Advance(time.Second)
	b.pushKeys("pC", "c1", "c2") // created after registration: from its first message
	b.clock.Advance(time.Second)
	b.pushKeys("Default", "d1")
	if got, want := b.drain(b.newFrom("g", 10)), []string{"a3", "c1", "c2", "d1"}; !slices.Equal(got, want) {
		t.Fatalf("group g got %v, want %v", got, want)
	}
	// Queue mode is unaffected.
	got := b.drain(PopRequest{Batch: 10})
	slices.Sort(got)
	if want := []string{"a1", "a2", "a3", "b1", "c1", "c2", "d1"}; !slices.Equal(got, want) {
		t.Fatalf("queue mode got %v, want %v", got, want)
	}
}

func TestSubscriptionFromTimestamp(t *testing.T) {
	b := setup(t)
	t0 := b.clock.Now()
	b.pushKeys("pA", "a1")
	b.pushKeys("pB", "b1")
	b.clock.Advance(10 * time.Second)
	b.pushKeys("pA", "a2")
	b.clock.Advance(time.Second)
	b.pushKeys("pA", "a3")
	b.clock.Advance(10 * time.Second)

	all := b.mustPop(PopRequest{Partition: "pA", Batch: 10}, "a1", "a2", "a3")
	a2 := all.Messages[1].CreatedAt
	groups := []struct {
		group string
		from  time.Time
		want  []string
	}{
		{"g-between", t0.Add(5 * time.Second), []string{"a2", "a3"}},
		{"g-exact", a2, []string{"a2", "a3"}}, // at or after
		{"g-after", a2.Add(time.Microsecond), []string{"a3"}},
	}
	for _, g := range groups {
		// pB has no message at or after the timestamp: nothing there yet.
		if got := b.drain(PopRequest{Batch: 10, Group: g.group, SubscriptionMode: "timestamp", SubscriptionFrom: &g.from}); !slices.Equal(got, g.want) {
			t.Fatalf("%s got %v, want %v", g.group, got, g.want)
		}
		mode, ts, _ := b.subscription(b.queue, g.group)
		if mode != "timestamp" || ts == nil || !ts.Equal(g.from.Truncate(time.Microsecond)) {
			t.Fatalf("%s registration %q %v, want timestamp %v", g.group, mode, ts, g.from)
		}
	}
	// Later messages of existing partitions and messages of later partitions are delivered.
	b.pushKeys("pB", "b2")
	b.clock.Advance(time.Second)
	b.pushKeys("pC", "c1")
	for _, g := range groups {
		if got := b.drain(PopRequest{Batch: 10, Group: g.group}); !slices.Equal(got, []string{"b2", "c1"}) {
			t.Fatalf("%s later messages %v", g.group, got)
		}
	}
}

func TestSubscriptionRegisteredOnce(t *testing.T) {
	b := setup(t)
	b.pushKeys("pA", "a1")
	b.noPop(b.newFrom("g", 1))
	_, ts0, _ := b.subscription(b.queue, "g")
	b.clock.Advance(time.Second)
	b.noPop(PopRequest{Group: "g", SubscriptionMode: "all"})
	old := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	b.noPop(PopRequest{Group: "g", SubscriptionMode: "timestamp", SubscriptionFrom: &old})
	if mode, ts, _ := b.subscription(b.queue, "g"); mode != "new" || ts == nil || !ts.Equal(*ts0) {
		t.Fatalf("registration changed to %q %v", mode, ts)
	}
	// A later pop with the same mode does not skip what arrived since registration.
	b.pushKeys("pA", "a2")
	b.clock.Advance(time.Second)
	b.pushKeys("pB", "b1")
	if got := b.drain(b.newFrom("g", 10)); !slices.Equal(got, []string{"a2", "b1"}) {
		t.Fatalf("group g got %v", got)
	}

	// The other way round: registered with all, a later "now" still reads from the start.
	p := b.mustPop(PopRequest{Partition: "pA", Group: "h", SubscriptionMode: "all"}, "a1")
	b.mustAck(ackOf(p, 0, mq.AckRetry))
	later := b.newFrom("h", 10)
	later.Partition = "pA"
	if got := b.drain(later); !slices.Equal(got, []string{"a1", "a2"}) {
		t.Fatalf("group h got %v", got)
	}
}

// A pop does not call the registration once its group is registered; it reads whether it is
// from the subscription rows, so a group deleted with its metadata (by any broker) registers
// again at its next pop, with that pop's mode.
func TestSubscriptionRegisteredAgainAfterGroupDeletion(t *testing.T) {
	b := setup(t)
	b.pushKeys("pA", "a1")
	b.mustPop(PopRequest{Group: "g", Batch: 10, SubscriptionMode: "all", AutoAck: true}, "a1")
	if _, _, err := b.s.DeleteConsumerGroup(b.ctx, "g", b.queue, true); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := b.subscription(b.queue, "g"); ok {
		t.Fatal("registration kept after deletion with metadata")
	}
	b.pushKeys("pA", "a2")
	b.clock.Advance(time.Second)
	b.noPop(b.newFrom("g", 10)) // registers as new: a1 and a2 came before
	if mode, ts, ok := b.subscription(b.queue, "g"); !ok || mode != "new" || ts == nil {
		t.Fatalf("registration after deletion: %q %v %v", mode, ts, ok)
	}
	b.pushKeys("pA", "a3")
	if got := b.drain(PopRequest{Group: "g", Batch: 10}); !slices.Equal(got, []string{"a3"}) {
		t.Fatalf("group g got %v", got)
	}
}

func TestSubscriptionIgnoredInQueueMode(t *testing.T) {
	b := setup(t)
	b.pushKeys("pA", "a1")
	b.clock.Advance(time.Second)
	b.pushKeys("pB", "b1")
	b.clock.Advance(time.Second)
	b.pushKeys("pC", "c1")
	b.clock.Advance(time.Second)
	now := b.clock.Now()
	b.mustPop(PopRequest{SubscriptionMode: "new", SubscriptionFrom: &now, AutoAck: true}, "a1")
	b.mustPop(PopRequest{SubscriptionMode: "timestamp", SubscriptionFrom: &now, AutoAck: true}, "b1")
	// Queue mode registers like any group, but always as "all" whatever the request said.
	if mode, ts, ok := b.subscription(b.queue, mq.QueueMode); !ok || mode != "all" || ts != nil {
		t.Fatalf("queue mode registration: %q %v %v", mode, ts, ok)
	}
	b.mustPop(PopRequest{AutoAck: true}, "c1")
}

// A seek is visible to the very next pop.
func TestSeekBackIsVisibleToTheNextPop(t *testing.T) {
	b := setup(t)
	r := PopRequest{Group: "g", AutoAck: true, Batch: 10, Partitions: 3}
	for round := range 10 {
		b.queue = "q" + string(rune('0'+round))
		for _, part := range []string{"p0", "p1", "p2"} {
			b.pushKeys(part, part)
		}
		if got := b.drain(r); len(got) != 3 {
			t.Fatalf("round %d: drained %v", round, got)
		}
		from := b.clock.Now().Add(-time.Hour)
		if n, found, err := b.s.SeekQueue(b.ctx, "g", b.queue, &from); err != nil || !found || n != 3 {
			t.Fatalf("seek: %d %v %v", n, found, err)
		}
		if got := b.drain(r); len(got) != 3 {
			t.Fatalf("round %d: after the seek the next pops got %v", round, got)
		}
	}
}

// A seek back must make the re-delivered messages findable as soon as they are visible, even
// when the pair was already listed for work by a newer message (delayedProcessing gates the
// walk on the listed message's age).
func TestSeekBackUnderDelayedProcessingRedeliversOnceVisible(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.DelayedProcessing = 10 })
	t0 := b.clock.Now()
	b.pushKeys("p", "a1")
	b.clock.Advance(5 * time.Second)
	b.pushKeys("p", "a2")
	b.clock.Advance(5 * time.Second) // a1 visible, a2 not yet
	r := PopRequest{Group: "g", AutoAck: true}
	b.mustPop(r, "a1")
	from := t0.Add(-time.Second)
	if _, found, err := b.s.SeekQueue(b.ctx, "g", b.queue, &from); err != nil || !found {
		t.Fatalf("seek: %v %v", found, err)
	}
	b.clock.Advance(2 * time.Second) // a1 visible again to g, a2 still not
	b.mustPop(r, "a1")
}
