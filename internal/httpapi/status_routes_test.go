package httpapi_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/testkit"
	"github.com/queen-go/queen/internal/testserver"
)

// stSeed gives the test queue (on a fake clock) a known state: partition p holds a (consumed), b (in a live
// leased batch) and c (pending); partition p2 holds d, dead-lettered with reason "boom".
func (b *bundle) stSeed() {
	b.t.Helper()
	b.admPushKeys("p", "a", "b", "c")
	b.srv.Clock.Advance(time.Second) // d is the newest message
	b.admPushKeys("p2", "d")
	p := b.admPop("p", "", 2)
	m := p.Messages[0]
	if r := b.ack(obj{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": p.LeaseID}); !r.Success {
		b.t.Fatalf("ack a: %+v", r)
	}
	b.admAckAll(b.admPop("p2", "", 1), "dlq", "") // the error text is "boom d"
}

// stRefresh recomputes the stats through the route and returns its counts.
//
// The package's tests share one schema, so another test's broker may be running the stats job
// at that moment: the route then answers that it skipped (another_instance_running), and the
// refresh is asked again until this broker runs it.
func (b *bundle) stRefresh() map[string]int64 {
	b.t.Helper()
	var out map[string]int64
	testkit.Eventually(b.t, 60*time.Second, 50*time.Millisecond, func() error {
		code, body := b.do("POST", "/api/v1/stats/refresh", nil)
		if code != http.StatusOK {
			b.t.Fatalf("stats refresh: %d %s", code, body)
		}
		if strings.Contains(string(body), `"another_instance_running"`) {
			return fmt.Errorf("another instance is running the stats job")
		}
		out = decode[map[string]int64](b.t, body)
		return nil
	})
	return out
}

func TestStatsRefreshCounts(t *testing.T) {
	b := stIsolated(t, testserver.Options{FakeClock: true})
	b.stSeed()
	want := map[string]int64{"partition": 2, "queue": 1, "namespace": 1, "task": 1, "system": 1, "cleanup": 0}
	if got := b.stRefresh(); !maps.Equal(got, want) {
		t.Fatalf("refresh %v, want %v", got, want)
	}
	code, body := b.do("DELETE", "/api/v1/resources/queues/"+b.queue, nil)
	if code != http.StatusOK {
		t.Fatalf("delete queue: %d %s", code, body)
	}
	// The queue, its namespace and task rows and its two partitions are gone: five stale rows.
	// The consumer lag rows of its (partition, group) pairs went with the queue (the group
	// listings read them, so a deletion must leave them at once).
	want = map[string]int64{"partition": 0, "queue": 0, "namespace": 0, "task": 0, "system": 1, "cleanup": 5}
	if got := b.stRefresh(); !maps.Equal(got, want) {
		t.Fatalf("refresh after deleting the queue %v, want %v", got, want)
	}
}

// While another session holds the stats lock — another instance computing — a refresh is
// skipped, and /health shows this instance standing by.
func TestStatsRefreshSkippedWhileAnotherRuns(t *testing.T) {
	b := stIsolated(t, testserver.Options{})
	led, err := b.srv.Store.TryLead(context.Background(), mq.JobStats, func(*store.Leader) error {
		code, body := b.do("POST", "/api/v1/stats/refresh", nil)
		if code != http.StatusOK || string(body) != `{"reason":"another_instance_running","skipped":true}` {
			t.Errorf("refresh while locked: %d %s", code, body)
		}
		return nil
	})
	if err != nil || !led {
		t.Fatalf("hold the stats lock: led=%v err=%v", led, err)
	}
	health := stGet[struct {
		Jobs map[string]struct {
			State  string `json:"state"`
			Leader bool   `json:"leader"`
			Runs   int64  `json:"runs"`
		} `json:"jobs"`
	}](b, "/health", http.StatusOK)
	if j := health.Jobs[mq.JobStats]; j.State != mq.JobStandby || j.Leader || j.Runs != 0 {
		t.Fatalf("health jobs.stats %+v, want standby", j)
	}
	if got := b.stRefresh(); got["system"] != 1 {
		t.Fatalf("refresh after the lock was released: %v", got)
	}
	if j := stGet[obj](b, "/health", http.StatusOK)["jobs"].(obj)[mq.JobStats].(obj); j["state"] != "idle" ||
		j["leader"] != true || j["runs"] != 1.0 || j["lastRunAt"] == nil {
		t.Fatalf("health jobs.stats after a run: %v", j)
	}
}

func TestStatusQueueRoutes(t *testing.T) {
	b := stIsolated(t, testserver.Options{FakeClock: true})
	b.stSeed()
	b.stRefresh()

	list := admShape(t, stGet[obj](b, "/api/v1/status/queues", http.StatusOK), "queues", "total", "pagination", "statsAge")
	if p := admShape(t, list["pagination"], "limit", "offset"); p["limit"] != 100.0 || p["offset"] != 0.0 {
		t.Errorf("pagination %v", p)
	}
	qs := admList(t, list["queues"])
	if len(qs) != 1 {
		t.Fatalf("queues %v", qs)
	}
	q := admShape(t, qs[0], "id", "name", "namespace", "task", "createdAt", "partitions", "messages", "deadLetter", "maxTimeLag")
	if q["name"] != b.queue || q["partitions"] != 2.0 || list["total"] != 1.0 || !admEqualJSON(q["messages"], `{"total":4,"pending":1,"processing":1}`) {
		t.Errorf("queue summary %v", q)
	}
	if qs := admList(t, stGet[obj](b, "/api/v1/status/queues?namespace=other", http.StatusOK)["queues"]); len(qs) != 0 {
		t.Errorf("namespace filter: %v", qs)
	}

	detail := admShape(t, stGet[obj](b, "/api/v1/status/queues/"+b.queue+"?includePartitions=true", http.StatusOK),
		"queue", "partitions", "partitionCount", "pagination", "totals")
	dq := admShape(t, detail["queue"], "id", "name", "namespace", "task", "priority", "createdAt", "config")
	if !admEqualJSON(dq["config"], `{"leaseTime":300,"retryLimit":3,"retryDelay":1000,"ttl":3600,"maxQueueSize":0,"deadLetterQueue":false}`) {
		t.Errorf("config %v", dq["config"])
	}
	totals := admShape(t, detail["totals"], "messages", "total", "pending", "processing", "completed", "failed", "deadLetter")
	admCounters(t, totals["messages"], [6]int64{4, 1, 1, 2, 0, 1})
	if totals["total"] != 4.0 || totals["completed"] != 2.0 || totals["deadLetter"] != 1.0 {
		t.Errorf("totals %v", totals)
	}
	parts := admList(t, detail["partitions"])
	if names := admField(parts, "name"); !slices.Equal(names, []string{"p", "p2"}) {
		t.Fatalf("partitions %v", names)
	}
	p := admShape(t, parts[0], "id", "name", "createdAt", "messages", "stats", "cursor", "lastActivity",
		"oldestMessage", "newestMessage", "maxTimeLag")
	admCounters(t, p["messages"], [6]int64{3, 1, 1, 1, 0, 0})
	if !admEqualJSON(p["stats"], `{"consumerGroups":1,"activeLeases":1}`) ||
		!admEqualJSON(p["cursor"], `{"totalConsumed":1,"batchesConsumed":0}`) || p["oldestMessage"] == nil {
		t.Errorf("partition p %v", p)
	}
	admCounters(t, parts[1]["messages"], [6]int64{1, 0, 0, 1, 0, 1})

	msgs := stGet[[]obj](b, "/api/v1/status/queues/"+b.queue+"/messages", http.StatusOK)
	var states []string
	for _, m := range msgs {
		admShape(t, m, "id", "transactionId", "partitionId", "queuePath", "queue", "partition", "status", "createdAt")
		states = append(states, m["transactionId"].(string)+":"+m["status"].(string))
	}
	if want := []string{"d:dead_letter", "c:pending", "b:processing", "a:completed"}; !slices.Equal(states, want) {
		t.Errorf("messages %v, want %v", states, want)
	}
	if msgs[0]["queuePath"] != b.queue+"/p2" {
		t.Errorf("queuePath %v", msgs[0]["queuePath"])
	}
	if page := stGet[[]obj](b, "/api/v1/status/queues/"+b.queue+"/messages?limit=1&offset=1", http.StatusOK); len(page) != 1 || page[0]["transactionId"] != "c" {
		t.Errorf("limit=1&offset=1: %v", page)
	}

	admError(b, "GET", "/api/v1/status/queues/nope", nil, http.StatusNotFound, `{"error":"Queue not found"}`)
	admError(b, "GET", "/api/v1/status/queues/nope/messages", nil, http.StatusNotFound, `{"error":"Queue not found"}`)
}

func TestStatusOverview(t *testing.T) {
	b := stIsolated(t, testserver.Options{FakeClock: true})
	b.stSeed()
	b.stRefresh() // also flushes this instance's metrics

	out := admShape(t, stGet[obj](b, "/api/v1/status?queue="+b.queue, http.StatusOK), "timeRange", "bucketMinutes",
		"pointCount", "throughput", "queues", "messages", "leases", "deadLetterQueue", "workers", "errors", "statsAge")
	if out["bucketMinutes"] != 1.0 || out["statsAge"] != 0.0 {
		t.Errorf("bucketMinutes %v statsAge %v", out["bucketMinutes"], out["statsAge"])
	}
	points := admList(t, out["throughput"])
	if len(points) != int(admNum(t, out["pointCount"])) || len(points) < 60 {
		t.Fatalf("%d throughput points, pointCount %v", len(points), out["pointCount"])
	}
	var ingested, popped int64
	for _, p := range points {
		admShape(t, p, "timestamp", "ingested", "processed", "popMessages", "ingestedPerSecond", "processedPerSecond",
			"popPerSecond", "avgLagMs", "maxLagMs", "avgEventLoopLagMs", "maxEventLoopLagMs", "minFreeSlots", "dbErrors",
			"ackFailed", "dlqCount", "queenCpuUserPct", "queenCpuSysPct", "queenRssMb", "dbPoolActive", "dbPoolIdle", "dbPoolSize")
		ingested += admNum(t, p["ingested"])
		popped += admNum(t, p["popMessages"])
	}
	if ingested != 4 || popped != 3 {
		t.Errorf("throughput: ingested %d popped %d, want 4 and 3", ingested, popped)
	}
	msgs := admShape(t, out["messages"], "total", "pending", "processing", "completed", "failed", "deadLetter",
		"requests", "batchEfficiency")
	six := obj{}
	for _, k := range admCounterKeys {
		six[k] = msgs[k]
	}
	admCounters(t, six, [6]int64{4, 1, 1, 2, 0, 1})
	if !admEqualJSON(msgs["requests"], `{"push":2,"pop":2,"ack":2}`) || !admEqualJSON(msgs["batchEfficiency"], `{"push":2,"pop":1.5,"ack":1}`) {
		t.Errorf("requests %v batchEfficiency %v", msgs["requests"], msgs["batchEfficiency"])
	}
	if !admEqualJSON(out["leases"], `{"active":1,"partitionsWithLeases":1,"totalBatchSize":1,"totalAcked":1}`) {
		t.Errorf("leases %v", out["leases"])
	}
	if !admEqualJSON(out["deadLetterQueue"], `{"totalMessages":1,"affectedPartitions":1,"topErrors":[{"error":"boom d","count":1}]}`) {
		t.Errorf("deadLetterQueue %v", out["deadLetterQueue"])
	}
	if !admEqualJSON(out["errors"], `{"dbErrors":0,"ackFailed":1,"dlqMessages":1}`) {
		t.Errorf("errors %v", out["errors"])
	}
	queues := admList(t, out["queues"])
	if len(queues) != 1 || queues[0]["totalConsumed"] != 2.0 || queues[0]["partitions"] != 2.0 {
		t.Errorf("queues %v", queues)
	}
	workers := admList(t, out["workers"])
	if len(workers) != 1 || workers[0]["workerId"] != "test" || workers[0]["pid"] == 0.0 {
		t.Errorf("workers %v", workers)
	}

	other := stGet[obj](b, "/api/v1/status?queue=other", http.StatusOK)
	if m := other["messages"].(obj); m["total"] != 0.0 || m["deadLetter"] != 0.0 {
		t.Errorf("status of an unknown queue: %v", m)
	}
	week := stGet[obj](b, "/api/v1/status?from=2026-01-01T00:00:00Z&to=2026-01-06T00:00:00Z", http.StatusOK)
	if week["bucketMinutes"] != 60.0 || week["pointCount"] != 121.0 {
		t.Errorf("5-day window: bucketMinutes %v pointCount %v", week["bucketMinutes"], week["pointCount"])
	}
	admError(b, "GET", "/api/v1/status?from=yesterday", nil, http.StatusBadRequest, `{"error":"Invalid from timestamp"}`)
}

func TestStatusAnalyticsAndBuffers(t *testing.T) {
	b := stIsolated(t, testserver.Options{FakeClock: true})
	b.stSeed()
	b.stRefresh()

	out := admShape(t, stGet[obj](b, "/api/v1/status/analytics?queue="+b.queue, http.StatusOK),
		"dataPoints", "interval", "from", "to")
	points := admList(t, out["dataPoints"])
	var written int64
	for _, p := range points {
		admShape(t, p, "timestamp", "messages")
		written += admNum(t, p["messages"])
	}
	if out["interval"] != "hour" || len(points) != 25 || written != 4 {
		t.Errorf("analytics: interval %v, %d points, %d messages", out["interval"], len(points), written)
	}
	minute := stGet[obj](b, "/api/v1/status/analytics?interval=minute&namespace=none", http.StatusOK)
	if pts := admList(t, minute["dataPoints"]); len(pts) != 1440 || minute["interval"] != "minute" {
		t.Errorf("minute interval over a day: %d points at %v", len(pts), minute["interval"])
	}
	admError(b, "GET", "/api/v1/status/analytics?interval=week", nil, http.StatusBadRequest, `{"error":"Invalid interval"}`)
	admError(b, "GET", "/api/v1/status/analytics?to=soon", nil, http.StatusBadRequest, `{"error":"Invalid to timestamp"}`)

	if got := stGet[obj](b, "/api/v1/status/buffers", http.StatusOK); !admEqualJSON(got, `{"pending":0,"failed":0,"dbHealthy":true,"worker":"test"}`) {
		t.Errorf("buffers %v", got)
	}
}
