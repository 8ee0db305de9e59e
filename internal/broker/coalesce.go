package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// coalescer merges concurrent push requests into shared database calls, the way group commit
// does: a request that arrives while the flushers are busy waits for the next flush and goes
// with every other request that arrived meanwhile. Idle, a request is flushed at once, so
// coalescing adds no latency; busy, one commit carries many requests.
//
// Each request stays all-or-nothing and keeps its item order; requests in one call are
// ordered by arrival. A call that fails for a reason other than an unavailable database is
// retried request by request, so one bad request never fails the others.
type coalescer struct {
	write       func(context.Context, []store.PushItem) ([]store.PushResult, error)
	maxItems    int           // items per database call
	maxInflight int           // concurrent database calls
	timeout     time.Duration // bound on one call, independent of any one client

	mu       sync.Mutex
	pending  []*pushJob
	inflight int
}

type pushJob struct {
	items []store.PushItem
	done  chan pushDone
}

type pushDone struct {
	res []store.PushResult
	err error
}

// submit writes items as part of the next flush and returns their results.
func (c *coalescer) submit(ctx context.Context, items []store.PushItem) ([]store.PushResult, error) {
	job := &pushJob{items: items, done: make(chan pushDone, 1)}
	c.mu.Lock()
	c.pending = append(c.pending, job)
	if c.inflight < c.maxInflight {
		c.inflight++
		go c.flushLoop()
	}
	c.mu.Unlock()
	select {
	case d := <-job.done:
		return d.res, d.err
	case <-ctx.Done():
		// The write may still commit; the client is gone and will not learn of it.
		return nil, ctx.Err()
	}
}

// flushLoop flushes pending jobs until none are left.
func (c *coalescer) flushLoop() {
	for {
		c.mu.Lock()
		if len(c.pending) == 0 {
			c.inflight--
			c.mu.Unlock()
			return
		}
		n, items := 0, 0
		for n < len(c.pending) && (n == 0 || items+len(c.pending[n].items) <= c.maxItems) {
			items += len(c.pending[n].items)
			n++
		}
		jobs := c.pending[:n:n]
		c.pending = c.pending[n:]
		c.mu.Unlock()
		c.flush(jobs)
	}
}

func (c *coalescer) flush(jobs []*pushJob) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	if len(jobs) == 1 {
		res, err := c.write(ctx, jobs[0].items)
		jobs[0].done <- pushDone{res, err}
		return
	}
	n := 0
	for _, j := range jobs {
		n += len(j.items)
	}
	// Sized up front: grown by append, a call of many large requests allocated about twice
	// its items in discarded copies.
	all := make([]store.PushItem, 0, n)
	for _, j := range jobs {
		all = append(all, j.items...)
	}
	res, err := c.write(ctx, all)
	if err == nil && len(res) != len(all) {
		err = fmt.Errorf("push returned %d results for %d items", len(res), len(all))
	}
	switch {
	case err == nil:
		for _, j := range jobs {
			j.done <- pushDone{res: res[:len(j.items):len(j.items)]}
			res = res[len(j.items):]
		}
	case errors.Is(err, ErrUnavailable):
		for _, j := range jobs {
			j.done <- pushDone{err: err}
		}
	default:
		for _, j := range jobs {
			r, err := c.write(ctx, j.items)
			j.done <- pushDone{r, err}
		}
	}
}
