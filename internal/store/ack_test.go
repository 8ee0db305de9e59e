package store

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/queen-go/queen/internal/mq"
)

// An item without a partition (a NULL in the arrays; the HTTP routes refuse it earlier) is
// "Message not found" even when its key is in the batch that the other items acknowledge:
// the set-based path for whole-batch acks must not let a NULL slip through its checks.
func TestAckItemWithoutPartitionIsNotFound(t *testing.T) {
	ctx := context.Background()
	s := migratedSchema(t, "ack_nulls")
	if _, err := s.Push(ctx, []PushRow{
		{Queue: "acks", Partition: "Default", Key: "k1", ID: uuid.NewString(), Payload: []byte(`1`)},
		{Queue: "acks", Partition: "Default", Key: "k2", ID: uuid.NewString(), Payload: []byte(`2`)},
	}); err != nil {
		t.Fatal(err)
	}
	lease := uuid.NewString()
	msgs, err := s.Pop(ctx, PopRequest{Queue: "acks", Group: "__QUEUE_MODE__", Batch: 2, Partitions: 1, LeaseID: lease, SubscriptionMode: "all"})
	if err != nil || len(msgs) != 2 {
		t.Fatalf("pop: %v, %d messages", err, len(msgs))
	}
	res, err := s.Ack(ctx, []mq.AckItem{
		{PartitionID: msgs[0].PartitionID, TransactionID: "k1", Group: "__QUEUE_MODE__", Status: "completed", LeaseID: lease},
		{TransactionID: "k2", Group: "__QUEUE_MODE__", Status: "completed", LeaseID: lease},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Success || res[1].Success || res[1].Error == nil || *res[1].Error != "Message not found" {
		t.Fatalf("results: %+v, %+v (%v)", res[0], res[1], res[1].Error)
	}
}
