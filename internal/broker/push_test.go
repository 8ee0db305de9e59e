package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/testkit"
)

// Push coalescing over the database (coalesce.go): concurrent push requests share database
// calls, yet each request gets the results of its own items, in its order, and each
// partition keeps every request's item order.
func TestPushCoalescesConcurrentRequests(t *testing.T) {
	x := newBroker(t, Config{PushCalls: 1})
	h := holdFirstCall(x)
	q := queueName(t)
	x.push(item(q, "pa", "dup", "0")) // taken before: a later item with this key is a duplicate
	h.arm()
	const requests = 20
	results := make([][]mq.PushResult, requests)
	errs := make([]error, requests)
	keys := func(r int) []string {
		return []string{fmt.Sprintf("r%d-0", r), fmt.Sprintf("r%d-1", r), fmt.Sprintf("r%d-2", r)}
	}
	var wg sync.WaitGroup
	for r := range requests {
		ks := keys(r)
		items := []mq.PushItem{item(q, "pa", ks[0], fmt.Sprint(r)), item(q, "pb", ks[1], fmt.Sprint(r)),
			item(q, "pa", ks[2], fmt.Sprint(r))}
		if r == 7 {
			items[1].TransactionID = "dup"
			items[1].Partition = "pa"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[r], errs[r] = x.b.Push(context.Background(), items, nil)
		}()
	}
	h.waitFor(t, 3*requests)
	wg.Wait()

	if n := h.calls.Load(); n > 2 {
		t.Fatalf("%d concurrent requests took %d database calls; want them coalesced", requests, n)
	}
	ids := map[string]string{} // key -> message id
	for r := range requests {
		if errs[r] != nil {
			t.Fatalf("request %d: %v", r, errs[r])
		}
		ks := keys(r)
		if r == 7 {
			ks[1] = "dup"
		}
		if len(results[r]) != 3 {
			t.Fatalf("request %d: %d results", r, len(results[r]))
		}
		for i, res := range results[r] {
			want := mq.StatusQueued
			if r == 7 && i == 1 {
				want = mq.StatusDuplicate
			}
			if res.Status != want || res.TransactionID != ks[i] || res.Queue != q || res.MessageID == "" {
				t.Fatalf("request %d item %d: %+v, want %s for %s", r, i, res, want, ks[i])
			}
			if res.Status == mq.StatusQueued {
				ids[ks[i]] = res.MessageID
			}
		}
	}

	// Each partition holds every request's items in the request's order, under the ids the
	// results named.
	for _, part := range []string{"pa", "pb"} {
		p := x.pop(mq.PopRequest{Queue: q, Partition: part, Batch: 1000, AutoAck: true})
		pos := map[string]int{}
		for i, m := range p.Messages {
			pos[m.TransactionID] = i
			if m.TransactionID != "dup" && ids[m.TransactionID] != m.ID {
				t.Fatalf("%s: message %s stored as %s, push answered %s", part, m.TransactionID, m.ID, ids[m.TransactionID])
			}
		}
		for r := range requests {
			if part == "pa" && pos[keys(r)[0]] >= pos[keys(r)[2]] {
				t.Fatalf("request %d: its items reversed in partition pa", r)
			}
		}
		if want := map[string]int{"pa": 1 + 2*requests, "pb": requests - 1}[part]; len(p.Messages) != want {
			t.Fatalf("partition %s: %d messages, want %d", part, len(p.Messages), want)
		}
	}
}

// callHold holds the push coalescer's first database call after arm until the items of
// every concurrent request are in it or queued behind it, so they must share calls.
type callHold struct {
	x       *tb
	armed   atomic.Bool
	calls   atomic.Int32 // calls since arm
	inFirst atomic.Int32 // items of the held call
	release chan struct{}
}

// holdFirstCall wraps x's push writer; install it before x pushes anything.
func holdFirstCall(x *tb) *callHold {
	h := &callHold{x: x, release: make(chan struct{})}
	write := x.b.pushes.write
	x.b.pushes.write = func(ctx context.Context, rows []store.PushRow) ([]mq.PushResult, error) {
		if h.armed.Load() && h.calls.Add(1) == 1 {
			h.inFirst.Store(int32(len(rows)))
			<-h.release
		}
		return write(ctx, rows)
	}
	return h
}

func (h *callHold) arm() { h.armed.Store(true) }

// waitFor waits until items items are in the held call or queued behind it, then releases it.
func (h *callHold) waitFor(t *testing.T, items int) {
	t.Helper()
	testkit.Eventually(t, time.Minute, time.Millisecond, func() error {
		queued := 0
		c := h.x.b.pushes
		c.mu.Lock()
		for _, j := range c.pending {
			queued += len(j.items)
		}
		c.mu.Unlock()
		if n := int(h.inFirst.Load()) + queued; n < items {
			return fmt.Errorf("%d of %d items in the held call or queued", n, items)
		}
		return nil
	})
	close(h.release)
}

// A request that fails in a coalesced call fails alone: the others of the call are stored.
func TestPushCoalescedFailureIsolated(t *testing.T) {
	x := newBroker(t, Config{PushCalls: 1})
	h := holdFirstCall(x)
	h.arm()
	q := queueName(t)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for r := range errs {
		payload := fmt.Sprint(r)
		if r == 2 {
			payload = `{"not json`
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[r] = x.b.Push(context.Background(), []mq.PushItem{item(q, "", fmt.Sprint("k", r), payload)}, nil)
		}()
	}
	h.waitFor(t, len(errs))
	wg.Wait()
	for r, err := range errs {
		if (err != nil) != (r == 2) {
			t.Fatalf("request %d: %v; only the malformed request must fail", r, err)
		}
	}
	p := x.pop(mq.PopRequest{Queue: q, Batch: 10, AutoAck: true})
	if len(p.Messages) != 3 {
		t.Fatalf("stored %d messages, want 3", len(p.Messages))
	}
}

// Pop attempts of one group enter the database at most four at a time: with the gate of a
// group full, its pop waits (and gives up with its context) while another group's pop of the
// same queue goes through; once a slot frees, the waiting pop delivers.
func TestPopGateHoldsAttemptsOfOneGroup(t *testing.T) {
	x := newBroker(t, Config{})
	q := queueName(t)
	x.push(item(q, "", "k", "1"))
	req := mq.PopRequest{Queue: q, Group: "g"}
	var leaves []func()
	for range 4 {
		leave, err := x.b.popGate.enter(context.Background(), gateKeyOf(req))
		if err != nil {
			t.Fatal(err)
		}
		leaves = append(leaves, leave)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err := x.b.Pop(ctx, req)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("pop at a full gate: %v, want it to wait until its context ends", err)
	}
	if p := x.pop(mq.PopRequest{Queue: q, Group: "other"}); len(p.Messages) != 1 {
		t.Fatalf("another group's pop: %+v", p)
	}
	done := make(chan popResult, 1)
	go func() {
		res, err := x.b.Pop(context.Background(), req)
		done <- popResult{res, err}
	}()
	leaves[0]()
	select {
	case r := <-done:
		if r.err != nil || len(r.res.Messages) != 1 {
			t.Fatalf("pop after a slot freed: %+v %v", r.res, r.err)
		}
	case <-time.After(wakeBound):
		t.Fatal("pop still waiting after a slot freed")
	}
	for _, leave := range leaves[1:] {
		leave()
	}
}
