package broker

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestPopGateBoundsConcurrentAttemptsPerKey(t *testing.T) {
	g := popGate{size: 2}
	startPart(t, &g)
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			leave, err := g.enter(context.Background(), "q\x00g")
			if err != nil {
				t.Error(err)
				return
			}
			n := inside.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(5 * time.Millisecond)
			inside.Add(-1)
			leave()
		}()
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
}
