package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/testkit"
)

// recordingWriter answers each item with its key as message id, fails any call that holds
// the key "bad", and records the size and the keys of every call.
type recordingWriter struct {
	mu    sync.Mutex
	calls []int
	keys  [][]string    // of each call, in call order
	gate  chan struct{} // when set, calls wait on it, so requests pile up behind a busy flusher
	held  atomic.Int32  // items of the calls waiting on gate
}

func (w *recordingWriter) write(_ context.Context, items []store.PushRow) ([]mq.PushResult, error) {
	if w.gate != nil {
		w.held.Add(int32(len(items)))
		<-w.gate
	}
	keys := make([]string, len(items))
	for i, it := range items {
		keys[i] = it.Key
	}
	w.mu.Lock()
	w.calls = append(w.calls, len(items))
	w.keys = append(w.keys, keys)
	w.mu.Unlock()
	out := make([]mq.PushResult, len(items))
	for i, it := range items {
		if it.Key == "bad" {
			// As the store answers a request PostgreSQL refuses: the call is retried alone.
			return nil, &pgconn.PgError{Code: "22P02", Message: "invalid input syntax for type json"}
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

// A bad request that shares a call with good ones fails alone: the call failing as a whole is
// retried request by request. The requests arrive while a first call is in flight, so the
// next call takes the good and the bad one together (checked: else isolation is not tested).
func TestCoalescerIsolatesAFailingRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &recordingWriter{gate: make(chan struct{})}
		c := &coalescer{write: w.write, maxItems: 1000, maxInflight: 1, timeout: time.Second}
		startPart(t, c)
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for r, keys := range [][]string{{"first"}, {"ok-1"}, {"bad"}} {
			wg.Go(func() { _, errs[r] = c.submit(context.Background(), items(keys...)) })
			synctest.Wait() // the first is in the held call, the others queue behind it in order
		}
		if n := c.queued(); n != 2 {
			t.Fatalf("%d requests queued behind the held call, want 2", n)
		}
		close(w.gate)
		wg.Wait()
		if errs[0] != nil || errs[1] != nil || errs[2] == nil {
			t.Fatalf("errors %v: only the bad request must fail", errs)
		}
		shared := slices.ContainsFunc(w.keys, func(k []string) bool {
			return slices.Contains(k, "ok-1") && slices.Contains(k, "bad")
		})
		if !shared {
			t.Fatalf("calls %v: the bad request never shared a call with ok-1, so nothing was isolated", w.keys)
		}
	})
}

func TestCoalescerRespectsItemBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &recordingWriter{gate: make(chan struct{})}
		c := &coalescer{write: w.write, maxItems: 3, maxInflight: 1, timeout: time.Second}
		startPart(t, c)
		var wg sync.WaitGroup
		for range 6 {
			wg.Go(func() {
				if _, err := c.submit(context.Background(), items("a", "b")); err != nil {
					t.Error(err)
				}
			})
		}
		synctest.Wait() // one call held at the gate, the other five queued behind it
		if n := c.queued(); n != 5 {
			t.Fatalf("%d requests queued behind the held call, want 5", n)
		}
		close(w.gate)
		wg.Wait()
		// Two requests of two items exceed the bound of 3: each call takes one request.
		if !slices.Equal(w.calls, []int{2, 2, 2, 2, 2, 2}) {
			t.Fatalf("calls of %v items, want six calls of one request each (bound 3)", w.calls)
		}
	})
}

// queued counts the requests waiting for a call.
func (c *coalescer) queued() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// partItems is a request of one item per named partition of queue "q".
func partItems(parts ...string) []store.PushRow {
	out := make([]store.PushRow, len(parts))
	for i, p := range parts {
		out[i] = store.PushRow{Queue: "q", Partition: p, Key: fmt.Sprint(p, "-", i)}
	}
	return out
}

func pendingJob(parts ...string) *pushJob {
	it := partItems(parts...)
	// no lane: these tests are about partitions (the lane test sets lanes itself)
	return &pushJob{items: it, parts: partKeys("", it), lane: -1, done: make(chan pushDone, 1), waitUntil: time.Now().Add(time.Hour)}
}

// A call takes, in arrival order, every pending request, whatever partitions the calls in
// flight hold (its call waits for their locks in the database), and leaves behind a request
// waiting for its lane every later request naming its partition, so none overtakes it.
func TestCoalescerTakeKeepsOrderPerPartitionBehindALane(t *testing.T) {
	c := &coalescer{maxItems: 1000, maxInflight: 2}
	c.init()
	busy := pendingJob("A")
	busy.lane = c.laneOf(busy.parts)
	c.laneOn[busy.lane] = true // a call of A's lane is in flight
	y, z, w := pendingJob("A"), pendingJob("A", "B"), pendingJob("C", "D")
	y.lane = busy.lane
	c.pending = []*pushJob{y, z, w}
	jobs, lane, more := c.take()
	if len(jobs) != 1 || jobs[0] != w || lane != -1 || !more {
		t.Fatalf("took %d jobs (lane %d, more %v), want w alone (y waits for its lane, z behind y on A)", len(jobs), lane, more)
	}
	if c.queued() != 2 || c.pending[0] != y || c.pending[1] != z {
		t.Fatal("y and z must stay pending, in order")
	}
	c.release(busy.lane)
	jobs, lane, more = c.take()
	if len(jobs) != 2 || jobs[0] != y || jobs[1] != z || lane != busy.lane || more {
		t.Fatalf("after the lane is free took %d jobs (lane %d, more %v), want y then z together", len(jobs), lane, more)
	}
}

// Requests on overlapping partitions share one call, up to the item bound; the next call
// takes the rest at once, though it shares partitions with the first.
func TestCoalescerTakeMergesOverlappingRequests(t *testing.T) {
	c := &coalescer{maxItems: 5, maxInflight: 2}
	c.init()
	a, b, d := pendingJob("A", "B"), pendingJob("B", "C"), pendingJob("C", "D")
	c.pending = []*pushJob{a, b, d}
	jobs, _, more := c.take()
	if len(jobs) != 2 || jobs[0] != a || jobs[1] != b || !more {
		t.Fatalf("took %d jobs (more %v); want a and b (the item bound stops d)", len(jobs), more)
	}
	if jobs, _, more = c.take(); len(jobs) != 1 || jobs[0] != d || more {
		t.Fatalf("second call took %d jobs (more %v), want d beside the first", len(jobs), more)
	}
}

// Calls of requests spread over shared partitions are pipelined: while one is in flight the
// next starts (in the database it would wait for the first's locks), never more than
// maxInflight at once; a partition's requests reach the writer in arrival order (a producer's
// next request on a partition comes after its earlier ones) and every request gets its own
// results. Run with -race: 16 producers, requests over 3 of 40 partitions, every fourth on one.
func TestCoalescerPipelinesCallsOnSharedPartitions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		lastSeq := map[string]int{} // producer and partition: the last request sequence written
		var outOfOrder, overlapped, tooMany atomic.Int32
		held := map[partRef]int{}
		inflight := atomic.Int32{}
		const maxInflight = 3
		write := func(_ context.Context, items []store.PushRow) ([]mq.PushResult, error) {
			if inflight.Add(1) > maxInflight {
				tooMany.Add(1)
			}
			defer inflight.Add(-1)
			parts := partKeys("", items)
			mu.Lock()
			for _, p := range parts {
				if held[p] > 0 {
					overlapped.Add(1)
				}
				held[p]++
			}
			for _, it := range items {
				var g, r, i int
				fmt.Sscanf(it.Key, "%d-%d-%d", &g, &r, &i)
				k := fmt.Sprint(g, "/", it.Partition)
				if last, ok := lastSeq[k]; ok && last > r {
					outOfOrder.Add(1)
				}
				lastSeq[k] = r
			}
			mu.Unlock()
			time.Sleep(time.Millisecond) // the bubble's clock: hold the partitions while other calls run, as a database call does
			mu.Lock()
			for _, p := range parts {
				held[p]--
			}
			mu.Unlock()
			out := make([]mq.PushResult, len(items))
			for i, it := range items {
				out[i] = mq.PushResult{Status: mq.StatusQueued, MessageID: it.Key}
			}
			return out, nil
		}
		c := &coalescer{write: write, maxItems: 20, maxInflight: maxInflight, timeout: time.Minute}
		startPart(t, c)
		var wg sync.WaitGroup
		for g := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := range 30 {
					parts := []string{fmt.Sprint("p", (g*7+r)%40), fmt.Sprint("p", (g*11+r*3+1)%40), fmt.Sprint("p", (g+r*5+2)%40)}
					if r%4 == 0 {
						parts = parts[:1]
					}
					req := partItems(parts...)
					for i := range req {
						req[i].Key = fmt.Sprint(g, "-", r, "-", i)
					}
					res, err := c.submit(context.Background(), req)
					if err != nil || len(res) != len(req) {
						t.Errorf("submit: %d results, %v", len(res), err)
						return
					}
					for i := range res {
						if res[i].MessageID != req[i].Key {
							t.Errorf("request %d/%d item %d got %q", g, r, i, res[i].MessageID)
						}
					}
				}
			}()
		}
		wg.Wait()
		if n := tooMany.Load(); n > 0 {
			t.Fatalf("%d calls ran beyond maxInflight", n)
		}
		if n := outOfOrder.Load(); n > 0 {
			t.Fatalf("%d items reached the writer before an earlier request of their producer on their partition", n)
		}
		if overlapped.Load() == 0 {
			t.Fatal("no call started while another held one of its partitions: the calls were not pipelined")
		}
		t.Logf("%d times a call named a partition of a call in flight", overlapped.Load())
	})
}

// A request on other partitions than the call in flight does not wait for it.
func TestCoalescerRunsDisjointRequestsInParallel(t *testing.T) {
	gate := make(chan struct{})
	var entered atomic.Int32
	write := func(_ context.Context, items []store.PushRow) ([]mq.PushResult, error) {
		entered.Add(1)
		<-gate
		return make([]mq.PushResult, len(items)), nil
	}
	c := &coalescer{write: write, maxItems: 1000, maxInflight: 2, timeout: time.Minute}
	startPart(t, c)
	var wg sync.WaitGroup
	for _, p := range []string{"A", "B"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.submit(context.Background(), partItems(p)); err != nil {
				t.Error(err)
			}
		}()
		testkit.Eventually(t, time.Minute, time.Millisecond, func() error {
			if c.queued() > 0 {
				return errors.New("still queued")
			}
			return nil
		})
	}
	testkit.Eventually(t, time.Minute, time.Millisecond, func() error {
		if n := entered.Load(); n != 2 {
			return fmt.Errorf("%d calls in the database, want 2 (A and B in parallel)", n)
		}
		return nil
	})
	close(gate)
	wg.Wait()
}

// A call that committed but answered with the wrong number of results is never written again
// (that would store its requests twice); every request of it fails instead.
func TestCoalescerNeverRewritesACommittedCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
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
		// The first request alone, held at the gate in its call; only then the other two,
		// queued behind it (submitted together, the flusher could take two into the first call).
		wg.Go(func() { _, errs[0] = c.submit(context.Background(), items("a", "b")) })
		synctest.Wait()
		for r := 1; r < len(errs); r++ {
			wg.Go(func() { _, errs[r] = c.submit(context.Background(), items("a", "b")) })
		}
		synctest.Wait()
		if n := c.queued(); n != 2 {
			t.Fatalf("%d requests queued behind the held call, want 2", n)
		}
		close(gate)
		wg.Wait()
		for r, err := range errs {
			if err == nil {
				t.Fatalf("request %d succeeded on a result it cannot have", r)
			}
		}
		// One call for the first request, one for the two queued together: a call written
		// again (request by request) would make four.
		if n := calls.Load(); n != 2 {
			t.Fatalf("%d database calls for one held call and two queued requests, want 2: a committed call was written again", n)
		}
	})
}

// Requests on one partition each are split by lane, so requests for a few partitions still
// run in parallel calls rather than all joining the first call; a partition's requests keep
// their order.
func TestCoalescerTakeSplitsOnePartitionRequestsByLane(t *testing.T) {
	c := &coalescer{maxItems: 1000, maxInflight: 2}
	c.init()
	var p0, p1 string // partitions of lanes 0 and 1
	for i := 0; p0 == "" || p1 == ""; i++ {
		p := fmt.Sprint("p", i)
		if c.laneOf([]partRef{partKey("", "q", p)}) == 0 {
			p0 = cmp.Or(p0, p)
		} else {
			p1 = cmp.Or(p1, p)
		}
	}
	a, b, a2, b2 := pendingJob(p0), pendingJob(p1), pendingJob(p0), pendingJob(p1)
	for _, j := range []*pushJob{a, b, a2, b2} {
		j.lane = c.laneOf(j.parts)
	}
	c.pending = []*pushJob{a, b, a2, b2}
	first, lane, more := c.take()
	if len(first) != 2 || first[0] != a || first[1] != a2 || lane != 0 || !more {
		t.Fatalf("first call took %d jobs (lane %d, more %v), want a and a2 of lane 0", len(first), lane, more)
	}
	second, lane, more := c.take()
	if len(second) != 2 || second[0] != b || second[1] != b2 || lane != 1 || more {
		t.Fatalf("second call took %d jobs (lane %d, more %v), want b and b2 of lane 1 beside the first", len(second), lane, more)
	}
	// A request of lane 0 arriving now waits for lane 0's call, though its partition is free.
	a3 := pendingJob(p0 + "-other")
	if a3.lane = c.laneOf(a3.parts); a3.lane == 0 {
		c.pending = []*pushJob{a3}
		if third, _, _ := c.take(); third != nil {
			t.Fatal("a second call of lane 0 started beside the first")
		}
	}
}
