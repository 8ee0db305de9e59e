package httpapi_test

// Subscription modes of named consumer groups (docs/api/concepts.md §5.3) are tested where the SQL
// decides them: internal/store/groups_test.go. What stays here is how the pop's query
// parameters (subscriptionMode, subscriptionFrom, consumerGroup) reach the registration.

import (
	"context"
	"net/url"
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

func TestSubscriptionParameters(t *testing.T) {
	b := setup(t, testserver.Options{FakeClock: true})
	b.semPushKeys("pA", "a1")
	b.srv.Clock.Advance(time.Second)
	at := b.srv.Clock.Now()
	for _, tc := range []struct{ group, query, mode string }{
		{"g-default", "", "all"},
		{"g-all", "subscriptionMode=all", "all"},
		{"g-from-beginning", "subscriptionMode=from_beginning", "all"}, // an alias of all
		{"g-new", "subscriptionMode=new", "new"},
		{"g-new-only", "subscriptionMode=new-only", "new"},
		{"g-from-now", "subscriptionFrom=now", "new"},
		{"g-from-wins", "subscriptionMode=all&subscriptionFrom=now", "new"},
		{"g-timestamp", "subscriptionMode=new&subscriptionFrom=" + semStamp(at), "timestamp"},
	} {
		b.pop(b.semQ("autoAck=true&consumerGroup=" + tc.group + "&" + tc.query))
		mode, ts, ok := semSubscription(t, b.queue, tc.group)
		if !ok || mode != tc.mode || (mode == "all") != (ts == nil) || (ts != nil && ts.Sub(at).Abs() > time.Microsecond) {
			t.Fatalf("%s (%s): registration %q %v %v, want %s", tc.group, tc.query, mode, ts, ok, tc.mode)
		}
	}
	// An empty consumerGroup is queue mode, which always registers as "all".
	b.pop(b.semQ("consumerGroup=&subscriptionFrom=now&autoAck=true"))
	if mode, ts, ok := semSubscription(t, b.queue, "__QUEUE_MODE__"); !ok || mode != "all" || ts != nil {
		t.Fatalf("queue mode registration: %q %v %v", mode, ts, ok)
	}
}
