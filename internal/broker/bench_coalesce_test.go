package broker

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// instantWriter answers every call at once from a shared result slice, so a coalescer
// benchmark measures the coalescer's own work (queueing, hand-off, splitting) and nothing
// of the database.
type instantWriter struct {
	calls atomic.Int64
	res   []store.PushResult
}

func (w *instantWriter) write(_ context.Context, items []store.PushItem) ([]store.PushResult, error) {
	w.calls.Add(1)
	return w.res[:len(items)], nil
}

// BenchmarkCoalescer is the overhead per push request under concurrency: many handler
// goroutines (8 per CPU, like concurrent connections) submitting through the broker's
// default bounds. calls/op shows how many requests share a database call.
func BenchmarkCoalescer(b *testing.B) {
	const maxItems = 1000
	for _, n := range []int{1, 100} {
		b.Run("items="+strconv.Itoa(n), func(b *testing.B) {
			w := &instantWriter{res: make([]store.PushResult, maxItems)}
			c := &coalescer{write: w.write, maxItems: maxItems, maxInflight: 8, timeout: time.Minute}
			req := make([]store.PushItem, n)
			ctx := context.Background()
			b.ReportAllocs()
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					res, err := c.submit(ctx, req)
					if err != nil || len(res) != n {
						b.Errorf("submit: %d results, %v", len(res), err)
						return
					}
				}
			})
			b.ReportMetric(float64(w.calls.Load())/float64(b.N), "calls/op")
		})
	}
}
