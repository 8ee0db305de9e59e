package httpapi_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/testserver"
)

// The dashboard series (docs/api/admin-api.md §6) show what the instance flushed, per bucket.
func TestAnalyticsRoutes(t *testing.T) {
	b := stIsolated(t, testserver.Options{FakeClock: true})
	b.configure(obj{"retentionEnabled": true, "retentionSeconds": 60})
	b.stSeed()
	if err := b.srv.Metrics.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	b.stRun(mq.JobStats)
	b.srv.Clock.Advance(61 * time.Second)
	b.stRun(mq.JobRetention)

	series := func(route, key string, extra ...string) []obj {
		t.Helper()
		out := admShape(t, stGet[obj](b, "/api/v1/analytics/"+route, http.StatusOK), append([]string{"timeRange", "bucketMinutes", key}, extra...)...)
		admShape(t, out["timeRange"], "from", "to")
		if out["bucketMinutes"] != 1.0 {
			t.Errorf("%s: bucketMinutes %v", route, out["bucketMinutes"])
		}
		return admList(t, out[key])
	}

	workers := series("system-metrics?workerId=test", "workers")
	if len(workers) != 1 || workers[0]["workerId"] != "test" {
		t.Fatalf("system-metrics workers %v", workers)
	}
	pt := admShape(t, admList(t, admShape(t, workers[0], "hostname", "workerId", "pid", "points")["points"])[0],
		"timestamp", "cpuUserPct", "cpuSysPct", "rssMb", "dbPoolSize", "dbPoolActive", "dbPoolIdle",
		"requestsPerSecond", "parkedPops")
	if pt["requestsPerSecond"].(float64) <= 0 {
		t.Errorf("system-metrics point %v", pt)
	}
	if w := series("system-metrics?workerId=other", "workers"); len(w) != 0 {
		t.Errorf("workerId filter: %v", w)
	}

	wp := admShape(t, admList(t, series("worker-metrics", "workers")[0]["points"])[0],
		"timestamp", "push", "pop", "ack", "transaction", "dbErrors", "dlq")
	lat := []string{"avgMs", "maxMs", "p50Ms", "p95Ms", "p99Ms"}
	if !admEqualJSON(admShape(t, wp["push"], append([]string{"requests", "messages"}, lat...)...)["messages"], "4") ||
		!admEqualJSON(admShape(t, wp["ack"], append([]string{"requests", "messages", "success", "failed"}, lat...)...)["failed"], "1") ||
		wp["dlq"] != 1.0 {
		t.Errorf("worker-metrics point %v", wp)
	}
	// M13: percentiles are histogram bucket bounds (or the maximum beyond the last bound), in
	// order, for operations with requests; null without.
	bounds := map[float64]bool{}
	for _, b := range mq.LatencyBoundsMs {
		bounds[b] = true
	}
	for _, op := range []string{"push", "pop", "ack"} {
		o := wp[op].(map[string]any)
		p50, ok50 := o["p50Ms"].(float64)
		p95, ok95 := o["p95Ms"].(float64)
		p99, ok99 := o["p99Ms"].(float64)
		if o["requests"].(float64) == 0 || !ok50 || !ok95 || !ok99 || p50 > p95 || p95 > p99 {
			t.Errorf("worker-metrics %s percentiles %v", op, o)
			continue
		}
		for _, v := range []float64{p50, p95, p99} {
			if !bounds[v] && v != o["maxMs"] {
				t.Errorf("worker-metrics %s: %v is no bucket bound nor maxMs in %v", op, v, o)
			}
		}
	}
	if tx := admShape(t, wp["transaction"], append([]string{"requests"}, lat...)...); tx["requests"] != 0.0 ||
		tx["p50Ms"] != nil || tx["p95Ms"] != nil || tx["p99Ms"] != nil {
		t.Errorf("worker-metrics transaction without requests %v", tx)
	}

	ops := series("queue-ops?queue="+b.queue, "queues", "omittedQueues", "other")
	if len(ops) != 1 || ops[0]["queue"] != b.queue {
		t.Fatalf("queue-ops %v", ops)
	}
	op := admList(t, ops[0]["points"])[0]
	if op["pushMessages"] != 4.0 || op["popMessages"] != 3.0 || op["ackSuccess"] != 1.0 || op["dlq"] != 1.0 {
		t.Errorf("queue-ops point %v", op)
	}

	lag := series("queue-lag?queue="+b.queue, "queues", "omittedQueues")
	if len(lag) != 1 {
		t.Fatalf("queue-lag %v", lag)
	}
	lp := admShape(t, admList(t, lag[0]["points"])[0], "timestamp", "avgPopLagMs", "maxPopLagMs",
		"maxTimeLagSeconds", "pending", "processing")
	if lp["pending"] != 1.0 || lp["processing"] != 1.0 {
		t.Errorf("queue-lag point %v, want the stats run's pending 1 and processing 1", lp)
	}
	if parked := series("queue-parked-replicas", "queues", "omittedQueues"); len(parked) != 0 {
		t.Errorf("queue-parked-replicas %v, nothing was parked", parked)
	}

	ret := admShape(t, stGet[obj](b, "/api/v1/analytics/retention?queue="+b.queue, http.StatusOK), "timeRange", "bucketMinutes", "runs", "totals", "omittedQueues")
	runs := admList(t, ret["runs"])
	if len(runs) != 2 { // p (a and c; b is leased) and p2 (d)
		t.Fatalf("retention runs %v", runs)
	}
	admShape(t, runs[0], "runId", "runAt", "queue", "partition", "type", "removed", "unconsumed", "deadLettered")
	if !admEqualJSON(ret["totals"], `[{"type":"retention","removed":3,"unconsumed":1,"deadLettered":0}]`) {
		t.Errorf("retention totals %v", ret["totals"])
	}

	pg := admShape(t, stGet[obj](b, "/api/v1/analytics/postgres-stats", http.StatusOK), "database", "tables", "horizon")
	db := admShape(t, pg["database"], "name", "sizeBytes", "commits", "rollbacks", "cacheHitRatio", "deadlocks",
		"tempBytes", "connections")
	if db["sizeBytes"].(float64) <= 0 {
		t.Errorf("database %v", db)
	}
	if tables := admField(admList(t, pg["tables"]), "name"); !slices.Contains(tables, "messages") {
		t.Errorf("tables %v lack messages", tables)
	}

	for _, route := range []string{"system-metrics", "worker-metrics", "queue-lag", "queue-ops", "queue-parked-replicas", "retention"} {
		admError(b, "GET", "/api/v1/analytics/"+route+"?from=never", nil, http.StatusBadRequest, `{"error":"Invalid from timestamp"}`)
	}
}
