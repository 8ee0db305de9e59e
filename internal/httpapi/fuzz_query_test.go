package httpapi_test

// Fuzz targets for query and path parsing (docs/api/README.md §2.1, §2.9): whatever path segment or
// query string a client sends to the pop routes, the list routes or the routes addressed by
// name, the broker answers without a 5xx. The seeds run as ordinary tests.

import (
	"strings"
	"testing"
)

// fuzzQuerySeeds are query strings every query target starts from.
var fuzzQuerySeeds = []string{
	"", "batch=2147483648", "batch=9223372036854775807", "partitions=9223372036854775807",
	"timeout=18446744073709551616", "consumerGroup=%FF", "consumerGroup=a%00b", "%FF=1", "a%C3=1",
	"limit=2147483648&offset=2147483648", "offset=-1&limit=abc", "limit=%zz", "search=" + strings.Repeat("s", 256),
	"queue=%ED%A0%80", "namespace=n&task=" + strings.Repeat("%C3%A9", 256), "from=2026-01-01T00:00:00Z&to=x",
	"subscriptionMode=new&subscriptionFrom=2026-02-30T00:00:00Z", "minLagSeconds=99999999999999999999",
	"sort=name&order=sideways", "status=pending&ns=%00", "interval=day", "wait=1&timeout=0",
	// Found while probing: a window of millennia kept the database busy past every timeout.
	"from=0000-01-01T00:00:00Z&to=9999-12-31T00:00:00Z", "interval=minute&from=2020-01-01T00:00:00Z",
	"from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00%2B23:59",
	// The dashboard's listing parameters (M6-M11).
	"sort=partitions&order=desc&search=%25_%5C", "sort=&order=", "state=Dead&sort=totalLag&group=%00",
	"transactionId=a%00b&traceId=", "traceId=0198F2C1-0000-7000-8000-000000000000&namespace=x",
	"sort=lastActivity&search=%00&limit=0&offset=1000001", "minLagSeconds=0&sort=offsetLag&queue=q",
}

// FuzzPopQuery fuzzes the three pop forms: the queue segment, the partition segment and the
// query string. wait=false comes first, and the first value wins, so no input long-polls.
func FuzzPopQuery(f *testing.F) {
	srv := fuzzBroker(f)
	for i, q := range fuzzQuerySeeds {
		f.Add(uint8(i), "fzp", "Default", q)
	}
	f.Add(uint8(0), "%FF", "p", "")
	f.Add(uint8(1), "fzp", "%00", "")
	f.Add(uint8(2), strings.Repeat("%C3%A9", 256), "p", "namespace=x")
	f.Add(uint8(1), "a%2Fb", "%zz", "batch=1")
	f.Fuzz(func(t *testing.T, form uint8, queue, partition, query string) {
		if queue == "" || partition == "" {
			return // an empty segment is another route (404), not a pop
		}
		q, p := fuzzEscape(queue, "/?"), fuzzEscape(partition, "/?")
		path := [...]string{"/api/v1/pop/queue/" + q, "/api/v1/pop/queue/" + q + "/partition/" + p, "/api/v1/pop"}[form%3]
		fuzzSend(t, srv, "GET", path+"?wait=false&"+fuzzEscape(query, ""), nil)
	})
}

// fuzzListRoutes are the GET routes that read query parameters besides the pop routes.
var fuzzListRoutes = []string{
	"/api/v1/messages", "/api/v1/dlq", "/api/v1/traces/names", "/api/v1/traces/by-name/fz",
	"/api/v1/resources/queues", "/api/v1/resources/namespaces", "/api/v1/resources/tasks",
	"/api/v1/consumer-groups", "/api/v1/consumer-groups/lagging", "/api/v1/status", "/api/v1/status/queues",
	"/api/v1/status/queues/fz/messages", "/api/v1/status/analytics", "/api/v1/analytics/system-metrics",
	"/api/v1/analytics/worker-metrics", "/api/v1/analytics/queue-lag", "/api/v1/analytics/queue-ops",
	"/api/v1/analytics/queue-parked-replicas", "/api/v1/analytics/retention", "/api/v1/analytics/postgres-stats",
	"/api/v1/resources/queues/fz", "/api/v1/status/queues/fz", "/api/v1/consumer-groups/fz",
	"/api/v1/resources/partitions", "/api/v1/auth/me", "/api/v1/system/jobs",
}

// FuzzListQuery fuzzes the query string of every list and status route.
func FuzzListQuery(f *testing.F) {
	srv := fuzzBroker(f)
	for i, q := range fuzzQuerySeeds {
		f.Add(uint8(i), q)
	}
	f.Fuzz(func(t *testing.T, route uint8, query string) {
		path := fuzzListRoutes[int(route)%len(fuzzListRoutes)]
		fuzzSend(t, srv, "GET", path+"?"+fuzzEscape(query, ""), nil)
	})
}

// fuzzNamedRoutes are the routes addressed by path parameters; %s is the fuzzed segment, the
// other parameters are fixed.
var fuzzNamedRoutes = []struct{ method, path string }{
	{"GET", "/api/v1/resources/queues/%s"}, {"DELETE", "/api/v1/resources/queues/%s"},
	{"GET", "/api/v1/messages/%s/tx"}, {"GET", "/api/v1/messages/00000000-0000-7000-8000-000000000000/%s"},
	{"DELETE", "/api/v1/messages/00000000-0000-7000-8000-000000000000/%s"},
	{"GET", "/api/v1/traces/by-name/%s"}, {"GET", "/api/v1/traces/00000000-0000-7000-8000-000000000000/%s"},
	{"GET", "/api/v1/consumer-groups/%s"}, {"DELETE", "/api/v1/consumer-groups/%s"},
	{"DELETE", "/api/v1/consumer-groups/g/queues/%s"}, {"POST", "/api/v1/consumer-groups/%s/queues/fz/seek"},
	{"POST", "/api/v1/consumer-groups/g/queues/fz/partitions/%s/seek"}, {"POST", "/api/v1/lease/%s/extend"},
	{"GET", "/api/v1/status/queues/%s"}, {"GET", "/api/v1/status/queues/%s/messages"},
}

// FuzzPathSegment fuzzes one path parameter of every route addressed by name or id, with the
// route's body where it needs one.
func FuzzPathSegment(f *testing.F) {
	srv := fuzzBroker(f)
	for i, seg := range []string{"fz", "%FF", "a%00b", "%C0%AF", "%ED%A0%80", strings.Repeat("%C3%A9", 256),
		strings.Repeat("x", 4000), "%zz", "a%2Fb", "..", "%2e%2e"} {
		f.Add(uint8(i), seg)
	}
	f.Fuzz(func(t *testing.T, route uint8, seg string) {
		if seg == "" {
			return
		}
		r := fuzzNamedRoutes[int(route)%len(fuzzNamedRoutes)]
		var body []byte
		if r.method == "POST" && strings.Contains(r.path, "/seek") && !strings.Contains(r.path, "partitions") {
			body = []byte(`{"toEnd":true}`)
		}
		fuzzSend(t, srv, r.method, strings.Replace(r.path, "%s", fuzzEscape(seg, "/?"), 1), body)
	})
}
