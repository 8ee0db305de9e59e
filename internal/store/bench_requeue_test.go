package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/queen-go/queen/internal/mq"
)

// BenchmarkRequeue times the DLQ requeue in redeliver mode of 1,000 entries by filter (one
// call, the most a call takes), and the requeue batch that serves them (one pop of 1,000 and
// its ack): the cost docs/api/operations.md §9.4 asks to be linear in the entries.
func BenchmarkRequeue(b *testing.B) {
	ctx := context.Background()
	s := migratedSchema(b, "bench_requeue")
	const n, group = 1000, "g"
	queue := 0
	for b.Loop() {
		b.StopTimer()
		queue++
		q := fmt.Sprintf("bench-requeue-%d", queue)
		rows := make([]PushRow, n)
		for i := range rows {
			id := uuid.NewString()
			rows[i] = PushRow{Queue: q, Partition: "Default", Key: id, ID: id, Payload: []byte(`{"n":1}`)}
		}
		if _, err := s.Push(ctx, rows); err != nil {
			b.Fatal(err)
		}
		lease := uuid.NewString()
		msgs, err := s.Pop(ctx, PopRequest{Queue: q, Group: group, Batch: n, Partitions: 1, LeaseID: lease, SubscriptionMode: "all"})
		if err != nil || len(msgs) != n {
			b.Fatalf("pop: %d, %v", len(msgs), err)
		}
		acks := make([]mq.AckItem, n)
		for i, m := range msgs {
			acks[i] = mq.AckItem{PartitionID: m.PartitionID, TransactionID: m.TransactionID, Group: group, Status: mq.AckDLQ, LeaseID: lease}
		}
		if _, err := s.Ack(ctx, acks); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()

		res, err := s.RedeliverDLQMatching(ctx, mq.DLQFilter{Queue: q}, n)
		if err != nil || res.Requeued != n {
			b.Fatalf("requeue: %+v %v", res, err)
		}
		lease = uuid.NewString()
		msgs, err = s.Pop(ctx, PopRequest{Queue: q, Group: group, Batch: n, Partitions: 1, LeaseID: lease, SubscriptionMode: "all"})
		if err != nil || len(msgs) != n {
			b.Fatalf("requeue batch: %d, %v", len(msgs), err)
		}
		last := msgs[n-1]
		if r, err := s.Ack(ctx, []mq.AckItem{{PartitionID: last.PartitionID, TransactionID: last.TransactionID, Group: group,
			Status: mq.AckCompleted, LeaseID: lease}}); err != nil || !r[0].Success {
			b.Fatalf("ack: %+v %v", r, err)
		}
	}
}
