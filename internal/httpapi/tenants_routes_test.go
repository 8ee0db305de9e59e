package httpapi_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/queen-go/queen/internal/httpapi"
)

// tenantRouteCase is how the route table addresses one route with another tenant's objects:
// the path and body templates, whose {Q} (queue), {P} (partition), {PID} (partition id), {K}
// (transaction id), {L} (lease id), {G} (consumer group), {D} (DLQ entry id), {T} (trace
// name) and {S} (stream query name) are filled with tenant A's objects, then with objects
// that exist nowhere.
type tenantRouteCase struct {
	path, body string
	// broker marks a route that names no tenant's object (health, metrics, maintenance, jobs,
	// the broker's own figures): it is not compared.
	broker bool
}

// tenantRoutes has a case for every route of httpapi.RouteIndex: a route added without one
// fails TestTenantEveryRouteAnswersAnotherTenantsObjectsAsUnknown.
var tenantRoutes = map[string]tenantRouteCase{
	"GET /health":                         {broker: true},
	"GET /metrics":                        {broker: true},
	"GET /metrics/prometheus":             {broker: true},
	"GET /api/v1/system/health":           {broker: true},
	"GET /api/v1/system/jobs":             {broker: true},
	"GET /api/v1/system/maintenance":      {broker: true},
	"POST /api/v1/system/maintenance":     {broker: true},
	"GET /api/v1/system/maintenance/pop":  {broker: true},
	"POST /api/v1/system/maintenance/pop": {broker: true},
	"POST /api/v1/stats/refresh":          {broker: true},
	"GET /api/v1/auth/me":                 {broker: true},
	// The limits name a tenant, not its objects: a tenant's token reads only its own and sets none.
	"GET /api/v1/system/tenants/:tenant/limits":                                    {broker: true},
	"PUT /api/v1/system/tenants/:tenant/limits":                                    {broker: true},
	"GET /api/v1/analytics/system-metrics":                                         {broker: true},
	"GET /api/v1/analytics/worker-metrics":                                         {broker: true},
	"GET /api/v1/analytics/postgres-stats":                                         {broker: true},
	"GET /api/v1/status/buffers":                                                   {broker: true},
	"GET /api/v1/analytics/queue-lag":                                              {path: "/api/v1/analytics/queue-lag?queue={Q}"},
	"GET /api/v1/analytics/queue-ops":                                              {path: "/api/v1/analytics/queue-ops?queue={Q}"},
	"GET /api/v1/analytics/queue-parked-replicas":                                  {path: "/api/v1/analytics/queue-parked-replicas?queue={Q}"},
	"GET /api/v1/analytics/retention":                                              {path: "/api/v1/analytics/retention?queue={Q}"},
	"POST /api/v1/configure":                                                       {path: "/api/v1/configure", body: `{"queue":"{Q}","options":{"leaseTime":77}}`},
	"POST /api/v1/push":                                                            {path: "/api/v1/push", body: `{"items":[{"queue":"{Q}","partition":"{P}","transactionId":"{K}","payload":1}]}`},
	"GET /api/v1/pop/queue/:queue":                                                 {path: "/api/v1/pop/queue/{Q}?consumerGroup={G}&wait=false"},
	"GET /api/v1/pop/queue/:queue/partition/:partition":                            {path: "/api/v1/pop/queue/{Q}/partition/{P}?consumerGroup={G}&wait=false"},
	"GET /api/v1/pop":                                                              {path: "/api/v1/pop?namespace={Q}&consumerGroup={G}&wait=false"},
	"POST /api/v1/ack":                                                             {path: "/api/v1/ack", body: `{"transactionId":"{K}","partitionId":"{PID}","leaseId":"{L}","consumerGroup":"{G}","status":"completed"}`},
	"POST /api/v1/ack/batch":                                                       {path: "/api/v1/ack/batch", body: `{"acknowledgments":[{"transactionId":"{K}","partitionId":"{PID}","leaseId":"{L}","status":"failed"}],"consumerGroup":"{G}"}`},
	"POST /api/v1/lease/:leaseId/extend":                                           {path: "/api/v1/lease/{L}/extend", body: `{"seconds":60}`},
	"POST /api/v1/transaction":                                                     {path: "/api/v1/transaction", body: `{"operations":[{"type":"ack","transactionId":"{K}","partitionId":"{PID}","consumerGroup":"{G}"}]}`},
	"GET /api/v1/resources/queues":                                                 {path: "/api/v1/resources/queues?search={Q}"},
	"GET /api/v1/resources/queues/:queue":                                          {path: "/api/v1/resources/queues/{Q}"},
	"DELETE /api/v1/resources/queues/:queue":                                       {path: "/api/v1/resources/queues/{Q}"},
	"GET /api/v1/resources/partitions":                                             {path: "/api/v1/resources/partitions?queue={Q}"},
	"GET /api/v1/resources/namespaces":                                             {path: "/api/v1/resources/namespaces?search={Q}"},
	"GET /api/v1/resources/tasks":                                                  {path: "/api/v1/resources/tasks?search={Q}"},
	"GET /api/v1/resources/overview":                                               {broker: true},
	"DELETE /api/v1/queues/:queue/clear":                                           {path: "/api/v1/queues/{Q}/clear"},
	"GET /api/v1/messages":                                                         {path: "/api/v1/messages?queue={Q}"},
	"GET /api/v1/messages/:partitionId/:transactionId":                             {path: "/api/v1/messages/{PID}/{K}"},
	"DELETE /api/v1/messages/:partitionId/:transactionId":                          {path: "/api/v1/messages/{PID}/{K}"},
	"POST /api/v1/messages/:partitionId/:transactionId/dlq":                        {path: "/api/v1/messages/{PID}/{K}/dlq", body: `{"consumerGroup":"{G}"}`},
	"POST /api/v1/messages/:partitionId/:transactionId/retry":                      {path: "/api/v1/messages/{PID}/{K}/retry", body: `{"consumerGroup":"{G}"}`},
	"GET /api/v1/dlq":                                                              {path: "/api/v1/dlq?queue={Q}"},
	"DELETE /api/v1/dlq/:dlqId":                                                    {path: "/api/v1/dlq/{D}"},
	"POST /api/v1/dlq/delete":                                                      {path: "/api/v1/dlq/delete", body: `{"ids":["{D}"]}`},
	"POST /api/v1/dlq/requeue":                                                     {path: "/api/v1/dlq/requeue", body: `{"ids":["{D}"],"mode":"redeliver"}`},
	"POST /api/v1/traces":                                                          {path: "/api/v1/traces", body: `{"transactionId":"{K}","partitionId":"{PID}","data":{"x":1},"traceNames":["{T}"]}`},
	"GET /api/v1/traces/names":                                                     {path: "/api/v1/traces/names?search={T}"},
	"GET /api/v1/traces/by-name/:traceName":                                        {path: "/api/v1/traces/by-name/{T}"},
	"GET /api/v1/traces/:partitionId/:transactionId":                               {path: "/api/v1/traces/{PID}/{K}"},
	"GET /api/v1/consumer-groups":                                                  {path: "/api/v1/consumer-groups?search={G}"},
	"GET /api/v1/consumer-groups/lagging":                                          {path: "/api/v1/consumer-groups/lagging?queue={Q}"},
	"GET /api/v1/consumer-groups/:group":                                           {path: "/api/v1/consumer-groups/{G}"},
	"DELETE /api/v1/consumer-groups/:group":                                        {path: "/api/v1/consumer-groups/{G}"},
	"DELETE /api/v1/consumer-groups/:group/queues/:queue":                          {path: "/api/v1/consumer-groups/{G}/queues/{Q}"},
	"POST /api/v1/consumer-groups/:group/subscription":                             {path: "/api/v1/consumer-groups/{G}/subscription", body: `{"subscriptionTimestamp":"2026-01-01T00:00:00Z"}`},
	"POST /api/v1/consumer-groups/:group/queues/:queue/seek":                       {path: "/api/v1/consumer-groups/{G}/queues/{Q}/seek", body: `{"toEnd":true}`},
	"POST /api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek": {path: "/api/v1/consumer-groups/{G}/queues/{Q}/partitions/{P}/seek", body: `{"toEnd":true}`},
	"GET /api/v1/status":                                                           {path: "/api/v1/status?queue={Q}"},
	"GET /api/v1/status/queues":                                                    {path: "/api/v1/status/queues?search={Q}"},
	"GET /api/v1/status/queues/:queue":                                             {path: "/api/v1/status/queues/{Q}"},
	"GET /api/v1/status/queues/:queue/messages":                                    {path: "/api/v1/status/queues/{Q}/messages"},
	"GET /api/v1/status/analytics":                                                 {path: "/api/v1/status/analytics?queue={Q}"},
	"POST /streams/v1/queries":                                                     {path: "/streams/v1/queries", body: `{"name":"{S}","source_queue":"{Q}","config_hash":"h9"}`},
	"GET /streams/v1/queries":                                                      {path: "/streams/v1/queries"},
	"DELETE /streams/v1/queries/:name":                                             {path: "/streams/v1/queries/{S}"},
	"POST /streams/v1/cycle":                                                       {path: "/streams/v1/cycle", body: `{"query_id":"{SID}","partition_id":"{PID}","state_ops":[{"type":"upsert","key":"k"}]}`},
	"POST /streams/v1/state/get":                                                   {path: "/streams/v1/state/get", body: `{"query_id":"{SID}","partition_id":"{PID}"}`},
}

var (
	tenantUUID = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	// times, and the stats' age in seconds, which can tick between the two requests compared
	tenantTime = regexp.MustCompile(`"\d{4}-\d\d-\d\dT[0-9:.]+Z?"|\d{13}|"statsAge":\d+`)
)

// Every route addressed by tenant B with tenant A's names and ids answers exactly as the same
// request with names and ids that exist nowhere (after the values themselves, minted ids and
// times are masked), and tenant A's state is the same after all of them.
func TestTenantEveryRouteAnswersAnotherTenantsObjectsAsUnknown(t *testing.T) {
	_, a, b := tenantClients(t)
	queue := testQueueName(t)
	vals := map[string]string{"{Q}": queue, "{P}": "p1", "{K}": "k1", "{G}": "g1", "{T}": queue + "-trace", "{S}": queue + "-stream"}
	a.do("POST", "/api/v1/push", obj{"items": []obj{{"queue": queue, "partition": "p1", "transactionId": "k1", "payload": 1},
		{"queue": queue, "partition": "p1", "transactionId": "k2", "payload": 2}}})
	code, body := a.do("GET", "/api/v1/pop/queue/"+queue+"/partition/p1?consumerGroup=g1&batch=1", nil)
	if code != http.StatusOK {
		t.Fatalf("A's pop: %d %s", code, body)
	}
	p := decode[popped](t, body)
	vals["{PID}"], vals["{L}"] = p.PartitionID, p.LeaseID
	if code, body := a.do("POST", "/api/v1/messages/"+p.PartitionID+"/k2/dlq", obj{"consumerGroup": "g1"}); code != http.StatusOK {
		t.Fatalf("A's move to the DLQ: %d %s", code, body)
	}
	code, body = a.do("GET", "/api/v1/dlq?queue="+queue, nil)
	d := decode[struct {
		Messages []struct {
			ID string `json:"id"`
		} `json:"messages"`
	}](t, body)
	if len(d.Messages) != 1 {
		t.Fatalf("A's DLQ: %d %s", code, body)
	}
	vals["{D}"] = d.Messages[0].ID
	a.do("POST", "/api/v1/traces", obj{"transactionId": "k1", "partitionId": p.PartitionID, "data": obj{"a": 1}, "traceNames": []string{vals["{T}"]}})
	code, body = a.do("POST", "/streams/v1/queries", obj{"name": vals["{S}"], "source_queue": queue, "config_hash": "h1"})
	s := decode[struct {
		QueryID string `json:"query_id"`
	}](t, body)
	if s.QueryID == "" {
		t.Fatalf("A's stream query: %d %s", code, body)
	}
	vals["{SID}"] = s.QueryID
	before := tenantState(t, a.tenant)

	missing := map[string]string{"{PID}": "00000000-0000-7000-8000-000000000001", "{L}": "00000000-0000-7000-8000-000000000002",
		"{D}": "00000000-0000-7000-8000-000000000003", "{SID}": "00000000-0000-7000-8000-000000000004"}
	for k, v := range vals {
		if missing[k] == "" {
			missing[k] = "zz-" + v
		}
	}
	fill := func(tmpl string, m map[string]string) string {
		for k, v := range m {
			tmpl = strings.ReplaceAll(tmpl, k, v)
		}
		return tmpl
	}
	mask := func(out []byte, m map[string]string) string {
		s := string(out)
		for _, k := range []string{"{S}", "{T}", "{Q}", "{PID}", "{L}", "{D}", "{SID}", "{K}", "{G}", "{P}"} {
			if m[k] != "" {
				s = strings.ReplaceAll(s, m[k], k)
			}
		}
		return tenantTime.ReplaceAllString(tenantUUID.ReplaceAllString(s, "<id>"), "<t>")
	}
	routes := httpapi.RouteIndex()
	// Reads first, then writes, so that no write of B's changes what a later read of B's sees
	// between its two requests.
	for _, pass := range []bool{false, true} {
		for _, rt := range routes {
			key := rt.Method + " " + rt.Pattern
			c, ok := tenantRoutes[key]
			if !ok {
				t.Errorf("%s: no case in tenantRoutes: say how another tenant's objects address it", key)
				continue
			}
			if c.broker || (rt.Method != http.MethodGet) != pass {
				continue
			}
			var fb, mb any
			if c.body != "" {
				fb, mb = fill(c.body, vals), fill(c.body, missing)
			}
			fcode, fout := b.do(rt.Method, fill(c.path, vals), fb)
			mcode, mout := b.do(rt.Method, fill(c.path, missing), mb)
			if fcode != mcode || mask(fout, vals) != mask(mout, missing) {
				t.Errorf("%s: with A's objects %d %s\nwith unknown ones %d %s", key, fcode, fout, mcode, mout)
			}
		}
	}
	for k := range tenantRoutes {
		found := false
		for _, rt := range routes {
			found = found || rt.Method+" "+rt.Pattern == k
		}
		if !found {
			t.Errorf("tenantRoutes has %s, which no longer exists", k)
		}
	}
	if after := tenantState(t, a.tenant); after != before {
		t.Errorf("B's requests changed A's state:\nbefore %s\nafter  %s", before, after)
	}
}

// tenantState is a fingerprint of what the database holds for tenant: queues and their options,
// messages, consumer rows with cursors and leases, subscriptions, DLQ entries, traces, streams.
func tenantState(t *testing.T, tenant string) string {
	t.Helper()
	var s string
	err := stateDB(t).QueryRow(context.Background(), `SELECT concat_ws(' | ',
		(SELECT string_agg(q.name || ':' || q.lease_time || ':' || q.updated_at, ',' ORDER BY q.name) FROM queue_rows q WHERE q.tenant = $1),
		(SELECT count(*) FROM messages m JOIN partitions p ON p.id = m.partition_id JOIN queue_rows q ON q.id = p.queue_id WHERE q.tenant = $1),
		(SELECT string_agg(c.consumer_group || ':' || c.cursor || ':' || coalesce(c.lease_id::text, '-') || ':' || coalesce(c.lease_expires_at::text, '-'), ','
		        ORDER BY c.partition_id, c.consumer_group) FROM consumers c JOIN queue_rows q ON q.id = c.queue_id WHERE q.tenant = $1),
		(SELECT count(*) FROM subscriptions x JOIN queue_rows q ON q.id = x.queue_id WHERE q.tenant = $1),
		(SELECT count(*) FROM dlq d JOIN queue_rows q ON q.id = d.queue_id WHERE q.tenant = $1),
		(SELECT count(*) FROM traces x JOIN partitions p ON p.id = x.partition_id JOIN queue_rows q ON q.id = p.queue_id WHERE q.tenant = $1),
		(SELECT string_agg(x.name || ':' || x.config_hash, ',') FROM stream_queries x WHERE x.tenant = $1))`, tenant).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
