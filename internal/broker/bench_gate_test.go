package broker

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkConsumeGate: the cost a pop attempt, ack or transaction pays to pass the consume
// gate, with a free slot and with more callers than slots (GOMAXPROCS × 8 goroutines).
func BenchmarkConsumeGate(b *testing.B) {
	for _, slots := range []int{1, 4, 1024} {
		b.Run(fmt.Sprintf("slots=%d", slots), func(b *testing.B) {
			g := &callGate{size: slots}
			startPart(b, g)
			until := time.Now().Add(time.Hour)
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					leave, err := g.enterUntil(context.Background(), "", until)
					if err != nil {
						b.Error(err)
						return
					}
					leave()
				}
			})
		})
	}
}
