package httpapi_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testserver"
)

// Messages (docs/api/admin-api.md §2).

var admListedKeys = []string{"id", "transactionId", "partitionId", "queuePath", "queue", "partition", "namespace",
	"task", "status", "queueStatus", "busStatus", "traceId", "producerSub", "queuePriority", "createdAt",
	"leaseExpiresAt"}

// admMessages lists messages with a query and returns the messages and the mode.
func (b *bundle) admMessages(query string) ([]obj, obj) {
	b.t.Helper()
	out := admGet(b, "/api/v1/messages"+query)
	admShape(b.t, out, "messages", "mode")
	return admList(b.t, out["messages"]), admShape(b.t, out["mode"], "hasQueueMode", "busGroupsCount", "type")
}

// One message in each state, for queue mode and for a named group.
func TestAdminMessagesListStates(t *testing.T) {
	b := admSetup(t, testserver.Options{})
	group := "g-" + b.queue
	b.admConfigure(obj{"priority": 4})
	res := b.admPushKeys("p", "m1", "m2", "m3", "m4")
	b.admAckAll(b.admPop("p", group, 4), "completed", group) // the named group consumed all
	b.admAckAll(b.admPop("p", "", 1), "completed", "")       // m1: completed for everyone
	b.admAckAll(b.admPop("p", "", 1), "dlq", "")             // m2: dead-lettered by queue mode
	b.admPop("p", "", 1)                                     // m3: processing; m4: pending

	msgs, mode := b.admMessages(admQuery("queue", b.queue))
	if got := admField(msgs, "transactionId"); !slices.Equal(got, []string{"m4", "m3", "m2", "m1"}) {
		t.Fatalf("order %v, want newest (highest position) first", got)
	}
	want := map[string]string{"m1": "completed", "m2": "dead_letter", "m3": "processing", "m4": "pending"}
	for i, m := range msgs {
		admShape(t, m, admListedKeys...)
		k := m["transactionId"].(string)
		if m["status"] != want[k] || m["queueStatus"] != want[k] {
			t.Fatalf("%s: status %v, queueStatus %v, want %s", k, m["status"], m["queueStatus"], want[k])
		}
		bus := admShape(t, m["busStatus"], "consumedBy", "totalGroups")
		if admNum(t, bus["consumedBy"]) != 1 || admNum(t, bus["totalGroups"]) != 1 {
			t.Fatalf("%s: busStatus %v, want the named group's consumption", k, bus)
		}
		if m["id"] != res[3-i].MessageID || m["partitionId"] != res[0].PartitionID || m["queuePath"] != b.queue+"/p" ||
			m["queue"] != b.queue || m["partition"] != "p" || m["namespace"] != b.queue || m["task"] != "" ||
			m["traceId"] != nil || m["producerSub"] != nil || admNum(t, m["queuePriority"]) != 4 {
			t.Fatalf("message %v", m)
		}
		admTime(t, m["createdAt"])
		if (k == "m3") != (m["leaseExpiresAt"] != nil) {
			t.Fatalf("%s: leaseExpiresAt %v: only the leased message has one", k, m["leaseExpiresAt"])
		}
	}
	if mode["hasQueueMode"] != true || admNum(t, mode["busGroupsCount"]) != 1 || mode["type"] != "hybrid" {
		t.Fatalf("mode %v", mode)
	}

	for status, key := range map[string]string{"processing": "m3", "dead_letter": "m2", "completed": "m1", "pending": "m4"} {
		msgs, _ := b.admMessages(admQuery("queue", b.queue, "status", status))
		if got := admField(msgs, "transactionId"); !slices.Equal(got, []string{key}) {
			t.Fatalf("status=%s: %v, want [%s]", status, got, key)
		}
	}
}

// A queue read only by queue mode, one read only by named groups, and the empty answer.
func TestAdminMessagesMode(t *testing.T) {
	b := admSetup(t, testserver.Options{})
	bus := b.queue + "-bus"
	b.admPushKeys("p", "a")
	b.push("p", obj{"queue": bus, "transactionId": "b", "payload": 1})
	b.admPop("p", "", 1)
	if p, ok := b.pop("/api/v1/pop/queue/" + url.PathEscape(bus) + "?consumerGroup=g1"); !ok || len(p.Messages) != 1 {
		t.Fatalf("pop of %s: %v", bus, p)
	}
	b.pop("/api/v1/pop/queue/" + url.PathEscape(bus) + "?consumerGroup=g2")

	for _, c := range []struct {
		query, typ string
		qm         bool
		groups     int64
	}{
		{admQuery("queue", b.queue), "queue", true, 0},
		{admQuery("queue", bus), "bus", false, 2},
		{admQuery("queue", b.queue+"-none"), "none", false, 0},
	} {
		msgs, mode := b.admMessages(c.query)
		if mode["type"] != c.typ || mode["hasQueueMode"] != c.qm || admNum(t, mode["busGroupsCount"]) != c.groups {
			t.Fatalf("%s: mode %v, want %s", c.query, mode, c.typ)
		}
		if c.typ == "bus" && (msgs[0]["queueStatus"] != nil || admNum(t, msgs[0]["busStatus"].(obj)["totalGroups"]) != 2) {
			t.Fatalf("bus message %v: queueStatus must be null and both groups counted", msgs[0])
		}
	}
}

func TestAdminMessagesListFilters(t *testing.T) {
	b := admSetup(t, testserver.Options{FakeClock: true})
	other := b.queue + ".sub"
	// t0 is half past a second, so a, b and c (1 ms apart) share that second.
	now := b.srv.Clock.Now()
	t0 := now.Truncate(time.Second).Add(1500 * time.Millisecond)
	b.srv.Clock.Advance(t0.Sub(now) - 2*time.Hour)
	b.admPushKeys("p", "old")
	b.srv.Clock.Advance(2 * time.Hour)
	b.admPushKeys("p", "a")
	b.srv.Clock.Advance(time.Millisecond)
	b.admPushKeys("q", "b")
	b.srv.Clock.Advance(time.Millisecond)
	b.push("p", obj{"queue": other, "transactionId": "c", "payload": 1})
	b.srv.Clock.Advance(10 * time.Second)
	t1 := b.srv.Clock.Now()
	b.admPushKeys("p", "d", "e", "f")

	for _, c := range []struct {
		query string
		want  []string
	}{
		{admQuery("queue", b.queue), []string{"f", "e", "d", "b", "a"}}, // "old" is outside the default hour
		{admQuery("queue", b.queue, "partition", "p"), []string{"f", "e", "d", "a"}},
		{admQuery("partition", "q", "ns", b.queue), []string{"b"}},
		{admQuery("ns", b.queue, "task", "sub"), []string{"c"}},
		{admQuery("queue", b.queue, "from", t1), []string{"f", "e", "d"}},
		{admQuery("queue", b.queue, "from", t0.Add(-3*time.Hour), "to", t0.Add(-time.Hour)), []string{"old"}},
		// A to bound without fractional seconds covers its whole second.
		{"?" + url.Values{"queue": {b.queue}, "to": {t0.UTC().Format("2006-01-02T15:04:05Z")}}.Encode(), []string{"b", "a"}},
		{admQuery("queue", b.queue, "limit", 2, "offset", 1), []string{"e", "d"}},
		{admQuery("queue", b.queue, "limit", "many", "offset", -4), []string{"f", "e", "d", "b", "a"}},
		{admQuery("queue", b.queue+"-none"), []string{}},
	} {
		msgs, _ := b.admMessages(c.query)
		if got := admField(msgs, "transactionId"); !slices.Equal(got, c.want) {
			t.Fatalf("%s: %v, want %v", c.query, got, c.want)
		}
	}

	for q, msg := range map[string]string{
		"?status=failed":              "Invalid status: failed",
		"?status=":                    "Invalid status: ",
		"?from=yesterday":             "Invalid from timestamp",
		"?to=2026-13-01T00:00:00Z":    "Invalid to timestamp",
		"?from=2026-01-01&to=2026-02": "Invalid from timestamp",
	} {
		admError(b, "GET", "/api/v1/messages"+q, nil, http.StatusBadRequest, `{"error":"`+msg+`"}`)
	}
}

// More than 1000 matching messages: a larger limit is cut to 1000, the default is 200.
func TestAdminMessagesLimitCap(t *testing.T) {
	b := admSetup(t, testserver.Options{})
	items := make([]obj, 1005)
	for i := range items {
		items[i] = obj{"payload": i}
	}
	b.push("p", items...)
	for _, c := range []struct {
		query string
		want  int
	}{{admQuery("queue", b.queue), 200}, {admQuery("queue", b.queue, "limit", 5000), 1000}, {admQuery("queue", b.queue, "limit", 1000, "offset", 1000), 5}} {
		if msgs, _ := b.admMessages(c.query); len(msgs) != c.want {
			t.Fatalf("%s: %d messages, want %d", c.query, len(msgs), c.want)
		}
	}
}
