package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queen-go/queen/internal/testserver"
)

// Bounded answers (docs/api/operations.md §9.5): every series at most 1,440 points, coarser
// buckets for wider windows, 400 beyond 1,440 days, at most 100 queues per analytics route.
// Windows are given with milliseconds, so "to" is exactly the instant written (an inclusive
// "to" without fractional seconds would cover one more second).

// bdTS renders t as a query timestamp with milliseconds.
func bdTS(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// bdBase is a midnight (UTC) every bucket size divides, so bucket counts are exact.
var bdBase = time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC)

func TestBoundedStatusBucketLadder(t *testing.T) {
	b := stIsolated(t, testserver.Options{})
	day := 24 * time.Hour
	for _, c := range []struct {
		span           time.Duration
		bucket, points int
	}{
		{time.Hour, 1, 61},
		{2 * time.Hour, 1, 121},
		{2*time.Hour + time.Minute, 5, 25},
		{12 * time.Hour, 5, 145},
		{2 * day, 15, 193},
		{7 * day, 60, 169},
		{8 * day, 360, 33},
		{90 * day, 360, 361},
		{91 * day, 1440, 92},
		{1440 * day, 1440, 1440}, // 1,441 day boundaries: the oldest bucket is dropped
	} {
		if c.span > 1440*day {
			continue
		}
		from, to := bdBase, bdBase.Add(c.span)
		out := stGet[obj](b, "/api/v1/status?from="+bdTS(from)+"&to="+bdTS(to), http.StatusOK)
		points := admList(t, out["throughput"])
		if out["bucketMinutes"] != float64(c.bucket) || out["pointCount"] != float64(c.points) || len(points) != c.points {
			t.Errorf("window %v: bucketMinutes %v, pointCount %v, %d points; want %d, %d", c.span,
				out["bucketMinutes"], out["pointCount"], len(points), c.bucket, c.points)
		}
	}
	// 1,440 days plus a millisecond is past the widest rung.
	for _, path := range []string{"/api/v1/status", "/api/v1/analytics/system-metrics", "/api/v1/analytics/worker-metrics",
		"/api/v1/analytics/queue-lag", "/api/v1/analytics/queue-ops", "/api/v1/analytics/queue-parked-replicas",
		"/api/v1/analytics/retention"} {
		admError(b, "GET", path+"?from="+bdTS(bdBase)+"&to="+bdTS(bdBase.Add(1440*day+time.Millisecond)), nil,
			http.StatusBadRequest, `{"error":"Time window too large"}`)
		admError(b, "GET", path+"?from="+bdTS(bdBase.Add(time.Second))+"&to="+bdTS(bdBase), nil,
			http.StatusBadRequest, `{"error":"Invalid time range"}`)
	}
}

func TestBoundedStatusAnalyticsInterval(t *testing.T) {
	b := stIsolated(t, testserver.Options{})
	day := 24 * time.Hour
	for _, c := range []struct {
		interval string
		span     time.Duration
		used     string
		points   int
	}{
		{"minute", time.Hour, "minute", 61},
		{"minute", day, "minute", 1440}, // 1,441 minute boundaries: the oldest is dropped
		{"minute", day + time.Minute, "hour", 25},
		{"hour", 60 * day, "hour", 1440},
		{"minute", 61 * day, "day", 62},
		{"minute", 1400 * day, "day", 1401},
		{"day", 1440 * day, "day", 1440},
	} {
		path := fmt.Sprintf("/api/v1/status/analytics?interval=%s&from=%s&to=%s", c.interval, bdTS(bdBase), bdTS(bdBase.Add(c.span)))
		out := stGet[obj](b, path, http.StatusOK)
		if pts := admList(t, out["dataPoints"]); out["interval"] != c.used || len(pts) != c.points {
			t.Errorf("%s over %v: %v with %d points, want %s with %d", c.interval, c.span, out["interval"], len(pts), c.used, c.points)
		}
	}
	// The measured case: per minute over four years was 108 MiB; now it is refused.
	admError(b, "GET", "/api/v1/status/analytics?interval=minute&from="+bdTS(bdBase)+"&to="+bdTS(bdBase.Add(4*365*day)),
		nil, http.StatusBadRequest, `{"error":"Time window too large"}`)
	admError(b, "GET", "/api/v1/status/analytics?from="+bdTS(bdBase.Add(day))+"&to="+bdTS(bdBase), nil,
		http.StatusBadRequest, `{"error":"Invalid time range"}`)
	// Over 1,400 days the answer is small: 1,401 daily points.
	code, body := b.do("GET", "/api/v1/status/analytics?interval=minute&from="+bdTS(bdBase)+"&to="+bdTS(bdBase.Add(1400*day)), nil)
	if code != http.StatusOK || len(body) > 200<<10 {
		t.Errorf("1,400 days per minute: %d, %d bytes", code, len(body))
	}
}

// bdSchemaExec runs sql in the broker's schema.
func bdSchemaExec(t *testing.T, b *bundle, sql string, args ...any) {
	t.Helper()
	cfg, err := pgx.ParseConfig(testDSN)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = b.srv.Store.Schema()
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func TestBoundedPerQueueAnalytics(t *testing.T) {
	b := stIsolated(t, testserver.Options{})
	// 105 queues with one minute of traffic each: queue bq-i pushed i messages, popped 1,
	// waited i ms at most, and q 0..4 had parked pops.
	minute := bdBase.Add(10 * time.Minute)
	bdSchemaExec(t, b, `INSERT INTO metrics_queue_minute (minute, worker_id, queue, push_requests, push_messages,
	        pop_requests, pop_messages, lag_ms_sum, lag_count, lag_ms_max, parked, updated_at)
	    SELECT $1, 'w', 'bq-' || lpad(i::text, 3, '0'), 1, i, 1, 1, i, 1, i, CASE WHEN i < 5 THEN 1 ELSE 0 END, now()
	    FROM generate_series(0, 104) i`, minute)
	bdSchemaExec(t, b, `INSERT INTO retention_history (run_id, partition_id, kind, queue_id, queue_name, partition_name,
	        removed, unconsumed, dead_lettered, run_at)
	    SELECT gen_random_uuid(), gen_random_uuid(), 'retention', gen_random_uuid(), 'bq-' || lpad(i::text, 3, '0'),
	        'p', i + 1, 0, 0, $1
	    FROM generate_series(0, 104) i`, minute)
	win := "from=" + bdTS(bdBase) + "&to=" + bdTS(bdBase.Add(time.Hour))
	names := func(out obj) []string {
		var ns []string
		for _, q := range admList(t, out["queues"]) {
			ns = append(ns, q["queue"].(string))
		}
		return ns
	}

	ops := stGet[obj](b, "/api/v1/analytics/queue-ops?"+win, http.StatusOK)
	if got := names(ops); len(got) != 10 || got[0] != "bq-095" || got[9] != "bq-104" || ops["omittedQueues"] != 95.0 {
		t.Errorf("queue-ops default: %v, omitted %v", got, ops["omittedQueues"])
	}
	// "other" sums the 95 left out: pushed 0+1+…+94, one pop each.
	other := admList(t, ops["other"])
	if len(other) != 1 || other[0]["pushMessages"] != float64(94*95/2) || other[0]["popMessages"] != 95.0 {
		t.Errorf("queue-ops other %v", other)
	}
	ops = stGet[obj](b, "/api/v1/analytics/queue-ops?limit=5000&"+win, http.StatusOK)
	if got := names(ops); len(got) != 100 || ops["omittedQueues"] != 5.0 || len(admList(t, ops["other"])) != 1 {
		t.Errorf("queue-ops limit 5000: %d queues, omitted %v", len(got), ops["omittedQueues"])
	}
	ops = stGet[obj](b, "/api/v1/analytics/queue-ops?limit=2&"+win, http.StatusOK)
	if got := names(ops); strings.Join(got, ",") != "bq-103,bq-104" || ops["omittedQueues"] != 103.0 {
		t.Errorf("queue-ops limit 2: %v, omitted %v", got, ops["omittedQueues"])
	}
	ops = stGet[obj](b, "/api/v1/analytics/queue-ops?queue=bq-007&"+win, http.StatusOK)
	if got := names(ops); strings.Join(got, ",") != "bq-007" || ops["omittedQueues"] != 0.0 || len(admList(t, ops["other"])) != 0 {
		t.Errorf("queue-ops one queue: %v, omitted %v, other %v", got, ops["omittedQueues"], ops["other"])
	}

	lag := stGet[obj](b, "/api/v1/analytics/queue-lag?limit=3&"+win, http.StatusOK)
	if got := names(lag); strings.Join(got, ",") != "bq-102,bq-103,bq-104" || lag["omittedQueues"] != 102.0 {
		t.Errorf("queue-lag limit 3: %v, omitted %v", got, lag["omittedQueues"])
	}
	parked := stGet[obj](b, "/api/v1/analytics/queue-parked-replicas?limit=3&"+win, http.StatusOK)
	if got := names(parked); strings.Join(got, ",") != "bq-002,bq-003,bq-004" || parked["omittedQueues"] != 2.0 {
		t.Errorf("queue-parked-replicas limit 3: %v, omitted %v", got, parked["omittedQueues"])
	}
	ret := stGet[obj](b, "/api/v1/analytics/retention?limit=1000&"+win, http.StatusOK)
	if runs := admList(t, ret["runs"]); len(runs) != 100 || ret["omittedQueues"] != 5.0 {
		t.Errorf("retention limit 1000: %d runs, omitted %v", len(runs), ret["omittedQueues"])
	}
	if !admEqualJSON(ret["totals"], fmt.Sprintf(`[{"type":"retention","removed":%d,"unconsumed":0,"deadLettered":0}]`, 105*106/2)) {
		t.Errorf("retention totals %v: every queue counts", ret["totals"])
	}

	// /status names at most 100 queues, those that consumed most in the window first.
	bdSchemaExec(t, b, `INSERT INTO queues (id, name, namespace, task) SELECT gen_random_uuid(), 'bq-' || lpad(i::text, 3, '0'), '', '' FROM generate_series(0, 104) i`)
	bdSchemaExec(t, b, `UPDATE metrics_queue_minute SET ack_success = push_messages`)
	st := stGet[obj](b, "/api/v1/status?"+win, http.StatusOK)
	if qs := admList(t, st["queues"]); len(qs) != 100 || qs[0]["name"] != "bq-104" || qs[99]["name"] != "bq-005" {
		t.Errorf("status queues: %d, first %v", len(qs), qs[0]["name"])
	}
}
