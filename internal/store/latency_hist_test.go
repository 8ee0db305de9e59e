package store

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// The latency histograms of an instance's minutes add up on every flush of the same minute and
// over a bucket's minutes, so worker-metrics can answer p50/p95/p99 (docs/api/admin-api.md §6,
// dashboard M13); rows without requests keep zeros, never null.
func TestWorkerSeriesSumsLatencyHistograms(t *testing.T) {
	ctx := context.Background()
	s := migratedSchema(t, "latency_hist")
	in := Instance{WorkerID: "w1", Hostname: "h1", PID: 7}
	at := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	minute := func(m time.Time, pushMs ...float64) WorkerMinute {
		w := WorkerMinute{Minute: m}
		for _, ms := range pushMs {
			w.PushRequests++
			w.PushMsSum += ms
			w.PushMsMax = max(w.PushMsMax, ms)
			w.PushMsHist.Observe(ms)
		}
		return w
	}
	for _, batch := range [][]WorkerMinute{
		{minute(at, 0.5, 3)},
		{minute(at, 0.7), minute(at.Add(time.Minute), 30000)}, // same minute again, and the next one
		{minute(at.Add(2 * time.Minute))},                     // no requests
	} {
		if err := s.FlushMetrics(ctx, in, batch, nil); err != nil {
			t.Fatal(err)
		}
	}

	read := func(bucketMinutes int) []mq.WorkerPoint {
		t.Helper()
		pts, err := s.WorkerSeries(ctx, mq.Window{From: at, To: at.Add(10 * time.Minute), BucketMinutes: bucketMinutes}, "", "w1")
		if err != nil {
			t.Fatal(err)
		}
		return pts
	}
	hist := func(counts map[int]int64) []int64 {
		h := make([]int64, mq.LatencyBuckets)
		for i, n := range counts {
			h[i] = n
		}
		return h
	}
	zero := hist(nil)

	pts := read(1)
	if len(pts) != 3 {
		t.Fatalf("points %+v", pts)
	}
	if want := hist(map[int]int64{0: 2, 2: 1}); !slices.Equal(pts[0].PushHist, want) || pts[0].PushRequests != 3 {
		t.Errorf("minute 1: push %v (%d requests), want %v", pts[0].PushHist, pts[0].PushRequests, want)
	}
	if want := hist(map[int]int64{mq.LatencyBuckets - 1: 1}); !slices.Equal(pts[1].PushHist, want) {
		t.Errorf("minute 2: push %v, want %v", pts[1].PushHist, want)
	}
	for _, p := range pts {
		for _, h := range [][]int64{p.PopHist, p.AckHist, p.TxnHist} {
			if !slices.Equal(h, zero) {
				t.Errorf("%v: unused histogram %v", p.At, h)
			}
		}
	}
	if !slices.Equal(pts[2].PushHist, zero) {
		t.Errorf("minute 3: push %v", pts[2].PushHist)
	}

	pts = read(5)
	if len(pts) != 1 {
		t.Fatalf("5-minute points %+v", pts)
	}
	if want := hist(map[int]int64{0: 2, 2: 1, mq.LatencyBuckets - 1: 1}); !slices.Equal(pts[0].PushHist, want) {
		t.Errorf("5-minute bucket: push %v, want %v", pts[0].PushHist, want)
	}
	if p := mq.LatencyPercentile(pts[0].PushHist, pts[0].PushMsMax, 0.99); p == nil || *p != 30000 {
		t.Errorf("p99 %v", p)
	}

	// A row without the histogram keys (a sender older than migration 0010) counts zeros.
	row, err := json.Marshal(minute(at, 3))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `SELECT qg_metrics_flush(p_worker => 'old', p_hostname => 'h', p_pid => 1,
		p_workers => jsonb_build_array($1::jsonb - 'push_ms_hist' - 'pop_ms_hist' - 'ack_ms_hist' - 'txn_ms_hist'),
		p_queues => '[]', p_now => NULL)`, row); err != nil {
		t.Fatal(err)
	}
	old, err := s.WorkerSeries(ctx, mq.Window{From: at, To: at.Add(time.Minute), BucketMinutes: 1}, "", "old")
	if err != nil || len(old) != 1 || !slices.Equal(old[0].PushHist, zero) || mq.LatencyPercentile(old[0].PushHist, 0, 0.5) != nil {
		t.Errorf("row without histograms: %+v %v", old, err)
	}
}
