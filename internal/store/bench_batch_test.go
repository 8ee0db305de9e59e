package store

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queen-go/queen/internal/mq"
)

// The batch-cost benchmarks (docs/api/operations.md §9.4): the database work of one request must grow
// linearly with its items, for any mix of partitions. Each times one call of 10,000 items (or
// a transaction of thousands of operations); the setup (pushes, pops) is not timed. Run them
// one at a time, for instance
//
//	go test -run XXX -bench 'BenchmarkAckBatch10k' -benchtime 3x ./internal/store/
//
// Numbers before and after the set-based ack are in bench/HISTORY.md ("Batch cost").

const batchGroup = "__QUEUE_MODE__"

// dbCPU is a store of one connection on the schema of s, for the timed calls, and a reading of
// that connection's PostgreSQL backend CPU time (user + system, from /proc; ok is false where
// the backend's /proc entry cannot be read). The benchmarks report it per call as
// db-cpu-ms/op next to the wall time, which on a loaded machine mostly measures the others.
func dbCPU(b *testing.B, s *Store) (*Store, func() (time.Duration, bool)) {
	b.Helper()
	one, err := Open(context.Background(), Options{DSN: testDSN, Schema: s.schema, MaxConns: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(one.Close)
	return one, func() (time.Duration, bool) {
		var pid int
		if err := one.pool.QueryRow(context.Background(), "SELECT pg_backend_pid()").Scan(&pid); err != nil {
			b.Fatal(err)
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0, false
		}
		f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		if len(f) < 13 {
			return 0, false
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		return time.Duration(ut+st) * 10 * time.Millisecond, true // USER_HZ = 100
	}
}

// cpuMeter sums the backend CPU of the timed calls of one benchmark.
type cpuMeter struct {
	read  func() (time.Duration, bool)
	start time.Duration
	total time.Duration
	ok    bool
}

func (m *cpuMeter) begin() { m.start, m.ok = m.read() }
func (m *cpuMeter) end() {
	if t, ok := m.read(); ok && m.ok {
		m.total += t - m.start
	}
}

// measure runs fn as the timed part of one iteration, with the database's CPU metered: the
// caller has stopped the timer for its setup, and the timer runs again afterwards.
func (m *cpuMeter) measure(b *testing.B, fn func()) {
	m.begin()
	b.StartTimer()
	fn()
	b.StopTimer()
	m.end()
	b.StartTimer()
}

func (m *cpuMeter) report(b *testing.B) {
	if m.ok {
		b.ReportMetric(float64(m.total.Microseconds())/1000/float64(b.N), "db-cpu-ms/op")
	}
}

// pushSpread pushes n messages to queue, one per partition p0..p(parts-1) round robin, and
// returns them popped under one lease (every partition claimed).
func pushSpread(b testing.TB, s *Store, queue string, n, parts int) ([]mq.Message, string) {
	b.Helper()
	ctx := context.Background()
	rows := make([]PushRow, n)
	for i := range rows {
		// Time-ordered ids, as the broker mints them: random ones would make the push date
		// each id that sorts below its predecessor a millisecond later (docs/design.md), so a
		// 10,000-item partition would reach seconds into the future and a pop would stop at
		// the first message not visible yet.
		id := uuid.Must(uuid.NewV7()).String()
		rows[i] = PushRow{Queue: queue, Partition: fmt.Sprintf("p%d", i%parts), Key: id, ID: id, Payload: []byte(`{"n":1}`)}
	}
	if _, err := s.Push(ctx, rows); err != nil {
		b.Fatal(err)
	}
	lease := uuid.NewString()
	msgs, err := s.Pop(ctx, PopRequest{Queue: queue, Group: batchGroup, Batch: n, Partitions: parts, LeaseID: lease, SubscriptionMode: "all"})
	if err != nil || len(msgs) != n {
		b.Fatalf("pop: %d messages of %d, %v", len(msgs), n, err)
	}
	return msgs, lease
}

// ackAll builds ack items for msgs; status picks each item's status by its index.
func ackAll(msgs []mq.Message, lease string, status func(i int) string) []mq.AckItem {
	acks := make([]mq.AckItem, len(msgs))
	for i, m := range msgs {
		acks[i] = mq.AckItem{PartitionID: m.PartitionID, TransactionID: m.TransactionID, Group: batchGroup,
			Status: status(i), LeaseID: lease}
	}
	return acks
}

func completed(int) string { return "completed" }

// mixedStatus spreads the four statuses over the items.
func mixedStatus(i int) string {
	return [...]string{"completed", "failed", "retry", "dlq"}[i%4]
}

// BenchmarkAckBatch10k: one ack call of 10,000 items, on 10,000 partitions and on one, all
// completed (one partition: the set-based fast path) and with mixed statuses (item by item).
func BenchmarkAckBatch10k(b *testing.B) {
	ctx := context.Background()
	s := migratedSchema(b, "bench_ack_batch")
	timed, read := dbCPU(b, s)
	const n = 10000
	for _, c := range []struct {
		name   string
		parts  int
		status func(int) string
	}{
		{"distinct-partitions", n, completed},
		{"distinct-partitions-mixed", n, mixedStatus},
		{"one-partition", 1, completed},
		{"one-partition-mixed", 1, mixedStatus},
	} {
		b.Run(c.name, func(b *testing.B) {
			round := 0
			cpu := &cpuMeter{read: read}
			defer cpu.report(b)
			for b.Loop() {
				b.StopTimer()
				round++
				msgs, lease := pushSpread(b, s, fmt.Sprintf("ack-%s-%d", c.name, round), n, c.parts)
				acks := ackAll(msgs, lease, c.status)
				var res []mq.AckResult
				var err error
				cpu.measure(b, func() { res, err = timed.Ack(ctx, acks) })
				if err != nil || len(res) != n {
					b.Fatalf("ack: %v, %d results", err, len(res))
				}
				for i, r := range res {
					if !r.Success {
						b.Fatalf("item %d: %+v (%v)", i, r, r.Error)
					}
				}
			}
		})
	}
}

// BenchmarkPush10kDistinctPartitions: one push of 10,000 items on 10,000 partitions, into new
// partitions (created by the call) and into existing ones.
func BenchmarkPush10kDistinctPartitions(b *testing.B) {
	ctx := context.Background()
	s := migratedSchema(b, "bench_push_batch")
	const n = 10000
	rowsFor := func(queue string) []PushRow {
		rows := make([]PushRow, n)
		for i := range rows {
			id := uuid.NewString()
			rows[i] = PushRow{Queue: queue, Partition: fmt.Sprintf("p%d", i), Key: id, ID: id, Payload: []byte(`{"n":1}`)}
		}
		return rows
	}
	b.Run("new-partitions", func(b *testing.B) {
		round := 0
		for b.Loop() {
			b.StopTimer()
			round++
			rows := rowsFor(fmt.Sprintf("push-new-%d", round))
			b.StartTimer()
			if res, err := s.Push(ctx, rows); err != nil || len(res) != n {
				b.Fatalf("push: %v, %d results", err, len(res))
			}
		}
	})
	b.Run("existing-partitions", func(b *testing.B) {
		if _, err := s.Push(ctx, rowsFor("push-existing")); err != nil {
			b.Fatal(err)
		}
		timed, read := dbCPU(b, s)
		cpu := &cpuMeter{read: read}
		defer cpu.report(b)
		for b.Loop() {
			b.StopTimer()
			rows := rowsFor("push-existing")
			var res []mq.PushResult
			var err error
			cpu.measure(b, func() { res, err = timed.Push(ctx, rows) })
			if err != nil || len(res) != n {
				b.Fatalf("push: %v, %d results", err, len(res))
			}
		}
	})
}

// BenchmarkTransactionDistinctPartitions: one transaction of 2,000 pushes and 2,000 acks, each
// on its own partition.
func BenchmarkTransactionDistinctPartitions(b *testing.B) {
	ctx := context.Background()
	s := migratedSchema(b, "bench_txn_batch")
	timed, read := dbCPU(b, s)
	cpu := &cpuMeter{read: read}
	defer cpu.report(b)
	const n = 2000
	round := 0
	for b.Loop() {
		b.StopTimer()
		round++
		msgs, lease := pushSpread(b, s, fmt.Sprintf("txn-in-%d", round), n, n)
		pushes := make([]TxnPush, n)
		acks := make([]TxnAck, n)
		for i := range n {
			id := uuid.NewString()
			pushes[i] = TxnPush{Index: 2 * i, Item: PushRow{Queue: "txn-out", Partition: fmt.Sprintf("p%d", i), Key: id, ID: id, Payload: []byte(`1`)}}
			acks[i] = TxnAck{Index: 2*i + 1, Ack: mq.AckItem{PartitionID: msgs[i].PartitionID, TransactionID: msgs[i].TransactionID,
				Group: batchGroup, Status: "completed", LeaseID: lease}}
		}
		if round == 1 { // the output partitions exist from the second round on; create them untimed
			warm := make([]PushRow, n)
			for i := range warm {
				id := uuid.NewString()
				warm[i] = PushRow{Queue: "txn-out", Partition: fmt.Sprintf("p%d", i), Key: id, ID: id, Payload: []byte(`1`)}
			}
			if _, err := s.Push(ctx, warm); err != nil {
				b.Fatal(err)
			}
		}
		var res []mq.TxnResult
		var err error
		cpu.measure(b, func() { res, err = timed.Transaction(ctx, pushes, acks, nil, nil, "") })
		if err != nil || len(res) != 2*n {
			b.Fatalf("transaction: %v, %d results", err, len(res))
		}
	}
}
