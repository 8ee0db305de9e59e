package mq

// LatencyBoundsMs are the upper bounds, in milliseconds, of the operation latency histogram
// buckets (docs/api/admin-api.md §6, dashboard M13); one more bucket holds the slower ones.
// A latency equal to a bound falls in that bound's bucket.
var LatencyBoundsMs = [...]float64{1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000}

// LatencyBuckets is the number of histogram buckets: one per bound and the overflow bucket.
const LatencyBuckets = len(LatencyBoundsMs) + 1

// LatencyHist counts latencies per bucket of LatencyBoundsMs.
type LatencyHist [LatencyBuckets]int64

// Observe counts one latency of ms milliseconds.
func (h *LatencyHist) Observe(ms float64) {
	for i, b := range LatencyBoundsMs {
		if ms <= b {
			h[i]++
			return
		}
	}
	h[LatencyBuckets-1]++
}

// LatencyPercentile answers the p-th quantile (0 < p ≤ 1) of the latencies counted in hist
// (a LatencyHist as a slice, as read from the database): the upper bound of the bucket holding
// rank ceil(p × count), or maxMs when that is the overflow bucket (docs/api/admin-api.md §6).
// nil when hist counts nothing, so the answer is null rather than a made-up 0.
func LatencyPercentile(hist []int64, maxMs, p float64) *float64 {
	var total int64
	for _, n := range hist {
		total += n
	}
	if total == 0 {
		return nil
	}
	rank := int64(p * float64(total))
	if float64(rank) < p*float64(total) {
		rank++ // ceil without float rounding surprises for whole ranks
	}
	rank = max(rank, 1)
	var seen int64
	for i, n := range hist {
		seen += n
		if seen >= rank {
			v := maxMs
			if i < len(LatencyBoundsMs) {
				v = LatencyBoundsMs[i]
			}
			return &v
		}
	}
	return &maxMs
}
