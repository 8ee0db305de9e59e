package broker

// Streams through the broker's API (docs/api/streams.md): a cycle's sink items are pushed as a
// push writes them and wake a parked pop of the sink, its ack consumes the source message, a
// repeat rolls back, and the listing and deletion see the state rows.

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/queen-go/queen/internal/mq"
)

func TestStreamCycleThroughTheBroker(t *testing.T) {
	t.Parallel()
	x := newBroker(t, slowPoll)
	ctx := context.Background()
	src, sink := queueName(t), queueName(t)
	x.push(item(src, "p1", "m1", `{"v":1}`))
	name := "bs-" + src
	reg, err := x.b.StreamRegister(ctx, mq.StreamRegistration{Name: name, SourceQueue: src, SinkQueue: sink, ConfigHash: "h"})
	if err != nil || reg.Outcome != mq.StreamFresh {
		t.Fatalf("register: %+v %v", reg, err)
	}
	p := x.pop(mq.PopRequest{Queue: src, Partition: "p1", Batch: 1})
	if len(p.Messages) != 1 {
		t.Fatalf("pop: %+v", p)
	}
	m := p.Messages[0]
	parked := x.parkedPop(mq.PopRequest{Queue: sink, Partition: "out", Batch: 1})
	c := mq.StreamCycle{QueryID: reg.QueryID, PartitionID: m.PartitionID, ConsumerGroup: mq.QueueMode, ReleaseLease: true,
		StateOps:  []mq.StreamStateOp{{Key: "total", Value: json.RawMessage(`1`)}},
		PushItems: []mq.TxnEntry{{Push: item(sink, "out", "r1", `{"sum":1}`)}},
		Ack:       &mq.StreamAck{TransactionID: m.TransactionID, LeaseID: p.LeaseID}}
	out, err := x.b.StreamCycle(ctx, c, nil)
	if err != nil || out.Rollback != "" || out.Ack == nil || out.Ack.Count != 1 || len(out.PushResults) != 1 ||
		out.PushResults[0].Status != mq.StatusQueued || out.PushResults[0].TransactionID != "r1" {
		t.Fatalf("cycle: %+v %v", out, err)
	}
	requireWoken(t, parked, "r1")
	// The source message is consumed: nothing left to pop.
	if left := x.pop(mq.PopRequest{Queue: src, Partition: "p1", Batch: 1}); len(left.Messages) != 0 {
		t.Fatalf("source still delivers %+v", left.Messages)
	}
	again, err := x.b.StreamCycle(ctx, c, nil)
	if err != nil || again.Rollback != "Message already committed" {
		t.Fatalf("repeated cycle: %+v %v", again, err)
	}
	rows, err := x.b.StreamState(ctx, mq.StreamStateQuery{QueryID: reg.QueryID, PartitionID: m.PartitionID})
	if err != nil || len(rows) != 1 || string(rows[0].Value) != "1" {
		t.Fatalf("state: %+v %v", rows, err)
	}
	qs, err := x.b.StreamQueries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, q := range qs {
		if q.Name == name {
			found = q.StateRows == 1 && q.QueryID == reg.QueryID
		}
	}
	if !found {
		t.Fatalf("listing %+v lacks %s with 1 state row", qs, name)
	}
	if existed, n, err := x.b.StreamDelete(ctx, name); err != nil || !existed || n != 1 {
		t.Fatalf("delete: %v %d %v", existed, n, err)
	}
	if _, err := x.b.StreamState(ctx, mq.StreamStateQuery{QueryID: reg.QueryID, PartitionID: m.PartitionID}); err != mq.ErrQueryNotFound {
		t.Fatalf("state after delete: %v", err)
	}
}
