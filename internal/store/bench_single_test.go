package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queen-go/queen/internal/mq"
)

// BenchmarkSingleAck times the single-message ack and the pipeline stage's transaction (one
// completed ack under requiredLeases plus one push) on one connection, with the PostgreSQL
// backend's CPU per call (db-cpu-ms/op; 10 ms ticks, so run a few hundred calls:
// -benchtime 300x). The pop before each call is untimed.
func BenchmarkSingleAck(b *testing.B) {
	ctx := context.Background()
	s, read := dbCPU(b, migratedSchema(b, "bench_single_ack"))
	const group = "__QUEUE_MODE__"
	pop := func(queue string) (mq.Message, string) {
		id := uuid.Must(uuid.NewV7()).String()
		if _, err := s.Push(ctx, []PushRow{{Queue: queue, Partition: "Default", Key: id, ID: id, Payload: []byte(`1`)}}); err != nil {
			b.Fatal(err)
		}
		lease := uuid.NewString()
		msgs, err := s.Pop(ctx, PopRequest{Queue: queue, Group: group, Batch: 1, Partitions: 1, LeaseID: lease, SubscriptionMode: "all"})
		if err != nil || len(msgs) != 1 {
			b.Fatalf("pop: %d messages, %v", len(msgs), err)
		}
		return msgs[0], lease
	}
	b.Run("ack1", func(b *testing.B) {
		m := cpuMeter{read: read}
		for b.Loop() {
			b.StopTimer()
			msg, lease := pop("bench-single-ack")
			items := []mq.AckItem{{PartitionID: msg.PartitionID, TransactionID: msg.TransactionID, Group: group,
				Status: mq.AckCompleted, LeaseID: lease}}
			var res []mq.AckResult
			var err error
			m.measure(b, func() { res, err = s.Ack(ctx, items) })
			if err != nil || !res[0].Success || !res[0].LeaseReleased {
				b.Fatalf("ack: %v %+v", err, res)
			}
		}
		m.report(b)
	})
	// A merged call of n single-message acks of n pairs, as the ack coalescer sends them under
	// load (qg_ack_many); db-cpu-ms/op is per call. Two sizes separate the call's fixed cost
	// from each ack's: cost(n) = fixed + n × per ack.
	for _, n := range []int{2, 16} {
		b.Run(fmt.Sprintf("ackmany%d", n), func(b *testing.B) { benchAckMany(b, s, read, pop, n) })
	}
	b.Run("stage", func(b *testing.B) {
		m := cpuMeter{read: read}
		for b.Loop() {
			b.StopTimer()
			msg, lease := pop("bench-single-in")
			pushes := []TxnPush{{Index: 1, Item: PushRow{Queue: "bench-single-out", Partition: "Default", Key: "next-" + msg.TransactionID,
				ID: uuid.Must(uuid.NewV7()).String(), Payload: []byte(`1`)}}}
			acks := []TxnAck{{Index: 0, Ack: mq.AckItem{PartitionID: msg.PartitionID, TransactionID: msg.TransactionID, Group: group,
				Status: mq.AckCompleted}}}
			var res []mq.TxnResult
			var err error
			m.measure(b, func() { res, err = s.Transaction(ctx, pushes, acks, []string{lease}, nil, "") })
			if err != nil || len(res) != 2 || !res[0].LeaseReleased {
				b.Fatalf("transaction: %v %+v", err, res)
			}
		}
		m.report(b)
	})
}

// benchAckMany is BenchmarkSingleAck's ackmany<n>: pop (untimed) one message of each of n
// queues, then ack them all in one AckMany call of n single-item requests (timed).
func benchAckMany(b *testing.B, s *Store, read func() (time.Duration, bool), pop func(string) (mq.Message, string), n int) {
	ctx := context.Background()
	const group = "__QUEUE_MODE__"
	// One message more than popped in every queue, so that each ack leaves a next message
	// (the work index is updated, not cleared), as under a backlog.
	for i := range n {
		id := uuid.Must(uuid.NewV7()).String()
		if _, err := s.Push(ctx, []PushRow{{Queue: fmt.Sprintf("bench-ack-many-%d", i), Partition: "Default",
			Key: id, ID: id, Payload: []byte(`1`)}}); err != nil {
			b.Fatal(err)
		}
	}
	m := cpuMeter{read: read}
	for b.Loop() {
		b.StopTimer()
		reqs := make([][]mq.AckItem, n)
		for i := range reqs {
			msg, lease := pop(fmt.Sprintf("bench-ack-many-%d", i))
			reqs[i] = []mq.AckItem{{PartitionID: msg.PartitionID, TransactionID: msg.TransactionID, Group: group,
				Status: mq.AckCompleted, LeaseID: lease}}
		}
		var res [][]mq.AckResult
		var err error
		m.measure(b, func() { res, err = s.AckMany(ctx, reqs) })
		if err != nil || len(res) != n {
			b.Fatalf("ack many: %v %+v", err, res)
		}
		for _, r := range res {
			if !r[0].Success || !r[0].LeaseReleased {
				b.Fatalf("ack many: %+v", res)
			}
		}
	}
	m.report(b)
}
