package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/queen-go/queen/internal/mq"
)

// BenchmarkPushCall times one push call of n single-message requests, spread round robin over
// 5 partitions, as the coalescer forms them from single-message producers (push batch 1 × 200
// connections over 10 partitions, two lanes: about 5 partitions per call), and reports the
// PostgreSQL backend CPU per call and per item: a call's fixed cost is what small coalesced
// calls pay per message. The size decides the path (qg_push_items): one item qg_push_one, 2 to
// 99 qg_push_set under generic plans, 100 or more under custom plans. Run with, for instance,
//
//	go test -p 1 -run XXX -bench BenchmarkPushCall -benchtime 200x ./internal/store/
func BenchmarkPushCall(b *testing.B) {
	ctx := context.Background()
	s := migratedSchema(b, "bench_push_call")
	const parts = 5
	for _, n := range []int{1, 10, 40, 99, 100, 400, 1000} {
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			queue := fmt.Sprintf("push-call-%d", n)
			rows := func() []PushRow {
				rows := make([]PushRow, n)
				for i := range rows {
					// Increasing UUIDv7 ids, as the broker mints them (a descent costs a wait).
					id := uuid.Must(uuid.NewV7()).String()
					rows[i] = PushRow{Queue: queue, Partition: fmt.Sprintf("p%d", i%parts), Key: id, ID: id, Payload: []byte(`{"n":1}`)}
				}
				return rows
			}
			timed, read := dbCPU(b, s)
			for range 3 { // create the partitions, compile the functions, fill the id cache
				if _, err := timed.Push(ctx, rows()); err != nil {
					b.Fatal(err)
				}
			}
			cpu := &cpuMeter{read: read}
			for b.Loop() {
				b.StopTimer()
				r := rows()
				var res []mq.PushResult
				var err error
				cpu.measure(b, func() { res, err = timed.Push(ctx, r) })
				if err != nil || len(res) != n {
					b.Fatalf("push: %v, %d results", err, len(res))
				}
			}
			if cpu.ok {
				b.ReportMetric(float64(cpu.total.Microseconds())/float64(b.N), "db-cpu-us/op")
				b.ReportMetric(float64(cpu.total.Microseconds())/float64(b.N*n), "db-cpu-us/item")
			}
		})
	}
}
