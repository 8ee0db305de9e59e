package sdktest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	queen "github.com/queen-go/queen/client"
)

// popAll drains the queue (queue mode, acking) and returns the payload numbers in order.
func popAll(t testing.TB, q queen.Queue) []int {
	t.Helper()
	ctx := testCtx(t)
	var out []int
	for {
		b, err := q.Pop(ctx, queen.PopOptions{Batch: 100, Wait: 300 * time.Millisecond})
		if err != nil {
			t.Fatalf("pop: %v", err)
		}
		if b.Empty() {
			return out
		}
		for _, m := range b.Messages {
			out = append(out, payloadOf(t, m))
		}
		last := b.Messages[len(b.Messages)-1]
		if _, err := q.Client().Ack(ctx, last.Ack(queen.AckCompleted)); err != nil {
			t.Fatalf("ack: %v", err)
		}
	}
}

func TestBufferFlushesByCount(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	q := c.Queue(queueName(t))
	var flushes atomic.Int32
	buf, err := q.Buffer(queen.BufferOptions{MaxCount: 5, MaxDelay: time.Hour,
		OnFlush: func(res queen.PushResults, err error) {
			if err != nil || len(res) != 5 || res.Count(queen.PushQueued) != 5 {
				t.Errorf("flush: %v %+v", err, res)
			}
			flushes.Add(1)
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	for i := range 10 {
		if err := buf.Push(ctx, map[string]int{"n": i}); err != nil {
			t.Fatal(err)
		}
	}
	if flushes.Load() != 2 || buf.Len() != 0 {
		t.Fatalf("flushes = %d, waiting = %d", flushes.Load(), buf.Len())
	}
	if got := popAll(t, q); len(got) != 10 || got[0] != 0 || got[9] != 9 {
		t.Fatalf("stored %v", got)
	}
}

func TestBufferFlushesByTime(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	q := c.Queue(queueName(t))
	flushed := make(chan error, 1)
	buf, err := q.Buffer(queen.BufferOptions{MaxCount: 1000, MaxDelay: 100 * time.Millisecond,
		OnFlush: func(_ queen.PushResults, err error) { flushed <- err }})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := buf.Push(testCtx(t), numbered(3)...); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-flushed:
		if err != nil || time.Since(start) < 100*time.Millisecond {
			t.Fatalf("timer flush: %v after %s", err, time.Since(start))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no flush by time")
	}
	if got := popAll(t, q); len(got) != 3 {
		t.Fatalf("stored %v", got)
	}
}

func TestBufferedPushFlushedOnClose(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	q := c.Queue(queueName(t))
	a, _ := q.Partition("a").Buffer(queen.BufferOptions{MaxCount: 1000, MaxDelay: time.Hour})
	b, _ := q.Partition("b").Buffer(queen.BufferOptions{MaxCount: 1000, MaxDelay: time.Hour})
	ctx := testCtx(t)
	_ = a.Push(ctx, numbered(4)...)
	_ = b.Push(ctx, map[string]int{"n": 100})
	if got := popAll(t, q); len(got) != 0 {
		t.Fatalf("flushed before Close: %v", got)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := popAll(t, q.Partition("a")); len(got) != 4 || got[3] != 3 {
		t.Fatalf("partition a: %v", got)
	}
	if got := popAll(t, q.Partition("b")); len(got) != 1 {
		t.Fatalf("partition b: %v", got)
	}
	if err := a.Push(ctx, 1); !errors.Is(err, queen.ErrClosed) {
		t.Fatalf("push after Close: %v", err)
	}
	if _, err := q.Buffer(queen.BufferOptions{}); !errors.Is(err, queen.ErrClosed) {
		t.Fatalf("new buffer after Close: %v", err)
	}
}

func TestBufferKeepsItemsWhenTheBrokerIsDown(t *testing.T) {
	t.Parallel()
	// A proxy that refuses pushes until told otherwise; items must survive and keep order.
	var down atomic.Bool
	down.Store(true)
	var mu sync.Mutex
	var keys []string
	real := newClient(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		mu.Lock()
		keys = append(keys, r.URL.Path)
		mu.Unlock()
		proxy(w, r, brokerURL)
	}))
	t.Cleanup(srv.Close)
	c, _ := queen.New(srv.URL, queen.WithRetry(queen.RetryPolicy{}))
	name := queueName(t)
	buf, _ := c.Queue(name).Buffer(queen.BufferOptions{MaxCount: 3, MaxDelay: time.Hour})
	ctx := testCtx(t)
	if err := buf.Push(ctx, numbered(3)...); err == nil {
		t.Fatal("flush to a down broker reported no error")
	}
	if buf.Len() != 3 {
		t.Fatalf("items lost: %d waiting", buf.Len())
	}
	_ = buf.Push(ctx, map[string]int{"n": 3}) // fills past MaxCount: another failing flush
	down.Store(false)
	if err := buf.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := popAll(t, real.Queue(name)); len(got) != 4 || got[0] != 0 || got[3] != 3 {
		t.Fatalf("stored %v, want 0..3 in order", got)
	}
	if len(keys) != 2 {
		t.Fatalf("4 items with MaxCount 3 should take 2 requests, took %d", len(keys))
	}
}
