package httpapi_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testkit"
	"github.com/queen-go/queen/internal/testserver"
)

// The dashboard's listing routes (docs/api/admin-api.md "Listing parameters"; dashboard M6-M8,
// M11): paging, search, sort, total, their 400s and edges.

// lsRefresh recomputes the stats, retrying while a concurrent test's refresh holds the lock
// (the route then answers skipped).
func (b *bundle) lsRefresh() {
	b.t.Helper()
	testkit.Eventually(b.t, time.Minute, 20*time.Millisecond, func() error {
		code, body := b.do("POST", "/api/v1/stats/refresh", nil)
		if code != http.StatusOK || strings.Contains(string(body), "skipped") {
			return errors.New("stats refresh: " + string(body))
		}
		return nil
	})
}

// lsQueues lists queues on path and checks the answer's and each row's shape.
func (b *bundle) lsQueues(path, query string) ([]obj, int64, obj) {
	b.t.Helper()
	out := admShape(b.t, admGet(b, path+query), "queues", "total", "pagination", "statsAge")
	rows := admList(b.t, out["queues"])
	for _, r := range rows {
		admShape(b.t, r, "id", "name", "namespace", "task", "createdAt", "partitions", "messages", "deadLetter", "maxTimeLag")
		admShape(b.t, r["messages"], "total", "pending", "processing")
	}
	return rows, admNum(b.t, out["total"]), admShape(b.t, out["pagination"], "limit", "offset")
}

// Three queues in one namespace (this test's), tasks a, b, c, with different counters:
// a has 3 messages on 2 partitions, one of them dead-lettered (still stored); b has 1; c none.
func TestAdminQueueListings(t *testing.T) {
	b := admSetup(t, testserver.Options{FakeClock: true})
	ns := b.queue
	qa, qb, qc := ns+".a", ns+".b", ns+".c"
	b.push("p1", obj{"queue": qa, "transactionId": "x", "payload": 1}, obj{"queue": qa, "transactionId": "y", "payload": 2})
	b.push("p2", obj{"queue": qa, "transactionId": "z", "payload": 3})
	b.push("", obj{"queue": qb, "payload": 1})
	code, body := b.do("POST", "/api/v1/configure", obj{"queue": qc})
	if code != http.StatusOK && code != http.StatusCreated {
		t.Fatalf("configure %s: %d %s", qc, code, body)
	}
	b.queue = qa
	b.admAckAll(b.admPop("p1", "", 1), "dlq", "")
	b.lsRefresh()

	for _, path := range []string{"/api/v1/resources/queues", "/api/v1/status/queues"} {
		rows, total, page := b.lsQueues(path, admQuery("namespace", ns, "sort", "name"))
		if got := admField(rows, "name"); !slices.Equal(got, []string{qa, qb, qc}) || total != 3 {
			t.Fatalf("%s: %v total %d", path, got, total)
		}
		a := rows[0]
		m := a["messages"].(obj)
		if admNum(t, a["partitions"]) != 2 || admNum(t, m["total"]) != 3 || admNum(t, m["pending"]) != 2 ||
			admNum(t, a["deadLetter"]) != 1 || admNum(t, a["maxTimeLag"]) < 0 || a["task"] != "a" || a["namespace"] != ns {
			t.Fatalf("%s: row %v", path, a)
		}
		admTime(t, a["createdAt"])
		if admNum(t, page["offset"]) != 0 {
			t.Fatalf("pagination %v", page)
		}
	}
	// Defaults: resources newest first and 1,000 a page, status by name and 100 a page.
	rows, _, page := b.lsQueues("/api/v1/resources/queues", admQuery("namespace", ns))
	if got := admField(rows, "name"); !slices.Equal(got, []string{qc, qb, qa}) || admNum(t, page["limit"]) != 1000 {
		t.Fatalf("resources default: %v %v", got, page)
	}
	rows, _, page = b.lsQueues("/api/v1/status/queues", admQuery("namespace", ns))
	if got := admField(rows, "name"); !slices.Equal(got, []string{qa, qb, qc}) || admNum(t, page["limit"]) != 100 {
		t.Fatalf("status default: %v %v", got, page)
	}
	for _, c := range []struct {
		query []any
		want  []string
		total int64
	}{
		{[]any{"sort", "total"}, []string{qa, qb, qc}, 3}, // counts: desc by default
		{[]any{"sort", "total", "order", "asc"}, []string{qc, qb, qa}, 3},
		{[]any{"sort", "partitions"}, []string{qa, qb, qc}, 3},
		{[]any{"sort", "pending", "order", "asc"}, []string{qc, qb, qa}, 3},
		{[]any{"sort", "processing"}, []string{qa, qb, qc}, 3}, // all 0: by name
		{[]any{"sort", "deadLetter"}, []string{qa, qb, qc}, 3},
		{[]any{"sort", "lag"}, []string{qa, qb, qc}, 3},
		{[]any{"sort", "task", "order", "desc"}, []string{qc, qb, qa}, 3},
		{[]any{"sort", "namespace"}, []string{qa, qb, qc}, 3},
		{[]any{"sort", "createdAt", "order", "asc"}, []string{qa, qb, qc}, 3},
		{[]any{"sort", "name", "order", "desc"}, []string{qc, qb, qa}, 3},
		{[]any{"search", strings.ToUpper(".B")}, []string{qb}, 1}, // case-insensitive
		{[]any{"search", "%"}, []string{}, 0},                     // literal, not a pattern
		{[]any{"search", "_"}, []string{}, 0},
		{[]any{"search", ""}, []string{qa, qb, qc}, 3}, // empty: no filter
		{[]any{"task", "b"}, []string{qb}, 1},
		{[]any{"task", "B"}, []string{}, 0}, // exact, case-sensitive
		{[]any{"limit", 1, "offset", 1}, []string{qb}, 3},
		{[]any{"limit", 0}, []string{}, 3},
		{[]any{"limit", -1}, []string{qa, qb, qc}, 3},  // negative: the default
		{[]any{"limit", "x"}, []string{qa, qb, qc}, 3}, // malformed: the default
		{[]any{"offset", -5}, []string{qa, qb, qc}, 3}, // negative: 0
		{[]any{"offset", 3}, []string{}, 3},            // past the end
		{[]any{"offset", "9999999999"}, []string{}, 3}, // capped, no 500
	} {
		q := admQuery(append([]any{"namespace", ns}, c.query...)...)
		rows, total, _ := b.lsQueues("/api/v1/status/queues", q)
		if got := admField(rows, "name"); !slices.Equal(got, c.want) || total != c.total {
			t.Fatalf("%s: %v total %d, want %v total %d", q, got, total, c.want, c.total)
		}
	}
	_, _, page = b.lsQueues("/api/v1/status/queues", admQuery("namespace", ns, "limit", 5000, "offset", "5000000"))
	if admNum(t, page["limit"]) != 1000 || admNum(t, page["offset"]) != 1000000 {
		t.Fatalf("clamped pagination %v", page)
	}
	for _, path := range []string{"/api/v1/resources/queues", "/api/v1/status/queues"} {
		admError(b, "GET", path+"?sort=size", nil, http.StatusBadRequest, `{"error":"Invalid sort: size"}`)
		admError(b, "GET", path+"?sort=", nil, http.StatusBadRequest, `{"error":"Invalid sort: "}`)
		admError(b, "GET", path+"?order=up", nil, http.StatusBadRequest, `{"error":"Invalid order: up"}`)
		admError(b, "GET", path+"?search="+strings.Repeat("s", 256), nil, http.StatusBadRequest,
			`{"error":"search exceeds 255 characters"}`)
		// A NUL in a name matches nothing instead of reaching PostgreSQL.
		rows, total, _ := b.lsQueues(path, "?search=%00&namespace="+ns)
		if len(rows) != 0 || total != 0 {
			t.Fatalf("%s NUL search: %v %d", path, rows, total)
		}
	}
}

// Partitions of both queue detail routes (dashboard M7) and the detail's 16 options (M9).
func TestAdminQueuePartitionPages(t *testing.T) {
	b := admSetup(t, testserver.Options{FakeClock: true})
	opts := obj{"leaseTime": 61, "retryLimit": 7, "retryDelay": 2500, "priority": 4, "maxSize": 900, "ttl": 7200,
		"deadLetterQueue": true, "dlqAfterMaxRetries": true, "delayedProcessing": 3, "windowBuffer": 2,
		"retentionSeconds": 86400, "completedRetentionSeconds": 3600, "retentionEnabled": true,
		"encryptionEnabled": false, "maxWaitTimeSeconds": 600, "dedupWindowSeconds": 120}
	configured := admJSON[obj](b, http.StatusOK, "POST", "/api/v1/configure", obj{"queue": b.queue, "options": opts})
	b.admPushKeys("alpha", "a", "b", "c")
	b.srv.Clock.Advance(time.Second)
	b.admPushKeys("Beta", "d")
	b.srv.Clock.Advance(time.Second)
	b.admPushKeys("gamma_1", "e", "f")
	b.lsRefresh()

	detail := "/api/v1/resources/queues/" + b.queue
	d := admGet(b, detail)
	if !admEqualJSON(d["options"], mustJSON(t, configured["options"])) || len(d["options"].(obj)) != 16 {
		t.Fatalf("options %v, want configure's %v", d["options"], configured["options"])
	}
	for _, path := range []string{detail, "/api/v1/status/queues/" + b.queue} {
		for _, c := range []struct {
			query []any
			want  []string
			count int64
		}{
			{nil, []string{"Beta", "Default", "alpha", "gamma_1"}, 4}, // name ascending (byte order)
			{[]any{"sort", "total"}, []string{"alpha", "gamma_1", "Beta", "Default"}, 4},
			{[]any{"sort", "pending", "order", "asc"}, []string{"Default", "Beta", "gamma_1", "alpha"}, 4},
			{[]any{"sort", "createdAt"}, []string{"gamma_1", "Beta", "alpha", "Default"}, 4},
			{[]any{"sort", "lag"}, []string{"Beta", "Default", "alpha", "gamma_1"}, 4},  // no consumer: all 0
			{[]any{"sort", "lastActivity", "limit", 2}, []string{"gamma_1", "Beta"}, 4}, // latest write first
			{[]any{"search", "A_"}, []string{"gamma_1"}, 1},                             // literal, case-insensitive
			{[]any{"search", "zzz"}, []string{}, 0},
			{[]any{"limit", 2, "offset", 1}, []string{"Default", "alpha"}, 4},
			{[]any{"limit", 0}, []string{}, 4},
			{[]any{"offset", 10}, []string{}, 4},
		} {
			out := admGet(b, path+admQuery(c.query...))
			parts := admList(t, out["partitions"])
			if got := admField(parts, "name"); !slices.Equal(got, c.want) || admNum(t, out["partitionCount"]) != c.count {
				t.Fatalf("%s%s: %v count %v, want %v count %d", path, admQuery(c.query...), got, out["partitionCount"], c.want, c.count)
			}
		}
		out := admGet(b, path+"?search=%00")
		if len(admList(t, out["partitions"])) != 0 || admNum(t, out["partitionCount"]) != 0 {
			t.Fatalf("NUL search: %v", out)
		}
		admError(b, "GET", path+"?sort=queue", nil, http.StatusBadRequest, `{"error":"Invalid sort: queue"}`)
		admError(b, "GET", path+"?order=DESC", nil, http.StatusBadRequest, `{"error":"Invalid order: DESC"}`)
		admError(b, "GET", path+"?search="+strings.Repeat("x", 256), nil, http.StatusBadRequest,
			`{"error":"search exceeds 255 characters"}`)
		admError(b, "GET", path+"-missing?sort=name", nil, http.StatusNotFound, `{"error":"Queue not found"}`)
	}
	// The totals cover the whole queue whatever the page.
	d = admGet(b, detail+"?search=Beta")
	if admNum(t, d["totals"].(obj)["total"]) != 6 {
		t.Fatalf("totals %v", d["totals"])
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// lsArray GETs a listing that answers a bare array and returns its objects.
func (b *bundle) lsArray(path string) []obj {
	b.t.Helper()
	return admList(b.t, admJSON[any](b, http.StatusOK, "GET", path, nil))
}

// Consumer-group listings with filters, sort and paging (dashboard M8); answers stay arrays.
func TestAdminConsumerGroupListings(t *testing.T) {
	b := admSetup(t, testserver.Options{FakeClock: true})
	ga, gb := "ga-"+b.queue, "gb-"+b.queue
	b.admPushKeys("p1", "a", "b")
	b.admPushKeys("p2", "c")
	b.admAckAll(b.admPop("p1", ga, 2), "completed", ga)   // ga: p1 consumed, p2 lags by 1
	b.admPopQueue(b.queue, gb, "subscriptionMode", "new") // gb: registered after everything, no lag
	b.admPop("p2", "", 1)                                 // queue mode: a cursor on p2 only, c leased
	b.lsRefresh()                                         // the listings' lag is the stats job's
	b.srv.Clock.Advance(400 * time.Second)                // ga and queue mode lag 400 s: Lagging

	groups := func(query ...any) []string {
		rows := b.lsArray("/api/v1/consumer-groups" + admQuery(append([]any{"queue", b.queue}, query...)...))
		out := make([]string, len(rows))
		for i, r := range rows {
			out[i] = r["name"].(string)
		}
		return out
	}
	for _, c := range []struct {
		query []any
		want  []string
	}{
		{nil, []string{"__QUEUE_MODE__", ga, gb}},
		{[]any{"order", "desc"}, []string{gb, ga, "__QUEUE_MODE__"}},
		{[]any{"sort", "totalLag"}, []string{"__QUEUE_MODE__", ga, gb}}, // 1, 1, 0: ties by group name
		{[]any{"sort", "maxTimeLag", "order", "asc"}, []string{gb, "__QUEUE_MODE__", ga}},
		{[]any{"sort", "members"}, []string{ga, gb, "__QUEUE_MODE__"}},
		{[]any{"sort", "queue"}, []string{"__QUEUE_MODE__", ga, gb}},
		{[]any{"state", "Lagging"}, []string{"__QUEUE_MODE__", ga}},
		{[]any{"state", "Dead"}, []string{gb}},
		{[]any{"state", "Stable"}, []string{}},
		{[]any{"group", ga}, []string{ga}},
		{[]any{"group", strings.ToUpper(ga)}, []string{}}, // exact
		{[]any{"search", "GB-"}, []string{gb}},            // substring, any case
		{[]any{"search", "%"}, []string{}},
		{[]any{"limit", 1, "offset", 1}, []string{ga}},
		{[]any{"limit", 0}, []string{}},
		{[]any{"offset", 3}, []string{}},
	} {
		if got := groups(c.query...); !slices.Equal(got, c.want) {
			t.Fatalf("%v: %v, want %v", c.query, got, c.want)
		}
	}
	if rows := b.lsArray("/api/v1/consumer-groups?queue=" + b.queue + "-none"); len(rows) != 0 {
		t.Fatalf("unknown queue: %v", rows)
	}
	admError(b, "GET", "/api/v1/consumer-groups?state=lagging", nil, http.StatusBadRequest, `{"error":"Invalid state: lagging"}`)
	admError(b, "GET", "/api/v1/consumer-groups?sort=lag", nil, http.StatusBadRequest, `{"error":"Invalid sort: lag"}`)
	admError(b, "GET", "/api/v1/consumer-groups?order=x", nil, http.StatusBadRequest, `{"error":"Invalid order: x"}`)

	// Lagging pairs of this queue, every pair with minLagSeconds=0 (the heatmap).
	pairs := func(query ...any) []string {
		rows := b.lsArray("/api/v1/consumer-groups/lagging" + admQuery(append([]any{"queue", b.queue, "minLagSeconds", 0}, query...)...))
		out := make([]string, len(rows))
		for i, r := range rows {
			out[i] = r["consumer_group"].(string) + "/" + r["partition_name"].(string)
		}
		return out
	}
	for _, c := range []struct {
		query []any
		want  []string
	}{
		// time lags: queue mode p2 400; ga p2 400, p1 0; gb p1 0, p2 0. Ties by partition, group.
		{nil, []string{"__QUEUE_MODE__/p2", ga + "/p2", ga + "/p1", gb + "/p1", gb + "/p2"}},
		{[]any{"sort", "offsetLag"}, []string{"__QUEUE_MODE__/p2", ga + "/p2", ga + "/p1", gb + "/p1", gb + "/p2"}},
		{[]any{"sort", "partition"}, []string{ga + "/p1", gb + "/p1", "__QUEUE_MODE__/p2", ga + "/p2", gb + "/p2"}},
		{[]any{"sort", "group", "order", "desc"}, []string{gb + "/p1", gb + "/p2", ga + "/p1", ga + "/p2", "__QUEUE_MODE__/p2"}},
		{[]any{"group", ga}, []string{ga + "/p2", ga + "/p1"}},
		{[]any{"minLagSeconds", 60, "group", ga}, []string{ga + "/p2"}},
		{[]any{"limit", 2, "offset", 1}, []string{ga + "/p2", ga + "/p1"}},
		{[]any{"limit", 0}, []string{}},
	} {
		if got := pairs(c.query...); !slices.Equal(got, c.want) {
			t.Fatalf("lagging %v: %v, want %v", c.query, got, c.want)
		}
	}
	admError(b, "GET", "/api/v1/consumer-groups/lagging?sort=time", nil, http.StatusBadRequest, `{"error":"Invalid sort: time"}`)
	admError(b, "GET", "/api/v1/consumer-groups/lagging?order=", nil, http.StatusBadRequest, `{"error":"Invalid order: "}`)

	// One group, one queue: unknown queues answer an empty object, an unknown group 404.
	one := admGet(b, "/api/v1/consumer-groups/"+ga+admQuery("queue", b.queue))
	if len(one) != 1 || one[b.queue] == nil {
		t.Fatalf("group on its queue: %v", one)
	}
	if none := admGet(b, "/api/v1/consumer-groups/"+ga+admQuery("queue", b.queue+"-none")); len(none) != 0 {
		t.Fatalf("group on another queue: %v", none)
	}
	admError(b, "GET", "/api/v1/consumer-groups/nope-"+b.queue+"?queue="+b.queue, nil, http.StatusNotFound,
		`{"error":"Consumer group not found"}`)
}

// Trace-name search (dashboard M11): a literal, case-insensitive substring, counted in total.
func TestAdminTraceNameSearch(t *testing.T) {
	b := admSetup(t, testserver.Options{FakeClock: true})
	res := b.admPushKeys("p", "m1")
	uniq := b.queue
	names := []string{"Order-" + uniq, "order_" + uniq + "-refund", "pay%" + uniq}
	for _, n := range names {
		b.srv.Clock.Advance(time.Second)
		admJSON[obj](b, http.StatusCreated, "POST", "/api/v1/traces", obj{"transactionId": "m1",
			"partitionId": res[0].PartitionID, "data": obj{"n": n}, "traceNames": []string{n}})
	}
	search := func(query ...any) ([]string, int64) {
		out := admShape(t, admGet(b, "/api/v1/traces/names"+admQuery(query...)), "trace_names", "total", "pagination")
		return admField(admList(t, out["trace_names"]), "trace_name"), admNum(t, out["total"])
	}
	for _, c := range []struct {
		search string
		want   []string
	}{
		{uniq, []string{names[2], names[1], names[0]}}, // most recent first
		{"ORDER", []string{names[1], names[0]}},
		{"order_", []string{names[1]}}, // _ is literal
		{"%" + uniq, []string{names[2]}},
		{"-REFUND", []string{names[1]}},
		{uniq + "-none", []string{}},
	} {
		got, total := search("search", c.search)
		if c.search == "ORDER" {
			got = slices.DeleteFunc(got, func(n string) bool { return !strings.Contains(n, uniq) })
			total = int64(len(got))
		}
		if !slices.Equal(got, c.want) || total != int64(len(c.want)) {
			t.Fatalf("search %q: %v total %d, want %v", c.search, got, total, c.want)
		}
	}
	if got, total := search("search", uniq, "limit", 1, "offset", 1); !slices.Equal(got, []string{names[1]}) || total != 3 {
		t.Fatalf("page 2: %v total %d", got, total)
	}
	if got, total := search("search", "a\x00b"); len(got) != 0 || total != 0 {
		t.Fatalf("NUL search: %v %d", got, total)
	}
	admError(b, "GET", "/api/v1/traces/names?search="+strings.Repeat("n", 256), nil, http.StatusBadRequest,
		`{"error":"search exceeds 255 characters"}`)
}

// Exact lookups by transactionId and traceId (dashboard M10): any partition, no default window.
func TestAdminMessageLookups(t *testing.T) {
	b := admSetup(t, testserver.Options{FakeClock: true})
	trace := "0198f2c1-0000-7000-8000-" + fmt.Sprintf("%012x", time.Now().UnixNano()&0xffffffffffff)
	b.admPushKeys("p1", "k1", "shared")
	// Newest first; under the fixed clock equal times would fall back to partition ids.
	b.srv.Clock.Advance(time.Second)
	b.admPushKeys("p2", "shared")
	b.txnCommit(obj{"operations": []any{obj{"type": "push", "queue": b.queue, "partition": "p3", "transactionId": "t1",
		"payload": 1, "traceId": strings.ToUpper(trace)}}})
	b.srv.Clock.Advance(3 * time.Hour) // outside the default window of one hour

	list := func(query ...any) []string {
		out := admGet(b, "/api/v1/messages"+admQuery(query...))
		rows := admList(t, out["messages"])
		keys := make([]string, len(rows))
		for i, r := range rows {
			keys[i] = r["partition"].(string) + "/" + r["transactionId"].(string)
		}
		return keys
	}
	for _, c := range []struct {
		query []any
		want  []string
	}{
		{[]any{"queue", b.queue}, []string{}}, // the default window is the last hour
		{[]any{"queue", b.queue, "transactionId", "shared"}, []string{"p2/shared", "p1/shared"}},
		{[]any{"queue", b.queue, "transactionId", "shared", "partition", "p1"}, []string{"p1/shared"}},
		{[]any{"queue", b.queue, "transactionId", "SHARED"}, []string{}}, // exact
		{[]any{"queue", b.queue, "transactionId", "shared", "limit", 1, "offset", 1}, []string{"p1/shared"}},
		{[]any{"queue", b.queue, "transactionId", "shared", "status", "completed"}, []string{}},
		{[]any{"traceId", trace}, []string{"p3/t1"}}, // in every queue; upper case on the way in is the same UUID
		{[]any{"traceId", strings.ToUpper(trace), "queue", b.queue + "-other"}, []string{}},
		{[]any{"traceId", trace, "transactionId", "t1"}, []string{"p3/t1"}},
		{[]any{"traceId", trace, "transactionId", "k1"}, []string{}},
		{[]any{"transactionId", "k1", "ns", b.queue}, []string{"p1/k1"}},
		{[]any{"transactionId", "k1", "namespace", b.queue}, []string{"p1/k1"}},        // the alias
		{[]any{"transactionId", "k1", "ns", "none", "namespace", b.queue}, []string{}}, // ns wins
		{[]any{"transactionId", "k1", "queue", b.queue, "to", b.srv.Clock.Now().Add(-2 * time.Hour)}, []string{"p1/k1"}},
		{[]any{"transactionId", "k1", "queue", b.queue, "from", b.srv.Clock.Now().Add(-time.Hour)}, []string{}},
		{[]any{"transactionId", "a\x00b"}, []string{}},
	} {
		if got := list(c.query...); !slices.Equal(got, c.want) {
			t.Fatalf("%v: %v, want %v", c.query, got, c.want)
		}
	}
	for _, bad := range []string{"nope", "0198f2c1000070008000000000000000", trace + "0"} {
		admError(b, "GET", "/api/v1/messages?traceId="+bad, nil, http.StatusBadRequest, `{"error":"traceId must be a UUID"}`)
	}
	admError(b, "GET", "/api/v1/messages?transactionId=x&from=yesterday", nil, http.StatusBadRequest,
		`{"error":"Invalid from timestamp"}`)
}

// Namespace and task listings: search, sort, paging, total (admin-api.md "Listing parameters").
func TestAdminLabelListings(t *testing.T) {
	b := admSetup(t, testserver.Options{})
	u := b.queue
	// Namespaces nA (two queues, 3 pending), nB (one queue, 1 pending), n_C (one queue, none).
	for _, q := range []struct{ queue, ns string }{{u + "-1", "nA-" + u}, {u + "-2", "nA-" + u}, {u + "-3", "nB-" + u}, {u + "-4", "n_C-" + u}} {
		admJSON[obj](b, http.StatusOK, "POST", "/api/v1/configure", obj{"queue": q.queue, "namespace": q.ns, "task": "t-" + q.ns})
	}
	b.push("", obj{"queue": u + "-1", "payload": 1}, obj{"queue": u + "-1", "payload": 2})
	b.push("", obj{"queue": u + "-2", "payload": 1})
	b.push("", obj{"queue": u + "-3", "payload": 1})
	b.lsRefresh()

	labels := func(path, key string, query ...any) ([]string, int64) {
		out := admShape(t, admGet(b, path+admQuery(append([]any{"search", "-" + u}, query...)...)), key, "total", "pagination")
		return admField(admList(t, out[key]), key[:len(key)-1]), admNum(t, out["total"])
	}
	a, bb, c := "nA-"+u, "nB-"+u, "n_C-"+u
	for _, cs := range []struct {
		query []any
		want  []string
		total int64
	}{
		{nil, []string{a, bb, c}, 3},
		{[]any{"order", "desc"}, []string{c, bb, a}, 3},
		{[]any{"sort", "queues"}, []string{a, bb, c}, 3},
		{[]any{"sort", "pending", "order", "asc"}, []string{c, bb, a}, 3},
		{[]any{"search", "N_c-"}, []string{c}, 1},
		{[]any{"limit", 1, "offset", 1}, []string{bb}, 3},
		{[]any{"limit", 0}, []string{}, 3},
	} {
		if got, total := labels("/api/v1/resources/namespaces", "namespaces", cs.query...); !slices.Equal(got, cs.want) || total != cs.total {
			t.Fatalf("namespaces %v: %v total %d, want %v", cs.query, got, total, cs.want)
		}
	}
	if got, total := labels("/api/v1/resources/tasks", "tasks", "sort", "queues"); !slices.Equal(got, []string{"t-" + a, "t-" + bb, "t-" + c}) || total != 3 {
		t.Fatalf("tasks: %v %d", got, total)
	}
	for _, path := range []string{"/api/v1/resources/namespaces", "/api/v1/resources/tasks"} {
		admError(b, "GET", path+"?sort=partitions", nil, http.StatusBadRequest, `{"error":"Invalid sort: partitions"}`)
		admError(b, "GET", path+"?order=sideways", nil, http.StatusBadRequest, `{"error":"Invalid order: sideways"}`)
	}
}
