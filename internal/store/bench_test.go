package store

import (
	"context"
	"strconv"
	"testing"

	"github.com/google/uuid"
	"github.com/queen-go/queen/internal/mq"
)

// BenchmarkHotPath times one call of each hot-path function against the test database, one
// caller at a time: a push of 10 messages, a pop of them with their ack, and a transaction of
// one push and one ack. It is the before/after check for changes to how they are called.
func BenchmarkHotPath(b *testing.B) {
	ctx := context.Background()
	s := migratedSchema(b, "bench_hot_path")
	const group = "__QUEUE_MODE__"
	push := func(queue string, n int) {
		rows := make([]PushRow, n)
		for i := range rows {
			// Increasing UUIDv7 ids, as the broker mints them (a descent costs a wait: 020_push.sql).
			id := uuid.Must(uuid.NewV7()).String()
			rows[i] = PushRow{Queue: queue, Partition: "Default", Key: id, ID: id, Payload: []byte(`{"n":1}`)}
		}
		if _, err := s.Push(ctx, rows); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("push10", func(b *testing.B) {
		for b.Loop() {
			push("bench-push", 10)
		}
	})
	b.Run("pop10+ack", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			push("bench-pop", 10)
			b.StartTimer()
			lease := uuid.NewString()
			msgs, err := s.Pop(ctx, PopRequest{Queue: "bench-pop", Group: group, Batch: 10, Partitions: 1, LeaseID: lease, SubscriptionMode: "all"})
			if err != nil || len(msgs) != 10 {
				b.Fatalf("pop: %d messages, %v", len(msgs), err)
			}
			acks := make([]mq.AckItem, len(msgs))
			for i, m := range msgs {
				acks[i] = mq.AckItem{PartitionID: m.PartitionID, TransactionID: m.TransactionID, Group: group, Status: "completed", LeaseID: lease}
			}
			if res, err := s.Ack(ctx, acks); err != nil || !res[0].Success {
				b.Fatalf("ack: %v %+v", err, res)
			}
		}
	})
	// The single-message ack (qg_ack_one), its pop untimed.
	b.Run("ack1", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			push("bench-ack1", 1)
			lease := uuid.NewString()
			msgs, err := s.Pop(ctx, PopRequest{Queue: "bench-ack1", Group: group, Batch: 1, Partitions: 1, LeaseID: lease, SubscriptionMode: "all"})
			if err != nil || len(msgs) != 1 {
				b.Fatalf("pop: %d messages, %v", len(msgs), err)
			}
			b.StartTimer()
			ack := mq.AckItem{PartitionID: msgs[0].PartitionID, TransactionID: msgs[0].TransactionID, Group: group, Status: "completed", LeaseID: lease}
			if res, err := s.Ack(ctx, []mq.AckItem{ack}); err != nil || !res[0].Success {
				b.Fatalf("ack: %v %+v", err, res)
			}
		}
	})
	// The single-message cycle of a consumer that takes one message at a time: a pop of one
	// (the inline claim of qg_pop) and its ack.
	b.Run("pop1+ack", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			push("bench-pop1", 1)
			b.StartTimer()
			lease := uuid.NewString()
			msgs, err := s.Pop(ctx, PopRequest{Queue: "bench-pop1", Group: group, Batch: 1, Partitions: 1, LeaseID: lease, SubscriptionMode: "all"})
			if err != nil || len(msgs) != 1 {
				b.Fatalf("pop: %d messages, %v", len(msgs), err)
			}
			ack := mq.AckItem{PartitionID: msgs[0].PartitionID, TransactionID: msgs[0].TransactionID, Group: group, Status: "completed", LeaseID: lease}
			if res, err := s.Ack(ctx, []mq.AckItem{ack}); err != nil || !res[0].Success {
				b.Fatalf("ack: %v %+v", err, res)
			}
		}
	})
	// The pipeline stage's transaction as the Queen clients send it: the popped lease in
	// requiredLeases, none on the ack.
	b.Run("transaction-required", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			push("bench-txnr-in", 1)
			lease := uuid.NewString()
			msgs, err := s.Pop(ctx, PopRequest{Queue: "bench-txnr-in", Group: group, Batch: 1, Partitions: 1, LeaseID: lease, SubscriptionMode: "all"})
			if err != nil || len(msgs) != 1 {
				b.Fatalf("pop: %d messages, %v", len(msgs), err)
			}
			b.StartTimer()
			id := uuid.Must(uuid.NewV7()).String()
			res, err := s.Transaction(ctx,
				[]TxnPush{{Index: 1, Item: PushRow{Queue: "bench-txnr-out", Partition: "Default", Key: id, ID: id, Payload: []byte(`1`)}}},
				[]TxnAck{{Index: 0, Ack: mq.AckItem{PartitionID: msgs[0].PartitionID, TransactionID: msgs[0].TransactionID, Group: group, Status: "completed"}}},
				[]string{lease}, nil, "")
			if err != nil || len(res) != 2 || !res[0].LeaseReleased {
				b.Fatalf("transaction: %v %+v", err, res)
			}
		}
	})
	b.Run("transaction", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			push("bench-txn-in", 1)
			lease := uuid.NewString()
			msgs, err := s.Pop(ctx, PopRequest{Queue: "bench-txn-in", Group: group, Batch: 1, Partitions: 1, LeaseID: lease, SubscriptionMode: "all"})
			if err != nil || len(msgs) != 1 {
				b.Fatalf("pop: %d messages, %v", len(msgs), err)
			}
			b.StartTimer()
			id := uuid.Must(uuid.NewV7()).String()
			res, err := s.Transaction(ctx,
				[]TxnPush{{Index: 0, Item: PushRow{Queue: "bench-txn-out", Partition: "Default", Key: id, ID: id, Payload: []byte(`1`)}}},
				[]TxnAck{{Index: 1, Ack: mq.AckItem{PartitionID: msgs[0].PartitionID, TransactionID: msgs[0].TransactionID, Group: group, Status: "completed", LeaseID: lease}}},
				nil, nil, "")
			if err != nil || len(res) != 2 {
				b.Fatalf("transaction: %v %+v", err, res)
			}
		}
	})
	// A streams cycle (docs/api/streams.md §4) acking one popped message, with one sink push and
	// 1 or 100 state ops.
	for _, ops := range []int{1, 100} {
		b.Run("cycle"+strconv.Itoa(ops), func(b *testing.B) {
			reg, err := s.StreamRegister(ctx, "", mq.StreamRegistration{Name: "bench" + strconv.Itoa(ops), SourceQueue: "bench-cycle-in", ConfigHash: "h"},
				uuid.Must(uuid.NewV7()).String())
			if err != nil {
				b.Fatal(err)
			}
			stateOps := make([]mq.StreamStateOp, ops)
			for i := range stateOps {
				stateOps[i] = mq.StreamStateOp{Key: "k" + strconv.Itoa(i), Value: []byte(`{"acc":{"sum":1},"windowEnd":1}`)}
			}
			for b.Loop() {
				b.StopTimer()
				push("bench-cycle-in", 1)
				lease := uuid.NewString()
				msgs, err := s.Pop(ctx, PopRequest{Queue: "bench-cycle-in", Group: group, Batch: 1, Partitions: 1, LeaseID: lease, SubscriptionMode: "all"})
				if err != nil || len(msgs) != 1 {
					b.Fatalf("pop: %d messages, %v", len(msgs), err)
				}
				b.StartTimer()
				id := uuid.Must(uuid.NewV7()).String()
				out, err := s.StreamCycle(ctx, "", mq.StreamCycle{QueryID: reg.QueryID, PartitionID: msgs[0].PartitionID,
					ConsumerGroup: group, ReleaseLease: true, StateOps: stateOps,
					Ack: &mq.StreamAck{TransactionID: msgs[0].TransactionID, LeaseID: lease}},
					[]PushRow{{Queue: "bench-cycle-out", Partition: "Default", Key: id, ID: id, Payload: []byte(`1`)}}, []string{""}, nil)
				if err != nil || out.Rollback != "" {
					b.Fatalf("cycle: %v %+v", err, out)
				}
			}
		})
	}
}
