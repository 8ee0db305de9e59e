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

// recordingWriter answers each item with its key as message id, fails any call that holds
// the key "bad", and records the size of every call.
type recordingWriter struct {
	mu    sync.Mutex
	calls []int
	gate  chan struct{} // when set, calls wait on it, so requests pile up behind a busy flusher
	held  atomic.Int32  // items of the calls waiting on gate
}

func (w *recordingWriter) write(_ context.Context, items []store.PushRow) ([]mq.PushResult, error) {
	if w.gate != nil {
		w.held.Add(int32(len(items)))
		<-w.gate
	}
	w.mu.Lock()
	w.calls = append(w.calls, len(items))
	w.mu.Unlock()
	out := make([]mq.PushResult, len(items))
	for i, it := range items {
		if it.Key == "bad" {
			return nil, errors.New("invalid input syntax for type json")
		}
		out[i] = mq.PushResult{Status: mq.StatusQueued, MessageID: it.Key}
	}
	return out, nil
}

func items(keys ...string) []store.PushRow {
	out := make([]store.PushRow, len(keys))
	for i, k := range keys {
		out[i] = store.PushRow{Key: k}
	}
	return out
}

func TestCoalescerMergesConcurrentRequestsAndSplitsResults(t *testing.T) {
	w := &recordingWriter{gate: make(chan struct{})}
	c := &coalescer{write: w.write, maxItems: 1000, maxInflight: 1, timeout: time.Second}
	startPart(t, c)
	var wg sync.WaitGroup
	results := make([][]mq.PushResult, 20)
	for r := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.submit(context.Background(), items(fmt.Sprintf("r%d-a", r), fmt.Sprintf("r%d-b", r)))
			if err != nil {
				t.Error(err)
			}
			results[r] = res
		}()
	}
	// Let every request queue up behind the first call or join it (a flush that starts late
	// takes several at once), then release the writer.
	testkit.Eventually(t, time.Minute, time.Millisecond, func() error {
		if n := c.queued() + int(w.held.Load())/2; n < 20 {
			return fmt.Errorf("%d of 20 requests queued or in the held call", n)
		}
		return nil
	})
	close(w.gate)
	wg.Wait()
	for r, res := range results {
		if len(res) != 2 || res[0].MessageID != fmt.Sprintf("r%d-a", r) || res[1].MessageID != fmt.Sprintf("r%d-b", r) {
			t.Fatalf("request %d got %+v", r, res)
		}
	}
	if len(w.calls) > 3 {
		t.Fatalf("20 concurrent requests took %d database calls (%v); want them coalesced", len(w.calls), w.calls)
	}
}

func TestCoalescerIsolatesAFailingRequest(t *testing.T) {
	w := &recordingWriter{gate: make(chan struct{})}
	c := &coalescer{write: w.write, maxItems: 1000, maxInflight: 1, timeout: time.Second}
	startPart(t, c)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for r, keys := range [][]string{{"first"}, {"ok-1"}, {"bad"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[r] = c.submit(context.Background(), items(keys...))
		}()
		time.Sleep(10 * time.Millisecond) // arrival order
	}
	close(w.gate)
	wg.Wait()
	if errs[0] != nil || errs[1] != nil || errs[2] == nil {
		t.Fatalf("errors %v: only the bad request must fail", errs)
	}
}

func TestCoalescerRespectsItemBound(t *testing.T) {
	w := &recordingWriter{gate: make(chan struct{})}
	c := &coalescer{write: w.write, maxItems: 3, maxInflight: 1, timeout: time.Second}
	startPart(t, c)
	var wg sync.WaitGroup
	for r := 0; r < 6; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.submit(context.Background(), items("a", "b")); err != nil {
				t.Error(err)
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	close(w.gate)
	wg.Wait()
	for _, n := range w.calls {
		if n > 3 && n != 2 {
			t.Fatalf("call of %d items exceeds the bound: %v", n, w.calls)
		}
	}
}

// queued counts the requests waiting in every lane.
func (c *coalescer) queued() int {
	c.laneFor(nil) // make sure the lanes exist before reading them
	n := 0
	for _, l := range c.lanes {
		l.mu.Lock()
		n += len(l.pending)
		l.mu.Unlock()
	}
	return n
}

func TestCoalescerSpreadsPartitionsOverLanes(t *testing.T) {
	c := &coalescer{maxInflight: 8}
	seen := map[*lane]bool{}
	for p := 0; p < 64; p++ {
		l := c.laneFor([]store.PushRow{{Queue: "q", Partition: fmt.Sprint("p", p)}})
		if c.laneFor([]store.PushRow{{Queue: "q", Partition: fmt.Sprint("p", p)}}) != l {
			t.Fatal("one partition must always map to one lane")
		}
		seen[l] = true
	}
	if len(seen) < 6 {
		t.Fatalf("64 partitions used only %d of 8 lanes", len(seen))
	}
}

// A call that committed but answered with the wrong number of results is never written again
// (that would store its requests twice); every request of it fails instead.
func TestCoalescerNeverRewritesACommittedCall(t *testing.T) {
	var calls atomic.Int32
	gate := make(chan struct{})
	short := func(_ context.Context, items []store.PushRow) ([]mq.PushResult, error) {
		<-gate
		calls.Add(1)
		return make([]mq.PushResult, len(items)-1), nil
	}
	c := &coalescer{write: short, maxItems: 1000, maxInflight: 1, timeout: time.Second}
	startPart(t, c)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for r := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[r] = c.submit(context.Background(), items("a", "b"))
		}()
	}
	time.Sleep(20 * time.Millisecond) // let them queue, alone or together: either way must fail
	close(gate)
	wg.Wait()
	for r, err := range errs {
		if err == nil {
			t.Fatalf("request %d succeeded on a result it cannot have", r)
		}
	}
	if n := calls.Load(); n > 3 {
		t.Fatalf("%d database calls: a committed call was written again", n)
	}
}
