package httpapi_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testserver"
)

// Consumer groups: listings, detail, deletion and subscription (docs/api/admin-api.md §7).

// admGroupsOf returns the consumer-group listing's elements for one queue, by group name.
func (b *bundle) admGroupsOf(queue string) map[string]obj {
	b.t.Helper()
	out := map[string]obj{}
	for _, g := range admList(b.t, admJSON[any](b, http.StatusOK, "GET", "/api/v1/consumer-groups", nil)) {
		admShape(b.t, g, "name", "topics", "queueName", "members", "partitionsWithLag", "totalLag", "maxTimeLag",
			"state", "subscriptionMode", "subscriptionTimestamp", "subscriptionCreatedAt")
		if g["queueName"] == queue {
			out[g["name"].(string)] = g
		}
	}
	return out
}

// admPopQueue pops a whole queue for a group with extra query parameters; ok is false on 204.
func (b *bundle) admPopQueue(queue, group string, extra ...any) (popped, bool) {
	b.t.Helper()
	return b.pop("/api/v1/pop/queue/" + url.PathEscape(queue) + admQuery(append([]any{"consumerGroup", group,
		"batch", 100, "partitions", 100}, extra...)...))
}

func TestAdminConsumerGroupsList(t *testing.T) {
	b := admSetup(t, testserver.Options{FakeClock: true})
	stable, dead := "s-"+b.queue, "d-"+b.queue
	b.admPushKeys("p1", "a", "b")
	b.admPushKeys("p2", "c")
	registered := b.srv.Clock.Now()
	b.admAckAll(b.admPop("p1", stable, 2), "completed", stable)
	b.admPopQueue(b.queue, dead, "subscriptionMode", "new") // registers after everything: no lag
	b.admPop("p2", "", 1)                                   // queue mode leases c, consumes nothing
	b.lsRefresh()                                           // the listings' lag is the stats job's

	b.srv.Clock.Advance(100 * time.Second)
	groups := b.admGroupsOf(b.queue)
	if len(groups) != 3 {
		t.Fatalf("groups %v", groups)
	}
	want := map[string]string{
		stable: `{"name":"` + stable + `","topics":["` + b.queue + `"],"queueName":"` + b.queue + `","members":2,
			"partitionsWithLag":1,"totalLag":1,"maxTimeLag":100,"state":"Stable","subscriptionMode":"all",
			"subscriptionTimestamp":null,"subscriptionCreatedAt":"` + registered.UTC().Format("2006-01-02T15:04:05.000Z") + `"}`,
		dead: `{"name":"` + dead + `","topics":["` + b.queue + `"],"queueName":"` + b.queue + `","members":2,
			"partitionsWithLag":0,"totalLag":0,"maxTimeLag":0,"state":"Dead","subscriptionMode":"new",
			"subscriptionTimestamp":"` + registered.UTC().Format("2006-01-02T15:04:05.000Z") + `",
			"subscriptionCreatedAt":"` + registered.UTC().Format("2006-01-02T15:04:05.000Z") + `"}`,
		"__QUEUE_MODE__": `{"name":"__QUEUE_MODE__","topics":["` + b.queue + `"],"queueName":"` + b.queue + `",
			"members":1,"partitionsWithLag":1,"totalLag":1,"maxTimeLag":100,"state":"Dead","subscriptionMode":null,
			"subscriptionTimestamp":null,"subscriptionCreatedAt":null}`,
	}
	for name, w := range want {
		if !admEqualJSON(groups[name], w) {
			t.Fatalf("group %s: %v\nwant %s", name, groups[name], w)
		}
	}

	// Past 300 s of time lag a group is Lagging, whether it ever consumed or not.
	b.srv.Clock.Advance(201 * time.Second)
	groups = b.admGroupsOf(b.queue)
	for name, state := range map[string]string{stable: "Lagging", "__QUEUE_MODE__": "Lagging", dead: "Dead"} {
		if groups[name]["state"] != state {
			t.Fatalf("%s: %v, want %s", name, groups[name], state)
		}
	}
}

func TestAdminLaggingConsumers(t *testing.T) {
	b := admSetup(t, testserver.Options{FakeClock: true})
	held, done := "h-"+b.queue, "c-"+b.queue
	res := b.admPushKeys("p", "a")
	b.admAckAll(b.admPop("p", done, 1), "completed", done)
	b.admPop("p", "", 1) // queue mode's lease expires long before the check
	b.srv.Clock.Advance(2 * time.Hour)
	lease := b.admPop("p", held, 1).LeaseID
	b.lsRefresh() // the pairs and their lag are the stats job's

	lagging := func(query string) map[string]obj {
		out := map[string]obj{}
		for _, l := range admList(t, admJSON[any](b, http.StatusOK, "GET", "/api/v1/consumer-groups/lagging"+query, nil)) {
			admShape(t, l, "consumer_group", "queue_name", "partition_name", "partition_id", "worker_id", "offset_lag",
				"time_lag_seconds", "lag_hours", "oldest_unconsumed_at", "last_consumed_at")
			if l["queue_name"] == b.queue {
				out[l["consumer_group"].(string)] = l
			}
		}
		return out
	}
	got := lagging("")
	if len(got) != 2 || got[done] != nil {
		t.Fatalf("lagging pairs %v, want queue mode and %s (the default minimum is an hour)", got, held)
	}
	q := got["__QUEUE_MODE__"]
	if q["partition_name"] != "p" || q["partition_id"] != res[0].PartitionID || q["worker_id"] != nil ||
		admNum(t, q["offset_lag"]) != 1 || admNum(t, q["time_lag_seconds"]) != 7200 || q["lag_hours"] != 2.0 ||
		q["last_consumed_at"] != nil {
		t.Fatalf("queue mode pair %v", q)
	}
	admTime(t, q["oldest_unconsumed_at"])
	if got[held]["worker_id"] != lease {
		t.Fatalf("worker_id %v, want the live lease %s", got[held]["worker_id"], lease)
	}
	// The minimum's rule is tested in internal/store/admin_test.go; here, that it reaches it.
	if all := lagging("?minLagSeconds=0"); all[done] == nil {
		t.Fatalf("minLagSeconds=0 lists every pair, the caught-up one too: %v", all)
	} else {
		admTime(t, all[done]["last_consumed_at"])
	}
	for _, v := range []string{"-1", "abc", "1.5", "", "1e3"} {
		admError(b, "GET", "/api/v1/consumer-groups/lagging?minLagSeconds="+url.QueryEscape(v), nil,
			http.StatusBadRequest, `{"error":"minLagSeconds must be a non-negative integer"}`)
	}
}

func TestAdminConsumerGroupDetail(t *testing.T) {
	b := admSetup(t, testserver.Options{})
	group, other := "g-"+b.queue, b.queue+"-other"
	b.admPushKeys("p1", "a", "b")
	b.admPushKeys("p2", "c")
	b.push("x", obj{"queue": other, "payload": 1})
	p := b.admPop("p1", group, 2)
	b.ack(obj{"transactionId": "a", "partitionId": p.PartitionID, "leaseId": p.LeaseID, "consumerGroup": group})
	b.admPopQueue(other, group, "autoAck", true)

	d := admGet(b, "/api/v1/consumer-groups/"+url.PathEscape(group))
	admShape(t, d, b.queue, other)
	parts := admList(t, admShape(t, d[b.queue], "partitions")["partitions"])
	if got := admField(parts, "partition"); !slices.Equal(got, []string{"p1", "p2"}) {
		t.Fatalf("partitions %v", got)
	}
	for _, part := range parts {
		admShape(t, part, "partition", "workerId", "lastConsumedAt", "totalConsumed", "offsetLag", "timeLagSeconds", "leaseActive")
	}
	if p1 := parts[0]; p1["workerId"] != p.LeaseID || p1["leaseActive"] != true || admNum(t, p1["totalConsumed"]) != 1 ||
		admNum(t, p1["offsetLag"]) != 1 || p1["lastConsumedAt"] == nil {
		t.Fatalf("p1 %v: a consumed, b leased", p1)
	}
	if p2 := parts[1]; p2["workerId"] != nil || p2["leaseActive"] != false || admNum(t, p2["totalConsumed"]) != 0 ||
		admNum(t, p2["offsetLag"]) != 1 || p2["lastConsumedAt"] != nil {
		t.Fatalf("p2 %v: registered, nothing consumed", p2)
	}
	if x := admList(t, d[other].(obj)["partitions"]); len(x) != 1 || admNum(t, x[0]["totalConsumed"]) != 1 ||
		admNum(t, x[0]["offsetLag"]) != 0 {
		t.Fatalf("%s: %v", other, x)
	}
	admError(b, "GET", "/api/v1/consumer-groups/none-"+url.PathEscape(b.queue), nil, http.StatusNotFound,
		`{"error":"Consumer group not found"}`)
}

func TestAdminDeleteConsumerGroup(t *testing.T) {
	b := admSetup(t, testserver.Options{})
	group, other := "g-"+b.queue, b.queue+"-other"
	b.admPushKeys("p", "a", "b")
	b.push("x", obj{"queue": other, "transactionId": "x1", "payload": 1})
	p := b.admPop("p", group, 1)
	x, _ := b.admPopQueue(other, group)
	b.admAckAll(x, "dlq", group)

	out := admJSON[obj](b, http.StatusOK, "DELETE", "/api/v1/consumer-groups/"+url.PathEscape(group)+"/queues/"+url.PathEscape(b.queue), nil)
	if !admEqualJSON(out, `{"success":true,"consumerGroup":"`+group+`","queueName":"`+b.queue+`","deletedPartitions":1,"metadataDeleted":true}`) {
		t.Fatalf("delete on one queue: %v", out)
	}
	if r := b.ack(obj{"transactionId": "a", "partitionId": p.PartitionID, "leaseId": p.LeaseID, "consumerGroup": group}); r.Success ||
		r.Error == nil || *r.Error != "Invalid or expired lease" {
		t.Fatalf("ack under the deleted group's lease: %+v", r)
	}
	if g := b.admGroupsOf(b.queue); g[group] != nil {
		t.Fatalf("group still listed on %s: %v", b.queue, g[group])
	}
	if g := b.admGroupsOf(other); g[group] == nil {
		t.Fatalf("the group's state on %s must stay", other)
	}
	// Registered afresh, the group reads the queue from its first message again.
	if got, _ := b.admPopQueue(b.queue, group); !slices.Equal(admKeys(got), []string{"a", "b"}) {
		t.Fatalf("after deletion the group got %v", admKeys(got))
	}

	out = admJSON[obj](b, http.StatusOK, "DELETE", "/api/v1/consumer-groups/"+url.PathEscape(group)+"?deleteMetadata=false", nil)
	if !admEqualJSON(out, `{"success":true,"consumerGroup":"`+group+`","deletedPartitions":2,"metadataDeleted":false}`) {
		t.Fatalf("delete everywhere, keeping the registrations: %v", out)
	}
	if g := b.admGroupsOf(other)[group]; g == nil || g["subscriptionMode"] != "all" || admNum(t, g["members"]) != 0 {
		t.Fatalf("kept registration on %s: %v", other, g)
	}
	// Without its cursor the still registered group restarts by its subscription (all).
	if got, _ := b.admPopQueue(other, group); !slices.Equal(admKeys(got), []string{"x1"}) {
		t.Fatalf("after deletion without metadata the group got %v", admKeys(got))
	}
	if _, total, _ := b.admDLQ(admQuery("consumerGroup", group)); total != 1 {
		t.Fatalf("DLQ entries of a deleted group must stay: %d", total)
	}

	out = admJSON[obj](b, http.StatusOK, "DELETE", "/api/v1/consumer-groups/none-"+url.PathEscape(group), nil)
	if !admEqualJSON(out, `{"success":true,"consumerGroup":"none-`+group+`","deletedPartitions":0,"metadataDeleted":true}`) {
		t.Fatalf("delete of an unknown group: %v", out)
	}
}

func TestAdminSubscriptionUpdate(t *testing.T) {
	b := admSetup(t, testserver.Options{FakeClock: true})
	group := "g-" + b.queue
	b.admPushKeys("p1", "a")
	b.admPopQueue(b.queue, group, "subscriptionMode", "new") // registered after a: nothing to read
	b.admPushKeys("p2", "before")
	b.srv.Clock.Advance(time.Second)
	ts := b.srv.Clock.Now()
	b.srv.Clock.Advance(time.Second)
	b.admPushKeys("p2", "after")

	path := "/api/v1/consumer-groups/" + url.PathEscape(group) + "/subscription"
	out := admJSON[obj](b, http.StatusOK, "POST", path, obj{"subscriptionTimestamp": ts.Format(time.RFC3339Nano)})
	if !admEqualJSON(out, `{"success":true,"consumerGroup":"`+group+`","newTimestamp":"`+
		ts.UTC().Format("2006-01-02T15:04:05.000Z")+`","rowsUpdated":1}`) {
		t.Fatalf("subscription update: %v", out)
	}
	g := b.admGroupsOf(b.queue)[group]
	if g["subscriptionMode"] != "timestamp" || !admTime(t, g["subscriptionTimestamp"]).Equal(ts.Truncate(time.Millisecond)) {
		t.Fatalf("listed subscription %v", g)
	}
	// p2 is new to the group: its cursor there starts at the new timestamp (mode new would
	// have started at "before").
	if got, _ := b.admPopQueue(b.queue, group); !slices.Equal(admKeys(got), []string{"after"}) {
		t.Fatalf("after the update the group got %v, want [after]", admKeys(got))
	}

	for _, name := range []string{"__QUEUE_MODE__", "none-" + group} {
		out := admJSON[obj](b, http.StatusOK, "POST", "/api/v1/consumer-groups/"+url.PathEscape(name)+"/subscription",
			obj{"subscriptionTimestamp": "2026-01-01T00:00:00Z"})
		if admNum(t, out["rowsUpdated"]) != 0 {
			t.Fatalf("%s: %v: queue mode and unknown groups have no subscription to rewrite", name, out)
		}
	}
	for body, msg := range map[string]string{
		`{}`:                              "Missing subscriptionTimestamp in request body",
		`{"subscriptionTimestamp":null}`:  "Missing subscriptionTimestamp in request body",
		`[1]`:                             "Missing subscriptionTimestamp in request body",
		`{"subscriptionTimestamp":"now"}`: "Invalid subscriptionTimestamp",
		`{"subscriptionTimestamp":17}`:    "Invalid subscriptionTimestamp",
		``:                                "Empty request body",
	} {
		admError(b, "POST", path, body, http.StatusBadRequest, `{"error":"`+msg+`"}`)
	}
}

// The listings' lag is the stats job's (docs/api/admin-api.md §7): after a run it equals the
// group detail's live lag; a consumption shows in the detail at once and in the listings from
// the next run on, while the time lag keeps growing between runs.
func TestAdminGroupLagAsOfLastStatsRun(t *testing.T) {
	b := admSetup(t, testserver.Options{FakeClock: true})
	g := "g-" + b.queue
	b.admPushKeys("p1", "a", "b")
	b.admPushKeys("p2", "c")
	p := b.admPop("p1", g, 1) // a leased
	detail := func() (lag int64) {
		t.Helper()
		d := admGet(b, "/api/v1/consumer-groups/"+url.PathEscape(g)+"?queue="+url.QueryEscape(b.queue))
		for _, part := range admList(t, d[b.queue].(obj)["partitions"]) {
			lag += admNum(t, part["offsetLag"])
		}
		return lag
	}
	listed := func() (total, maxTime int64) {
		t.Helper()
		row := b.admGroupsOf(b.queue)[g]
		var pairs int64
		for _, l := range b.lsArray("/api/v1/consumer-groups/lagging" + admQuery("queue", b.queue, "group", g, "minLagSeconds", 0)) {
			pairs += admNum(t, l["offset_lag"])
		}
		if pairs != admNum(t, row["totalLag"]) {
			t.Fatalf("lagging pairs sum to %d, the group row says %v", pairs, row)
		}
		return admNum(t, row["totalLag"]), admNum(t, row["maxTimeLag"])
	}

	b.lsRefresh()
	live := detail()
	if total, _ := listed(); live == 0 || total != live {
		t.Fatalf("after a stats run: listed %d, live %d", total, live)
	}
	b.srv.Clock.Advance(50 * time.Second)
	if _, maxTime := listed(); maxTime != 50 {
		t.Fatalf("maxTimeLag %d 50 s after the run, want 50 (the oldest unconsumed message's age now)", maxTime)
	}
	b.admAckAll(p, "completed", g)
	if detail() != live-1 {
		t.Fatalf("detail after the ack: %d, want %d (live)", detail(), live-1)
	}
	if total, _ := listed(); total != live {
		t.Fatalf("listed before the next run: %d, want %d (as of the last run)", total, live)
	}
	b.lsRefresh()
	if total, _ := listed(); total != live-1 {
		t.Fatalf("listed after the next run: %d, want %d", total, live-1)
	}
}
