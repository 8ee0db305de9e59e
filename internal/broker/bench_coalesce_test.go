package broker

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
)

// fakeWriter answers every call from a shared result slice after a fixed delay: with no
// delay a coalescer benchmark measures the coalescer's own work (queueing, hand-off,
// splitting), with one it measures how well requests share a slow database call.
type fakeWriter struct {
	delay time.Duration
	calls atomic.Int64
	res   []mq.PushResult
}

func (w *fakeWriter) write(_ context.Context, items []store.PushRow) ([]mq.PushResult, error) {
	w.calls.Add(1)
	if w.delay > 0 {
		time.Sleep(w.delay) // a benchmark's model of a slow database call, not an ordering
	}
	return w.res[:len(items)], nil
}

// BenchmarkCoalescer submits push requests of 1 or 100 items from 25 goroutines per CPU
// (like 50 client connections on this 2-core machine), each for its own partition, or with
// spread=100 each request's items over 100 of 500 partitions, through the broker's bounds.
// ns/op is the cost per request; calls/op is database calls per request, which falls below 1
// only when concurrent requests are coalesced.
func BenchmarkCoalescer(b *testing.B) {
	const maxItems, maxInflight = 1000, 2 // the broker's defaults on this 2-core machine
	for _, n := range []int{1, 100} {
		for _, delay := range []time.Duration{0, time.Millisecond} {
			b.Run(fmt.Sprintf("items=%d/write=%v", n, delay), func(b *testing.B) {
				w := &fakeWriter{delay: delay, res: make([]mq.PushResult, maxItems)}
				c := &coalescer{write: w.write, maxItems: maxItems, maxInflight: maxInflight, timeout: time.Minute}
				startPart(b, c)
				var producers atomic.Int64
				b.ReportAllocs()
				b.SetParallelism(25)
				b.RunParallel(func(pb *testing.PB) {
					// Each goroutine is a producer of its own partition, so requests spread
					// over the coalescer's lanes as distinct partitions do.
					req := make([]store.PushRow, n)
					part := fmt.Sprint("customer-", producers.Add(1))
					for i := range req {
						req[i] = store.PushRow{Queue: "orders", Partition: part}
					}
					for pb.Next() {
						if res, err := c.submit(context.Background(), req); err != nil || len(res) != n {
							b.Errorf("submit: %d results, %v", len(res), err)
							return
						}
					}
				})
				b.ReportMetric(float64(w.calls.Load())/float64(b.N), "calls/op")
			})
		}
	}
}

// BenchmarkCoalescerSpread is BenchmarkCoalescer with every request's 100 items spread over
// 100 of 500 partitions, so concurrent requests always share partitions: the scheduling of
// calls by partition (take, partKeys) is on the path of every request.
func BenchmarkCoalescerSpread(b *testing.B) {
	const maxItems, maxInflight, n = 1000, 2, 100
	for _, delay := range []time.Duration{0, time.Millisecond} {
		b.Run(fmt.Sprintf("items=%d/write=%v", n, delay), func(b *testing.B) {
			w := &fakeWriter{delay: delay, res: make([]mq.PushResult, maxItems)}
			c := &coalescer{write: w.write, maxItems: maxItems, maxInflight: maxInflight, timeout: time.Minute}
			startPart(b, c)
			var producers atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(25)
			b.RunParallel(func(pb *testing.PB) {
				seed := producers.Add(1)
				req := make([]store.PushRow, n)
				for i := range req {
					req[i] = store.PushRow{Queue: "orders", Partition: fmt.Sprint("customer-", (seed*37+int64(i)*5)%500)}
				}
				for pb.Next() {
					if res, err := c.submit(context.Background(), req); err != nil || len(res) != n {
						b.Errorf("submit: %d results, %v", len(res), err)
						return
					}
				}
			})
			b.ReportMetric(float64(w.calls.Load())/float64(b.N), "calls/op")
		})
	}
}

// BenchmarkPartKeys lists the partitions of a request of 100 items: on one partition (the
// usual producer) and spread over 100.
func BenchmarkPartKeys(b *testing.B) {
	for _, spread := range []int{1, 100} {
		req := make([]store.PushRow, 100)
		for i := range req {
			req[i] = store.PushRow{Queue: "orders", Partition: fmt.Sprint("customer-", i%spread)}
		}
		b.Run(fmt.Sprintf("spread=%d", spread), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if len(partKeys("", req)) != spread {
					b.Fatal("wrong partition count")
				}
			}
		})
	}
}
