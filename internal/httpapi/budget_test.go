package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testkit"
)

func TestBodyBudgetAcquireRelease(t *testing.T) {
	b := newBodyBudget(100)
	ctx := context.Background()
	if !b.acquire(ctx, 60, 0) || !b.acquire(ctx, 40, 0) {
		t.Fatal("bytes within the capacity were refused")
	}
	if b.acquire(ctx, 1, 0) {
		t.Fatal("a full budget granted a byte without waiting")
	}
	if got := b.inUse(); got != 100 {
		t.Fatalf("inUse %d, want 100", got)
	}
	b.release(60)
	if !b.acquire(ctx, 50, 0) {
		t.Fatal("released bytes were not reusable")
	}
	b.release(50)
	b.release(40)
	if got := b.inUse(); got != 0 {
		t.Fatalf("inUse %d after every release, want 0", got)
	}
	if !b.acquire(ctx, 0, 0) {
		t.Fatal("zero bytes must always be granted")
	}
}

func TestBodyBudgetNeverFits(t *testing.T) {
	b := newBodyBudget(100)
	start := time.Now()
	if b.acquire(context.Background(), 101, time.Minute) {
		t.Fatal("more than the capacity was granted")
	}
	// Nothing could ever make room, so the answer must not wait for the minute.
	if time.Since(start) > 10*time.Second {
		t.Fatal("an impossible acquire waited")
	}
}

func TestBodyBudgetWaitTimesOut(t *testing.T) {
	b := newBodyBudget(100)
	ctx := context.Background()
	b.acquire(ctx, 100, 0)
	if b.acquire(ctx, 1, 20*time.Millisecond) {
		t.Fatal("granted without room")
	}
	// The abandoned waiter must not keep later requests out once room appears.
	b.release(100)
	if !b.acquire(ctx, 100, 0) {
		t.Fatal("a timed-out waiter still holds its place")
	}
}

func TestBodyBudgetWaitIsGranted(t *testing.T) {
	b := newBodyBudget(100)
	ctx := context.Background()
	b.acquire(ctx, 80, 0)
	done := make(chan bool)
	go func() { done <- b.acquire(ctx, 50, time.Minute) }()
	waitFor(t, func() bool { return waiting(b) == 1 })
	b.release(80)
	if !<-done {
		t.Fatal("a waiter was refused although room appeared")
	}
	if got := b.inUse(); got != 50 {
		t.Fatalf("inUse %d, want 50", got)
	}
}

func TestBodyBudgetWaitEndsWithContext(t *testing.T) {
	b := newBodyBudget(10)
	b.acquire(context.Background(), 10, 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool)
	go func() { done <- b.acquire(ctx, 5, time.Minute) }()
	waitFor(t, func() bool { return waiting(b) == 1 })
	cancel()
	if <-done {
		t.Fatal("granted after the request ended")
	}
	if waiting(b) != 0 || b.inUse() != 10 {
		t.Fatalf("waiters %d, inUse %d after the cancelled wait", waiting(b), b.inUse())
	}
}

// An acquire that fits never waits behind one that does not: a body holding most of the room
// must be able to take its last small step, or both would wait out their time and fail. A
// release serves the oldest waiter that fits first.
func TestBodyBudgetFitsGoFirst(t *testing.T) {
	b := newBodyBudget(100)
	ctx := context.Background()
	b.acquire(ctx, 70, 0)
	bigDone := make(chan bool)
	go func() { bigDone <- b.acquire(ctx, 60, time.Minute) }()
	waitFor(t, func() bool { return waiting(b) == 1 })
	if !b.acquire(ctx, 20, 0) {
		t.Fatal("20 bytes that fit waited behind a 60 that does not")
	}
	midDone := make(chan bool)
	go func() { midDone <- b.acquire(ctx, 20, time.Minute) }()
	waitFor(t, func() bool { return waiting(b) == 2 })
	// 90 in use, 60 and then 20 waiting: freeing 70 makes room for the older 60 first, then
	// for the 20.
	b.release(70)
	if !<-bigDone || !<-midDone {
		t.Fatal("waiters that fit were not served")
	}
	if got := b.inUse(); got != 100 {
		t.Fatalf("inUse %d", got)
	}
}

func TestBodyBudgetConcurrent(t *testing.T) {
	b := newBodyBudget(1000)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			n := int64(1 + i*37%300)
			for range 100 {
				if b.acquire(context.Background(), n, time.Second) {
					if u := b.inUse(); u > 1000 {
						t.Errorf("inUse %d over the capacity", u)
					}
					b.release(n)
				}
			}
		})
	}
	wg.Wait()
	if got := b.inUse(); got != 0 {
		t.Fatalf("inUse %d at the end, want 0", got)
	}
}

func TestBodyBudgetOverRelease(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("releasing bytes never acquired must panic: it is a bug that would disable the budget")
		}
	}()
	newBodyBudget(10).release(1)
}

// stallingReader yields n bytes, then blocks until release is closed, then ends.
type stallingReader struct {
	n       int
	release chan struct{}
}

func (s *stallingReader) Read(p []byte) (int, error) {
	if s.n == 0 {
		<-s.release
		return 0, io.EOF
	}
	k := min(len(p), s.n)
	clear(p[:k])
	s.n -= k
	return k, nil
}

// A declared length is a ceiling, never the size of the first buffer: a body that has sent
// ten bytes of 64 MiB holds a few kilobytes, and buffers stay within twice what arrived.
func TestReadLimitedGrowsWithArrival(t *testing.T) {
	for _, sent := range []int{10, 5000, 70 << 10, 3 << 20} {
		src := &stallingReader{n: sent, release: make(chan struct{})}
		close(src.release)
		body, over, err := readLimited(src, MaxBodyBytes, nil)
		if over || err != nil || len(body) != sent {
			t.Fatalf("sent %d: len %d over %v err %v", sent, len(body), over, err)
		}
		if c := cap(body); c > max(2*sent, initialBodyCap) {
			t.Errorf("sent %d of a declared 64 MiB: buffer of %d bytes", sent, c)
		}
	}
	// With the declared length reached, the buffer is exactly the body.
	src := &stallingReader{n: 100000, release: make(chan struct{})}
	close(src.release)
	if body, _, _ := readLimited(src, 100000, nil); len(body) != 100000 || cap(body) != 100000 {
		t.Errorf("declared 100000: len %d cap %d", len(body), cap(body))
	}
}

// Bodies of at most 64 KiB are never counted; larger ones are counted from their first byte,
// as their buffer grows, and everything is given back at release.
func TestBodyAccount(t *testing.T) {
	b := newBodyBudget(1 << 20)
	for _, tc := range []struct {
		size     int
		declared int64
		counted  bool
	}{
		{100, 100, false}, {freeBodyBytes, -1, false}, {freeBodyBytes, freeBodyBytes, false},
		{freeBodyBytes + 1, -1, true}, {300 << 10, 300 << 10, true},
	} {
		src := &stallingReader{n: tc.size, release: make(chan struct{})}
		close(src.release)
		acct := &bodyAccount{budget: b, ctx: context.Background()}
		body, _, err := readLimited(src, tc.declared, acct.grow)
		if err != nil || len(body) != tc.size {
			t.Fatalf("size %d: len %d err %v", tc.size, len(body), err)
		}
		if held := b.inUse(); (held > 0) != tc.counted || held != acct.held || tc.counted && held != int64(cap(body)) {
			t.Errorf("size %d declared %d: %d bytes counted for a buffer of %d", tc.size, tc.declared, held, cap(body))
		}
		acct.release()
		if b.inUse() != 0 {
			t.Fatalf("size %d: %d bytes still counted after release", tc.size, b.inUse())
		}
	}
}

// A body whose next bytes find no room waits busyWait, then gets 503 Server busy with
// Retry-After: 1, its remaining bytes drained.
func TestLoadBodyBusy(t *testing.T) {
	b := newBodyBudget(128 << 10)
	b.acquire(context.Background(), 100<<10, 0)
	src := &countingReader{limit: 200 << 10}
	req := httptest.NewRequest("POST", "/x", io.NopCloser(src))
	rec := httptest.NewRecorder()
	acct := &bodyAccount{budget: b, ctx: context.Background()}
	if _, ok := loadBody(rec, req, acct); ok {
		t.Fatal("a body over the budget was accepted")
	}
	if rec.Code != http.StatusServiceUnavailable || rec.Body.String() != `{"error":"Server busy"}` ||
		rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("got %d %s, Retry-After %q", rec.Code, rec.Body, rec.Header().Get("Retry-After"))
	}
	if src.n != 200<<10 {
		t.Errorf("%d of %d bytes read: the rest was not drained", src.n, 200<<10)
	}
	if acct.held != 0 || b.inUse() != 100<<10 {
		t.Errorf("after the refusal the account holds %d, the budget %d", acct.held, b.inUse())
	}
}

// waiting counts the acquires in line.
func waiting(b *bodyBudget) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiters.Len()
}

// waitFor polls cond until it holds, failing after a generous bound.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, time.Millisecond, func() error {
		if !cond() {
			return errors.New("condition never held")
		}
		return nil
	})
}
