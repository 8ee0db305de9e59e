package httpapi_test

// Subscription modes of named consumer groups (concepts.md §5.3).

import (
	"context"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/testserver"
)

// semSubscription reads the registration of group on queue; found is false when there is none.
func semSubscription(t testing.TB, queue, group string) (mode string, ts *time.Time, found bool) {
	t.Helper()
	err := stateDB(t).QueryRow(context.Background(), `
		SELECT s.mode, s.subscription_timestamp FROM subscriptions s JOIN queues q ON q.id = s.queue_id
		WHERE q.name = $1 AND s.consumer_group = $2`, queue, group).Scan(&mode, &ts)
	if err == pgx.ErrNoRows {
		return "", nil, false
	}
	if err != nil {
		t.Fatalf("subscription: %v", err)
	}
	return mode, ts, true
}

// semStamp renders t as a subscriptionFrom value, microsecond precision like the database.
func semStamp(t time.Time) string {
	return url.QueryEscape(t.UTC().Format("2006-01-02T15:04:05.000000Z"))
}

func TestSubscriptionAll(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.semPushKeys("pA", "a1", "a2")
	for _, q := range []string{"consumerGroup=g1&subscriptionMode=all", "consumerGroup=g2"} {
		b.semMustPop(b.semQ("batch=10&"+q), "a1", "a2")
	}
	for _, g := range []string{"g1", "g2"} {
		if mode, ts, ok := semSubscription(t, b.queue, g); !ok || mode != "all" || ts != nil {
			t.Fatalf("registration of %s: %q %v %v", g, mode, ts, ok)
		}
	}
}

func TestSubscriptionNewStartsAfterExistingMessages(t *testing.T) {
	for _, tc := range []struct{ name, query string }{
		{"mode-new", "subscriptionMode=new"},
		{"mode-new-only", "subscriptionMode=new-only"},
		{"from-now", "subscriptionFrom=now"},
		{"from-wins-over-mode", "subscriptionMode=all&subscriptionFrom=now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t, testserver.Options{FakeClock: true})
			b.semConfigure(b.queue, obj{}) // an empty Default exists at registration
			b.semPushKeys("pA", "a1", "a2")
			b.semPushKeys("pB", "b1")
			b.srv.Clock.Advance(time.Second)
			reg := b.srv.Clock.Now()
			b.semNoPop(b.semQ("batch=10&consumerGroup=g&" + tc.query))

			mode, ts, ok := semSubscription(t, b.queue, "g")
			if !ok || mode != "new" || ts == nil || ts.Sub(reg).Abs() > time.Microsecond {
				t.Fatalf("registration %q %v %v, want new at %v", mode, ts, ok, reg)
			}
			for part, want := range map[string]int64{"pA": 2, "pB": 1, "Default": 0} {
				if st := semState(t, b.queue, part, "g"); !st.Found || st.Cursor != want {
					t.Fatalf("%s cursor at registration %+v, want %d", part, st, want)
				}
			}

			b.srv.Clock.Advance(time.Second)
			b.semPushKeys("pA", "a3")
			b.srv.Clock.Advance(time.Second)
			b.semPushKeys("pC", "c1", "c2") // created after registration: from its first message
			b.srv.Clock.Advance(time.Second)
			b.semPushKeys("Default", "d1")
			got := b.semDrain(b.semQ("batch=10&consumerGroup=g&" + tc.query))
			if want := []string{"a3", "c1", "c2", "d1"}; !slices.Equal(got, want) {
				t.Fatalf("group g got %v, want %v", got, want)
			}
			// Queue mode is unaffected.
			got = b.semDrain(b.semQ("batch=10"))
			slices.Sort(got)
			if want := []string{"a1", "a2", "a3", "b1", "c1", "c2", "d1"}; !slices.Equal(got, want) {
				t.Fatalf("queue mode got %v, want %v", got, want)
			}
		})
	}
}

func TestSubscriptionFromTimestamp(t *testing.T) {
	b := setup(t, testserver.Options{FakeClock: true})
	t0 := b.srv.Clock.Now()
	b.semPushKeys("pA", "a1")
	b.semPushKeys("pB", "b1")
	b.srv.Clock.Advance(10 * time.Second)
	b.semPushKeys("pA", "a2")
	b.srv.Clock.Advance(time.Second)
	b.semPushKeys("pA", "a3")
	b.srv.Clock.Advance(10 * time.Second)

	all := b.semMustPop(b.semQP("pA", "batch=10"), "a1", "a2", "a3")
	a2, err := time.Parse(time.RFC3339Nano, all.Messages[1].CreatedAt)
	if err != nil {
		t.Fatal(err)
	}
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
		q := "batch=10&consumerGroup=" + g.group + "&subscriptionMode=new&subscriptionFrom=" + semStamp(g.from)
		// pB has no message at or after the timestamp: nothing there yet.
		if got := b.semDrain(b.semQ(q)); !slices.Equal(got, g.want) {
			t.Fatalf("%s got %v, want %v", g.group, got, g.want)
		}
		mode, ts, _ := semSubscription(t, b.queue, g.group)
		if mode != "timestamp" || ts == nil || !ts.Equal(g.from.Truncate(time.Microsecond)) {
			t.Fatalf("%s registration %q %v, want timestamp %v", g.group, mode, ts, g.from)
		}
	}
	// Later messages of existing partitions and messages of later partitions are delivered.
	b.semPushKeys("pB", "b2")
	b.srv.Clock.Advance(time.Second)
	b.semPushKeys("pC", "c1")
	for _, g := range groups {
		if got := b.semDrain(b.semQ("batch=10&consumerGroup=" + g.group)); !slices.Equal(got, []string{"b2", "c1"}) {
			t.Fatalf("%s later messages %v", g.group, got)
		}
	}
}

func TestSubscriptionRegisteredOnce(t *testing.T) {
	b := setup(t, testserver.Options{FakeClock: true})
	b.semPushKeys("pA", "a1")
	b.semNoPop(b.semQ("consumerGroup=g&subscriptionMode=new"))
	_, ts0, _ := semSubscription(t, b.queue, "g")
	b.srv.Clock.Advance(time.Second)
	b.semNoPop(b.semQ("consumerGroup=g&subscriptionMode=all"))
	b.semNoPop(b.semQ("consumerGroup=g&subscriptionFrom=2000-01-01T00:00:00Z"))
	if mode, ts, _ := semSubscription(t, b.queue, "g"); mode != "new" || ts == nil || !ts.Equal(*ts0) {
		t.Fatalf("registration changed to %q %v", mode, ts)
	}
	// A later pop with the same mode does not skip what arrived since registration.
	b.semPushKeys("pA", "a2")
	b.srv.Clock.Advance(time.Second)
	b.semPushKeys("pB", "b1")
	if got := b.semDrain(b.semQ("consumerGroup=g&subscriptionMode=new&batch=10")); !slices.Equal(got, []string{"a2", "b1"}) {
		t.Fatalf("group g got %v", got)
	}

	// The other way round: registered with all, a later "now" still reads from the start.
	p := b.semMustPop(b.semQP("pA", "consumerGroup=h&subscriptionMode=all"), "a1")
	b.semMustAck(semAckOf(p, 0, "retry"))
	if got := b.semDrain(b.semQP("pA", "consumerGroup=h&subscriptionFrom=now&batch=10")); !slices.Equal(got, []string{"a1", "a2"}) {
		t.Fatalf("group h got %v", got)
	}
}

func TestSubscriptionIgnoredInQueueMode(t *testing.T) {
	b := setup(t, testserver.Options{FakeClock: true})
	b.semPushKeys("pA", "a1")
	b.srv.Clock.Advance(time.Second)
	b.semPushKeys("pB", "b1")
	b.srv.Clock.Advance(time.Second)
	b.semPushKeys("pC", "c1")
	b.srv.Clock.Advance(time.Second)
	b.semMustPop(b.semQ("subscriptionMode=new&autoAck=true"), "a1")
	b.semMustPop(b.semQ("consumerGroup=__QUEUE_MODE__&subscriptionFrom=now&autoAck=true"), "b1")
	b.semMustPop(b.semQ("consumerGroup=&subscriptionFrom="+semStamp(b.srv.Clock.Now())+"&autoAck=true"), "c1")
	// Queue mode registers like any group, but always as "all" whatever the parameters said.
	var mode string
	var ts *time.Time
	if err := stateDB(t).QueryRow(context.Background(), `SELECT s.mode, s.subscription_timestamp FROM subscriptions s
		JOIN queues q ON q.id = s.queue_id WHERE q.name = $1`, b.queue).Scan(&mode, &ts); err != nil || mode != "all" || ts != nil {
		t.Fatalf("queue mode registration: %s %v %v", mode, ts, err)
	}
}
