package mq

import "testing"

// Percentiles are the upper bound of the bucket holding the rank, the maximum in the overflow
// bucket, and nil without requests (docs/api/admin-api.md §6, dashboard M13).
func TestLatencyPercentileReadsBucketBounds(t *testing.T) {
	var h LatencyHist
	for range 90 {
		h.Observe(0.4) // ≤ 1 ms
	}
	for range 8 {
		h.Observe(5) // a bound belongs to its own bucket
	}
	h.Observe(12000)
	h.Observe(20000) // overflow
	got := func(p float64) any {
		v := LatencyPercentile(h[:], 20000, p)
		if v == nil {
			return nil
		}
		return *v
	}
	for _, c := range []struct {
		p    float64
		want float64
	}{{0.5, 1}, {0.9, 1}, {0.91, 5}, {0.95, 5}, {0.98, 5}, {0.99, 20000}, {1, 20000}} {
		if g := got(c.p); g != c.want {
			t.Errorf("p%v = %v, want %v", c.p*100, g, c.want)
		}
	}
	if h[2] != 8 || h[LatencyBuckets-1] != 2 {
		t.Errorf("histogram %v", h)
	}
	if v := LatencyPercentile(make([]int64, LatencyBuckets), 0, 0.5); v != nil {
		t.Errorf("empty histogram: %v", *v)
	}
	if v := LatencyPercentile(nil, 0, 0.99); v != nil {
		t.Errorf("nil histogram: %v", *v)
	}
}
