package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/testserver"
)

// instanceFamilies are the per-instance families of docs/api/admin-api.md §11.2, present on every scrape.
var instanceFamilies = map[string]dto.MetricType{
	"queen_uptime_seconds":                dto.MetricType_GAUGE,
	"queen_cpu_user_microseconds_total":   dto.MetricType_COUNTER,
	"queen_cpu_system_microseconds_total": dto.MetricType_COUNTER,
	"queen_process_resident_memory_bytes": dto.MetricType_GAUGE,
	"queen_process_virtual_memory_bytes":  dto.MetricType_GAUGE,
	"queen_db_pool_size":                  dto.MetricType_GAUGE,
	"queen_db_pool_idle":                  dto.MetricType_GAUGE,
	"queen_db_pool_active":                dto.MetricType_GAUGE,
	"queen_file_buffer_pending":           dto.MetricType_GAUGE,
	"queen_file_buffer_failed":            dto.MetricType_GAUGE,
	"queen_file_buffer_db_healthy":        dto.MetricType_GAUGE,
	"queen_maintenance_mode_enabled":      dto.MetricType_GAUGE,
	"queen_pop_maintenance_mode_enabled":  dto.MetricType_GAUGE,
	"queen_parked_pops":                   dto.MetricType_GAUGE,
}

// scrape fetches /metrics/prometheus from base and parses the exposition format.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics/prometheus")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %d %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "no-cache" {
		t.Errorf("Cache-Control %q", cc)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse exposition: %v\n%s", err, body)
	}
	for name, typ := range instanceFamilies {
		if mf := mfs[name]; mf == nil || mf.GetType() != typ {
			t.Errorf("family %s missing or not a %v", name, typ)
		}
	}
	return mfs
}

// sample returns the value of the family's sample whose labels include want (name, value, …);
// ok is false when there is none.
func sample(mfs map[string]*dto.MetricFamily, family string, want ...string) (v float64, ok bool) {
	mf := mfs[family]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(want); i += 2 {
			if labels[want[i]] != want[i+1] {
				continue next
			}
		}
		if c := m.GetCounter(); c != nil {
			return c.GetValue(), true
		}
		return m.GetGauge().GetValue(), true
	}
	return 0, false
}

// The cluster families come from the database: after a flush and a stats run they show what
// this (only) instance did, and the per-minute ones show the last full minute.
func TestPrometheusScrape(t *testing.T) {
	b := stIsolated(t, testserver.Options{FakeClock: true})
	b.admPushKeys("p", "a", "b", "c")
	p := b.admPop("p", "", 2)
	m := p.Messages[0]
	if r := b.ack(obj{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": p.LeaseID}); !r.Success {
		t.Fatalf("ack: %+v", r)
	}
	m = p.Messages[1]
	if r := b.ack(obj{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": p.LeaseID,
		"status": "dlq", "error": "poison"}); !r.Success || !r.DLQ {
		t.Fatalf("dlq ack: %+v", r)
	}
	if err := b.srv.Metrics.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	b.stRun(mq.JobStats)
	b.srv.Clock.Advance(time.Minute) // the flushed minute becomes the last full minute

	mfs := scrape(t, b.srv.URL)
	want := []struct {
		family string
		labels []string
		value  float64
		typ    dto.MetricType
	}{
		{"queen_cluster_push_requests_total", []string{"scope", "cluster"}, 1, dto.MetricType_COUNTER},
		{"queen_cluster_push_messages_total", []string{"scope", "cluster"}, 3, dto.MetricType_COUNTER},
		{"queen_cluster_pop_requests_total", []string{"scope", "cluster"}, 1, dto.MetricType_COUNTER},
		{"queen_cluster_pop_messages_total", []string{"scope", "cluster"}, 2, dto.MetricType_COUNTER},
		{"queen_cluster_ack_requests_total", []string{"scope", "cluster"}, 2, dto.MetricType_COUNTER},
		{"queen_cluster_ack_messages_total", []string{"scope", "cluster"}, 2, dto.MetricType_COUNTER},
		{"queen_cluster_ack_total", []string{"scope", "cluster", "result", "success"}, 1, dto.MetricType_COUNTER},
		{"queen_cluster_ack_total", []string{"scope", "cluster", "result", "failed"}, 1, dto.MetricType_COUNTER},
		{"queen_cluster_transactions_total", []string{"scope", "cluster"}, 0, dto.MetricType_COUNTER},
		{"queen_cluster_db_errors_total", []string{"scope", "cluster"}, 0, dto.MetricType_COUNTER},
		{"queen_cluster_dlq_total", []string{"scope", "cluster"}, 1, dto.MetricType_COUNTER},
		{"queen_queue_push_requests_per_minute", []string{"queue", b.queue}, 1, dto.MetricType_GAUGE},
		{"queen_queue_push_messages_per_minute", []string{"queue", b.queue}, 3, dto.MetricType_GAUGE},
		{"queen_queue_pop_messages_per_minute", []string{"queue", b.queue}, 2, dto.MetricType_GAUGE},
		{"queen_queue_pop_empty_per_minute", []string{"queue", b.queue}, 0, dto.MetricType_GAUGE},
		{"queen_queue_transactions_per_minute", []string{"queue", b.queue}, 0, dto.MetricType_GAUGE},
		{"queen_queue_ack_per_minute", []string{"queue", b.queue, "result", "success"}, 1, dto.MetricType_GAUGE},
		{"queen_queue_ack_per_minute", []string{"queue", b.queue, "result", "failed"}, 1, dto.MetricType_GAUGE},
		{"queen_queue_parked_consumers", []string{"queue", b.queue}, 0, dto.MetricType_GAUGE},
		{"queen_worker_requests_per_minute", []string{"worker_id", "test", "op", "push"}, 1, dto.MetricType_GAUGE},
		{"queen_worker_requests_per_minute", []string{"worker_id", "test", "op", "ack"}, 2, dto.MetricType_GAUGE},
		{"queen_worker_messages_per_minute", []string{"worker_id", "test", "op", "pop"}, 2, dto.MetricType_GAUGE},
		{"queen_worker_ack_per_minute", []string{"worker_id", "test", "result", "failed"}, 1, dto.MetricType_GAUGE},
		{"queen_worker_db_errors_per_minute", []string{"worker_id", "test"}, 0, dto.MetricType_GAUGE},
		{"queen_worker_dlq_per_minute", []string{"worker_id", "test"}, 1, dto.MetricType_GAUGE},
		{"queen_dlq_depth", []string{"scope", "cluster"}, 1, dto.MetricType_GAUGE},
		{"queen_dlq_depth_by_queue", []string{"queue", b.queue}, 1, dto.MetricType_GAUGE},
		{"queen_file_buffer_db_healthy", nil, 1, dto.MetricType_GAUGE},
	}
	for _, w := range want {
		got, ok := sample(mfs, w.family, w.labels...)
		if !ok || got != w.value || mfs[w.family].GetType() != w.typ {
			t.Errorf("%s%v = %v (present %v), want %v %v", w.family, w.labels, got, ok, w.value, w.typ)
		}
	}
	for _, f := range []string{"queen_queue_pop_lag_milliseconds", "queen_queue_metrics_age_seconds",
		"queen_worker_db_connections", "queen_worker_metrics_age_seconds"} {
		if _, ok := sample(mfs, f); !ok {
			t.Errorf("family %s missing", f)
		}
	}
	if _, ok := sample(mfs, "queen_queue_pop_lag_milliseconds", "queue", b.queue, "stat", "max"); !ok {
		t.Error("queen_queue_pop_lag_milliseconds{stat=max} missing")
	}
	if mf := mfs["queen_worker_requests_per_minute"]; mf != nil {
		for _, l := range mf.GetMetric()[0].GetLabel() {
			if l.GetName() == "pid" && l.GetValue() == "" {
				t.Error("worker series without a pid")
			}
		}
	}
}

// Without a database the instance families are still served and the cluster ones omitted.
func TestPrometheusScrapeWithoutDatabase(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, refusedDSN, testserver.Options{})
	mfs := scrape(t, srv.URL)
	for name := range mfs {
		if strings.HasPrefix(name, "queen_cluster_") || strings.HasPrefix(name, "queen_queue_") ||
			strings.HasPrefix(name, "queen_worker_") || strings.HasPrefix(name, "queen_dlq_") {
			t.Errorf("cluster family %s served without a database", name)
		}
	}
	if v, _ := sample(mfs, "queen_file_buffer_db_healthy"); v != 0 {
		t.Errorf("queen_file_buffer_db_healthy = %v without a database", v)
	}
}

// GET /metrics has the shape of docs/api/admin-api.md §11.1 and counts this instance's requests and
// written messages.
func TestMetricsJSON(t *testing.T) {
	b := stIsolated(t, testserver.Options{})
	b.admPushKeys("p", "a", "b", "c")
	for range 2 {
		stGet[obj](b, "/health", http.StatusOK)
	}
	out := admShape(t, stGet[obj](b, "/metrics", http.StatusOK), "uptime", "requests", "messages", "database", "memory", "cpu")
	req := admShape(t, out["requests"], "total", "rate")
	if admNum(t, req["total"]) < 4 || req["rate"].(float64) <= 0 {
		t.Errorf("requests %v, want at least the 4 made so far", req)
	}
	if msgs := admShape(t, out["messages"], "total", "rate"); msgs["total"] != 3.0 {
		t.Errorf("messages %v, want total 3", msgs)
	}
	if db := admShape(t, out["database"], "poolSize", "idleConnections", "waitingRequests"); db["poolSize"] != float64(testserver.PoolSize) {
		t.Errorf("database %v, want the test pool size %d", db, testserver.PoolSize)
	}
	mem := admShape(t, out["memory"], "rss", "heapTotal", "heapUsed", "external", "arrayBuffers")
	if mem["heapUsed"].(float64) <= 0 || mem["external"] != 0.0 || mem["arrayBuffers"] != 0.0 {
		t.Errorf("memory %v", mem)
	}
	if cpu := admShape(t, out["cpu"], "user", "system"); cpu["user"].(float64) <= 0 {
		t.Errorf("cpu %v", cpu)
	}
}
