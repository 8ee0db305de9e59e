package broker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

func TestPopGateBoundsConcurrentAttemptsPerKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := callGate{size: 2}
		startPart(t, &g)
		var inside, most atomic.Int32
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				leave, err := g.enter(context.Background(), "q\x00g")
				if err != nil {
					t.Error(err)
					return
				}
				n := inside.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(5 * time.Millisecond) // the bubble's clock: the others arrive meanwhile
				inside.Add(-1)
				leave()
			})
		}
		wg.Wait()
		if most.Load() != 2 {
			t.Fatalf("at most %d attempts ran at once, want 2", most.Load())
		}
		// Another key is not held back by a full one.
		leave1, _ := g.enter(context.Background(), "full")
		leave2, _ := g.enter(context.Background(), "full")
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if _, err := g.enter(ctx, "full"); err == nil {
			t.Fatal("a third attempt entered a gate of two")
		}
		if leave, err := g.enter(context.Background(), "other"); err != nil {
			t.Fatal(err)
		} else {
			leave()
		}
		leave1()
		leave2()
	})
}

// Pops, acks and transactions enter the database through one consume gate: with its only
// slot held, each waits (and gives up with its context) and changes nothing, while a push,
// which has its own bound, goes through; once the slot frees, the same ack completes.
func TestConsumeGateHoldsPopsAcksAndTransactions(t *testing.T) {
	x := newBroker(t, Config{ConsumeCalls: 1, ConsumeWait: time.Hour})
	q := queueName(t)
	x.push(item(q, "", "a", "1"), item(q, "", "b", "2"))
	p := x.pop(mq.PopRequest{Queue: q, Batch: 1})
	if len(p.Messages) != 1 {
		t.Fatalf("pop: %+v", p)
	}
	m := p.Messages[0]
	ack := []mq.AckItem{{PartitionID: m.PartitionID, TransactionID: m.TransactionID, Group: mq.QueueMode,
		Status: "completed", LeaseID: p.LeaseID}}
	leave, err := x.b.consumeGate.enter(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	held := func(what string, call func(ctx context.Context) error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		if err := call(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s at a full consume gate: %v, want it to wait until its context ends", what, err)
		}
	}
	held("ack", func(ctx context.Context) error { _, err := x.b.Ack(ctx, ack); return err })
	held("transaction", func(ctx context.Context) error {
		_, err := x.b.Transaction(ctx, []mq.TxnEntry{{Ack: &ack[0]}, {Push: item(q, "", "c", "3")}}, nil, nil)
		return err
	})
	held("pop", func(ctx context.Context) error {
		_, err := x.b.Pop(ctx, mq.PopRequest{Queue: q, Group: "other", Batch: 10})
		return err
	})
	x.push(item(q, "", "d", "4")) // pushes are not held
	leave()

	res, err := x.b.Ack(context.Background(), ack)
	if err != nil || !res[0].Success || res[0].AlreadyCommitted {
		t.Fatalf("ack after the slot freed: %+v %v (the held ack or transaction must not have applied)", res, err)
	}
	// Nothing of the held transaction was written: the queue holds a, b and d.
	if got := x.pop(mq.PopRequest{Queue: q, Group: "other", Batch: 10}); len(got.Messages) != 3 {
		t.Fatalf("the queue holds %d messages, want 3 (a, b, d)", len(got.Messages))
	}
}

// A slot holder may be stalled on a row lock, using no CPU: a call that has waited ConsumeWait
// goes in beside it instead of waiting for it (or failing at DB_CONNECTION_TIMEOUT). With the
// only slot held for good, a pop, an ack and a transaction all complete.
func TestConsumeGateLetsCallsPastAStalledHolder(t *testing.T) {
	x := newBroker(t, Config{ConsumeCalls: 1, ConsumeWait: 20 * time.Millisecond})
	q := queueName(t)
	x.push(item(q, "", "a", "1"), item(q, "", "b", "2"))
	leave, err := x.b.consumeGate.enter(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer leave()
	p := x.pop(mq.PopRequest{Queue: q, Batch: 1})
	if len(p.Messages) != 1 {
		t.Fatalf("pop beside a stalled holder: %+v", p)
	}
	if r := x.ackOne(p, "", "completed"); !r.Success {
		t.Fatalf("ack beside a stalled holder: %+v", r)
	}
	p = x.pop(mq.PopRequest{Queue: q, Batch: 1})
	m := p.Messages[0]
	out, err := x.b.Transaction(context.Background(), []mq.TxnEntry{{Ack: &mq.AckItem{PartitionID: m.PartitionID,
		TransactionID: m.TransactionID, Group: mq.QueueMode, Status: "completed", LeaseID: p.LeaseID}},
		{Push: item(q, "", "c", "3")}}, nil, nil)
	if err != nil || out.Rollback != "" {
		t.Fatalf("transaction beside a stalled holder: %+v %v", out, err)
	}
}
