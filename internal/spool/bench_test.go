package spool

import (
	"context"
	"strings"
	"sync"
	"testing"
)

// BenchmarkAppend measures spooling throughput on the test machine's disk, fsync included:
// records/s, and fsyncs per Append (below 1 when group commit shares them).
func BenchmarkAppend(b *testing.B) {
	payload := []byte(`{"order":12345,"note":"` + strings.Repeat("x", 200) + `"}`)
	mk := func(n int) []Record {
		recs := make([]Record, n)
		for i := range recs {
			recs[i] = Record{Queue: "orders", Partition: "p", MessageID: "019a0000-0000-7000-8000-000000000000",
				Key: "019a0000-0000-7000-8000-000000000000", Payload: payload}
		}
		return recs
	}
	run := func(b *testing.B, goroutines, perAppend int) {
		s := openSpool(b, b.TempDir(), Options{})
		recs := mk(perAppend)
		b.ResetTimer()
		var wg sync.WaitGroup
		var next sync.Mutex
		left := b.N
		for range goroutines {
			wg.Go(func() {
				for {
					next.Lock()
					if left == 0 {
						next.Unlock()
						return
					}
					left--
					next.Unlock()
					if err := s.Append(context.Background(), recs); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		b.StopTimer()
		st := s.Stats()
		b.ReportMetric(float64(st.Records)/b.Elapsed().Seconds(), "records/s")
		b.ReportMetric(float64(st.Fsyncs)/float64(st.Appends), "fsyncs/append")
	}
	b.Run("1-record/50-goroutines", func(b *testing.B) { run(b, 50, 1) })
	b.Run("100-records/1-goroutine", func(b *testing.B) { run(b, 1, 100) })
	b.Run("100-records/50-goroutines", func(b *testing.B) { run(b, 50, 100) })
}
