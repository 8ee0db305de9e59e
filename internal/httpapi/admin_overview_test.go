package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/queen-go/queen/internal/testserver"
)

// Namespaces, tasks and the overview (docs/api/admin-api.md §1), and the access level of every admin
// route (docs/api/README.md §3).

func TestAdminNamespacesAndTasks(t *testing.T) {
	b := admSetup(t, testserver.Options{})
	ns, task, second := "ns-"+b.queue, "task-"+b.queue, b.queue+"-2"
	admJSON[obj](b, http.StatusOK, "POST", "/api/v1/configure", obj{"queue": b.queue, "namespace": ns, "task": task})
	admJSON[obj](b, http.StatusOK, "POST", "/api/v1/configure", obj{"queue": second, "namespace": ns, "task": task})
	b.admPushKeys("p1", "a", "b")
	b.admPushKeys("p2", "c")
	b.push("", obj{"queue": second, "payload": 1})
	b.admAckAll(b.admPop("p1", "", 1), "completed", "") // a: consumed, so not pending
	b.lsRefresh()                                       // message counters come from the stats job

	for _, c := range []struct{ path, key, label string }{
		{"/api/v1/resources/namespaces", "namespace", ns},
		{"/api/v1/resources/tasks", "task", task},
	} {
		out := admGet(b, c.path)
		list := admList(t, admShape(t, out, c.key+"s", "total", "pagination")[c.key+"s"])
		mine := admWhere(list, c.key, c.label)
		if len(mine) != 1 {
			t.Fatalf("%s: %d entries for %s", c.path, len(mine), c.label)
		}
		// Queues: both; partitions: two Default (configure), p1, p2; messages: 4 stored, 3 pending.
		if !admEqualJSON(admShape(t, mine[0], c.key, "queues", "partitions", "messages"),
			`{"`+c.key+`":"`+c.label+`","queues":2,"partitions":4,"messages":{"total":4,"pending":3}}`) {
			t.Fatalf("%s: %v", c.path, mine[0])
		}
	}
	// Queues named without a dot have the task "", grouped under "".
	b.push("", obj{"queue": b.queue + "-plain", "payload": 1})
	if none := admWhere(admList(t, admGet(b, "/api/v1/resources/tasks")["tasks"]), "task", ""); len(none) != 1 {
		t.Fatalf("tasks: %d entries for the empty task", len(none))
	}
}

func TestAdminOverview(t *testing.T) {
	b := admSetup(t, testserver.Options{FakeClock: true})
	b.admPushKeys("p", "a", "b", "c")
	b.admPop("p", "", 1)
	b.srv.Clock.Advance(120 * time.Second)
	b.admPushKeys("p", "d", "e", "f") // written within the last minute
	b.lsRefresh()                     // message counters and lag come from the stats job

	o := admGet(b, "/api/v1/resources/overview")
	admShape(t, o, "queues", "partitions", "namespaces", "tasks", "messages", "lag", "throughput", "timestamp", "statsAge")
	admShape(t, o["messages"], admCounterKeys...)
	lag := admShape(t, o["lag"], "time", "offset")
	admShape(t, lag["time"], "avg", "median", "min", "max")
	admShape(t, lag["offset"], "avg", "median", "min", "max")
	tp := admShape(t, o["throughput"], "ingestedPerSecond", "processedPerSecond")
	m := o["messages"].(obj)
	if admNum(t, o["queues"]) < 1 || admNum(t, o["partitions"]) < 1 || admNum(t, o["namespaces"]) < 1 ||
		admNum(t, o["tasks"]) < 1 || admNum(t, m["total"]) < 6 || admNum(t, m["processing"]) < 1 ||
		admNum(t, m["failed"]) != 0 || admNum(t, o["statsAge"]) != 0 {
		t.Fatalf("overview %v", o)
	}
	if admNum(t, m["total"]) != admNum(t, m["pending"])+admNum(t, m["processing"])+admNum(t, m["completed"]) {
		t.Fatalf("total must be pending + processing + completed: %v", m)
	}
	// The counters' and lags' values are tested in internal/store/admin_test.go.
	if tp["ingestedPerSecond"].(float64) < 3.0/60 {
		t.Fatalf("throughput %v, want at least 3 messages in the last minute", tp)
	}
	if ts := admTime(t, o["timestamp"]); time.Since(ts) > time.Minute {
		t.Fatalf("timestamp %v", ts)
	}
}

// admSecret signs the tokens of TestAdminRouteLevels.
const admSecret = "admin-routes-secret"

// Every admin route answers 403 to a role just below its level and lets its level through.
func TestAdminRouteLevels(t *testing.T) {
	b := admSetup(t, testserver.Options{JWTSecret: admSecret})
	token := func(role string) string {
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"role": role,
			"exp": time.Now().Add(time.Hour).Unix()}).SignedString([]byte(admSecret))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	below := map[string]string{"read-only": "guest", "read-write": "read-only", "admin": "read-write"}
	const pid = "/00000000-0000-0000-0000-000000000000/k"
	group := "/api/v1/consumer-groups/g-" + b.queue
	for _, r := range []struct{ method, path, level string }{
		{"GET", "/api/v1/resources/queues", "read-only"},
		{"GET", "/api/v1/resources/queues/" + b.queue, "read-only"},
		{"DELETE", "/api/v1/resources/queues/" + b.queue, "admin"},
		{"GET", "/api/v1/resources/namespaces", "read-only"},
		{"GET", "/api/v1/resources/tasks", "read-only"},
		{"GET", "/api/v1/resources/overview", "read-only"},
		{"GET", "/api/v1/messages", "read-only"},
		{"GET", "/api/v1/messages" + pid, "read-only"},
		{"DELETE", "/api/v1/messages" + pid, "read-write"},
		{"GET", "/api/v1/dlq", "read-only"},
		{"GET", "/api/v1/resources/partitions", "read-only"},
		{"DELETE", "/api/v1/dlq/00000000-0000-0000-0000-000000000000", "read-write"},
		{"POST", "/api/v1/dlq/delete", "read-write"},
		{"DELETE", "/api/v1/queues/" + b.queue + "/clear", "admin"},
		{"POST", "/api/v1/messages" + pid + "/dlq", "read-write"},
		{"POST", "/api/v1/messages" + pid + "/retry", "read-write"},
		{"POST", "/api/v1/dlq/requeue", "read-write"},
		{"POST", "/api/v1/traces", "read-write"},
		{"GET", "/api/v1/traces" + pid, "read-only"},
		{"GET", "/api/v1/traces/by-name/n", "read-only"},
		{"GET", "/api/v1/traces/names", "read-only"},
		{"GET", "/api/v1/consumer-groups", "read-only"},
		{"GET", "/api/v1/consumer-groups/lagging", "read-only"},
		{"GET", group, "read-only"},
		{"DELETE", group, "admin"},
		{"DELETE", group + "/queues/" + b.queue, "admin"},
		{"POST", group + "/subscription", "read-write"},
		{"POST", group + "/queues/" + b.queue + "/seek", "read-write"},
		{"POST", group + "/queues/" + b.queue + "/partitions/p/seek", "read-write"},
	} {
		for _, c := range []struct {
			role   string
			denied bool
		}{{below[r.level], true}, {r.level, false}} {
			req, err := http.NewRequest(r.method, b.srv.URL+r.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+token(c.role))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if denied := resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusUnauthorized; denied != c.denied {
				t.Errorf("%s %s as %q: %d", r.method, r.path, c.role, resp.StatusCode)
			}
		}
	}
}

// Names holding U+0000 cannot exist (PostgreSQL text cannot store it): they name nothing, so
// every admin route answers as for an unknown name instead of failing.
func TestAdminNULNamesMatchNothing(t *testing.T) {
	b := admSetup(t, testserver.Options{})
	const nul = "%00"
	for _, c := range []struct{ method, path, want string }{
		{"GET", "/api/v1/resources/queues/" + nul, `{"error":"Queue not found"}`},
		{"DELETE", "/api/v1/resources/queues/" + nul, `{"deleted":true,"queue":"\u0000","existed":false}`},
		{"GET", "/api/v1/messages?queue=" + nul, `{"messages":[],"mode":{"hasQueueMode":false,"busGroupsCount":0,"type":"none"}}`},
		{"GET", "/api/v1/messages/00000000-0000-0000-0000-000000000000/" + nul, `{"error":"Message not found"}`},
		{"GET", "/api/v1/dlq?consumerGroup=" + nul, `{"messages":[],"total":0,"pagination":{"limit":100,"offset":0}}`},
		{"DELETE", "/api/v1/queues/" + nul + "/clear", `{"error":"Queue not found"}`},
		{"GET", "/api/v1/dlq?error=" + nul, `{"messages":[],"total":0,"pagination":{"limit":100,"offset":0}}`},
		{"GET", "/api/v1/traces/by-name/" + nul, `{"traces":[],"total":0,"pagination":{"limit":100,"offset":0}}`},
		{"GET", "/api/v1/consumer-groups/" + nul, `{"error":"Consumer group not found"}`},
		{"POST", "/api/v1/consumer-groups/g/queues/" + nul + "/partitions/p/seek", `{"success":false,"error":"Partition not found"}`},
	} {
		code, body := b.do(c.method, c.path, nil)
		if code == http.StatusInternalServerError || !admSameJSON(body, []byte(c.want)) {
			t.Errorf("%s %s: %d %s, want %s", c.method, c.path, code, body, c.want)
		}
	}
}
