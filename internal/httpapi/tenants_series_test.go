package httpapi_test

// The per-queue series (metrics per minute, stats history, retention history) of two tenants'
// queues of one name stay apart: each tenant's status and analytics routes count its own queue.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/testserver"
)

func TestTenantSeriesOfSameNamedQueuesStayApart(t *testing.T) {
	b := stIsolated(t, testserver.Options{JWTSecret: authSecret, FakeClock: true})
	a := tenantClient{t, b.srv.URL, "Bearer " + tenantToken(t, "team-a", "admin"), "team-a"}
	bb := tenantClient{t, b.srv.URL, "Bearer " + tenantToken(t, "team-b", "admin"), "team-b"}
	const queue, n, m = "orders", 5, 3
	push := func(c tenantClient, count int) {
		t.Helper()
		items := []obj{}
		for i := range count {
			items = append(items, obj{"queue": queue, "payload": obj{"i": i}})
		}
		if code, body := c.do("POST", "/api/v1/push", obj{"items": items}); code != http.StatusCreated {
			t.Fatalf("%s push: %d %s", c.tenant, code, body)
		}
	}
	push(a, n)
	push(bb, m)
	code, body := a.do("GET", fmt.Sprintf("/api/v1/pop/queue/%s?batch=%d&autoAck=true", queue, n), nil)
	var p popped
	if code != http.StatusOK || json.Unmarshal(body, &p) != nil || len(p.Messages) != n {
		t.Fatalf("A pop: %d %s", code, body)
	}
	// Eviction dead-letters B's messages (a background job, which names queues by tenant and
	// name): counted in B's orders, not in A's or the default tenant's.
	if code, body := bb.do("POST", "/api/v1/configure", obj{"queue": queue, "options": obj{"maxWaitTimeSeconds": 30}}); code != http.StatusOK {
		t.Fatalf("B configure: %d %s", code, body)
	}
	b.srv.Clock.Advance(31 * time.Second)
	b.stRun(mq.JobEviction)
	if err := b.srv.Metrics.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ran, err := b.srv.Jobs.RefreshStats(context.Background()); err != nil || !ran {
		t.Fatalf("stats: ran=%v err=%v", ran, err)
	}

	get := func(c tenantClient, path string) obj {
		t.Helper()
		code, body := c.do("GET", path, nil)
		if code != http.StatusOK {
			t.Fatalf("%s GET %s: %d %s", c.tenant, path, code, body)
		}
		var o obj
		if err := json.Unmarshal(body, &o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	sum := func(list any, key string) (n int64) {
		for _, p := range admList(t, list) {
			n += admNum(t, p[key])
		}
		return n
	}
	for _, c := range []struct {
		cl                        tenantClient
		pushed, consumed, evicted int64
	}{{a, n, n, 0}, {bb, m, 0, m}} {
		for _, path := range []string{"/api/v1/status?queue=" + queue, "/api/v1/status"} {
			st := get(c.cl, path)
			if in, pr := sum(st["throughput"], "ingested"), sum(st["throughput"], "processed"); in != c.pushed || pr != c.consumed {
				t.Errorf("%s %s: ingested %d processed %d, want %d and %d", c.cl.tenant, path, in, pr, c.pushed, c.consumed)
			}
			if msgs := st["messages"].(obj); msgs["total"] != float64(c.pushed-c.evicted) || msgs["deadLetter"] != float64(c.evicted) {
				t.Errorf("%s %s: messages %v, want total %d, deadLetter %d", c.cl.tenant, path, msgs, c.pushed-c.evicted, c.evicted)
			}
		}
		an := get(c.cl, "/api/v1/status/analytics?interval=minute&queue="+queue)
		if w := sum(an["dataPoints"], "messages"); w != c.pushed {
			t.Errorf("%s status/analytics: %d written, want %d", c.cl.tenant, w, c.pushed)
		}
		for _, path := range []string{"/api/v1/analytics/queue-ops?queue=" + queue, "/api/v1/analytics/queue-ops"} {
			ops := get(c.cl, path)
			qs := admList(t, ops["queues"])
			if len(qs) != 1 || qs[0]["queue"] != queue {
				t.Fatalf("%s %s: queues %v", c.cl.tenant, path, qs)
			}
			if pu, po := sum(qs[0]["points"], "pushMessages"), sum(qs[0]["points"], "popMessages"); pu != c.pushed || po != c.consumed {
				t.Errorf("%s %s: pushed %d popped %d, want %d and %d", c.cl.tenant, path, pu, po, c.pushed, c.consumed)
			}
			if d := sum(qs[0]["points"], "dlq"); d != c.evicted {
				t.Errorf("%s %s: %d dead-lettered, want %d", c.cl.tenant, path, d, c.evicted)
			}
		}
		lag := get(c.cl, "/api/v1/analytics/queue-lag")
		if qs := admList(t, lag["queues"]); len(qs) != 1 || qs[0]["queue"] != queue {
			t.Errorf("%s queue-lag: queues %v", c.cl.tenant, qs)
		}
	}
}
