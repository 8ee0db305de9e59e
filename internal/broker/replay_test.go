package broker

import (
	"context"
	"fmt"
	"testing"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/spool"
)

// Spooled pushes were accepted when they were spooled, so replay writes them whatever the
// queue's maxSize (docs/api/operations.md §4.2, docs/api/concepts.md §10): a queue at its cap
// takes every replayed record, and an ordinary push after the replay is still refused.
func TestReplayIgnoresMaxSize(t *testing.T) {
	x := newBroker(t, Config{})
	q := queueName(t)
	o := mq.DefaultQueueOptions()
	o.MaxSize = 2
	if _, _, _, _, err := x.b.Configure(context.Background(), q, nil, nil, o); err != nil {
		t.Fatalf("configure: %v", err)
	}
	x.push(item(q, "p", "live-1", `{"n":1}`), item(q, "p", "live-2", `{"n":2}`)) // the queue is full

	recs := make([]spool.Record, 3)
	for i := range recs {
		recs[i] = spool.Record{Queue: q, Partition: "p", MessageID: newID(),
			Key: fmt.Sprintf("spooled-%d", i), Payload: []byte(fmt.Sprintf(`{"s":%d}`, i))}
	}
	dups, err := x.b.Replay(context.Background(), recs)
	if err != nil || dups != 0 {
		t.Fatalf("replay: duplicates %d, err %v", dups, err)
	}
	payloads, _ := storedPayloads(t, q)
	if len(payloads) != 5 {
		t.Fatalf("stored %d messages (%v), want 5: replay must not apply maxSize", len(payloads), payloads)
	}

	// The cap still holds for ordinary pushes (the queue is now above it).
	res, err := x.b.Push(context.Background(), []mq.PushItem{item(q, "p", "live-3", `{"n":3}`)}, nil)
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	if res[0].Status != mq.StatusFailed {
		t.Fatalf("push into the full queue: %+v, want failed (queue full)", res[0])
	}
}
