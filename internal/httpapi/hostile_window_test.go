package httpapi_test

import (
	"encoding/json"
	"testing"

	"github.com/queen-go/queen/internal/testserver"
)

// Status and analytics windows are bounded (docs/api/admin-api.md §5.1): a client cannot ask for a
// series of millions of points. Found by probing hostile timestamps: a window of 10,000 years
// was answered in 360-minute buckets.
func TestHostileStatusWindows(t *testing.T) {
	b := setup(t, testserver.Options{})
	const huge = "?from=0000-01-01T00:00:00Z&to=9999-12-31T00:00:00Z"
	const reversed = "?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z"
	var cases []hostileCase
	for _, path := range []string{"/api/v1/status", "/api/v1/status/analytics", "/api/v1/analytics/system-metrics",
		"/api/v1/analytics/worker-metrics", "/api/v1/analytics/queue-lag", "/api/v1/analytics/queue-ops",
		"/api/v1/analytics/queue-parked-replicas", "/api/v1/analytics/retention"} {
		cases = append(cases,
			hostileCase{"huge", "GET", path + huge, nil, 400, hostileErr("Time window too large")},
			hostileCase{"1441 days", "GET", path + "?from=2020-01-01T00:00:00Z&to=2023-12-12T00:00:00Z", nil, 400, hostileErr("Time window too large")},
			hostileCase{"reversed", "GET", path + reversed, nil, 400, hostileErr("Invalid time range")},
			hostileCase{"1440 days", "GET", path + "?from=2020-01-01T00:00:00Z&to=2023-12-10T23:59:59Z", nil, 200, ""},
		)
	}
	runHostile(t, b, cases)
	for _, tc := range []struct {
		query  string
		bucket int
	}{
		{"?from=2026-01-01T00:00:00Z&to=2026-03-31T00:00:00Z", 360},
		{"?from=2026-01-01T00:00:00Z&to=2026-04-02T00:00:00Z", 1440},
		{"?from=2020-01-01T00:00:00Z&to=2023-12-10T23:59:59Z", 1440},
	} {
		var out struct{ BucketMinutes, PointCount int }
		r := b.valDo("GET", "/api/v1/status"+tc.query, nil)
		if r.code != 200 || json.Unmarshal(r.body, &out) != nil || out.BucketMinutes != tc.bucket || out.PointCount > 1440 {
			t.Errorf("%s: %d %.200s, want bucketMinutes %d and at most 1,440 points", tc.query, r.code, r.body, tc.bucket)
		}
	}
	for _, tc := range []struct{ query, interval string }{
		{"?interval=minute&from=2026-01-01T00:00:00Z&to=2026-01-01T23:59:00Z", "minute"},
		{"?interval=minute&from=2026-01-01T00:00:00Z&to=2026-01-03T00:00:00Z", "hour"},
		{"?interval=minute&from=2026-01-01T00:00:00Z&to=2026-12-31T00:00:00Z", "day"},
		{"?interval=hour&from=2026-01-01T00:00:00Z&to=2026-03-31T00:00:00Z", "day"},
	} {
		var out struct {
			Interval   string
			DataPoints []json.RawMessage
		}
		r := b.valDo("GET", "/api/v1/status/analytics"+tc.query, nil)
		if r.code != 200 || json.Unmarshal(r.body, &out) != nil || out.Interval != tc.interval || len(out.DataPoints) > 1441 {
			t.Errorf("%s: %d %.200s, want interval %s and at most 1,441 points", tc.query, r.code, r.body, tc.interval)
		}
	}
}
