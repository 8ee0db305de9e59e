package broker

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queen-go/queen/internal/lifecycle"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
)

// coalescer merges concurrent push requests into shared database calls, the way group commit
// does: a request that arrives while its lane is busy waits for the lane's next flush and goes
// with every other request that arrived meanwhile. Idle, a request is flushed at once, so
// coalescing adds no latency; busy, one commit carries many requests.
//
// Requests are spread over maxInflight lanes by their first item's partition, each lane with
// at most one call in flight: calls of different lanes mostly lock different partitions and
// run in parallel, while requests for one partition, which would wait on its lock anyway, share
// commits.
//
// Each request stays all-or-nothing and keeps its item order; requests in one call are
// ordered by their first message id, which is the order their ids were minted in (UUIDv7,
// increasing within the process): so a call's ids rise with its positions, and the push SQL
// has no id descent to date a millisecond later and wait for (docs/design.md, "Message order
// within a partition"). A call that fails for a reason other than an unavailable database is
// retried request by request, so one bad request never fails the others.
//
// Waiting in a lane counts against the request's DB_CONNECTION_TIMEOUT, like waiting for a
// pooled connection (docs/api/operations.md §9.1): a request still queued at its wait deadline
// is withdrawn and answered ErrUnavailable, and is never written. Once a flusher has taken it,
// the request waits for the call, which the store bounds by DB_REQUEST_TIMEOUT.
//
// Each lane has one flusher goroutine for the whole run (Start to Stop), woken by a kick,
// rather than one started per busy spell: its lifetime is then the coalescer's, so Stop can
// wait for it. Stop lets each flusher write what is already queued (bounded by timeout per
// call), so every accepted request gets its true answer; requests after that are refused.
type coalescer struct {
	lifecycle.StartStop
	write       func(context.Context, []store.PushRow) ([]mq.PushResult, error)
	maxItems    int           // items per database call
	maxInflight int           // lanes, so concurrent database calls
	timeout     time.Duration // backstop on one call, independent of any one client
	// waitDeadline is when a request's waits in front of the database end (store.WaitDeadline);
	// nil: timeout after it arrives.
	waitDeadline func(context.Context) time.Time

	once  sync.Once
	lanes []*lane
}

// lane is one ordered queue of pending requests and its flusher.
type lane struct {
	mu      sync.Mutex
	pending []*pushJob
	open    bool          // its flusher runs: requests are accepted
	kick    chan struct{} // (at most one buffered) wake-up of the flusher
}

type pushJob struct {
	items     []store.PushRow
	done      chan pushDone
	waitUntil time.Time    // the request's wait deadline
	state     atomic.Int32 // jobPending, then jobTaken by a flusher or jobWithdrawn by its submitter
}

// A job's states: the flusher and the submitter race for a pending job at its wait deadline,
// and exactly one of them wins, so a withdrawn request is never written.
const (
	jobPending int32 = iota
	jobTaken
	jobWithdrawn
)

// errQueueTimeout answers a push that waited in its lane past its wait deadline.
var errQueueTimeout = fmt.Errorf("%w: push waited for the database longer than DB_CONNECTION_TIMEOUT", mq.ErrUnavailable)

type pushDone struct {
	res []mq.PushResult
	err error
}

// Start runs one flusher per lane until Stop.
func (c *coalescer) Start(ctx context.Context) error {
	return c.StartWith(ctx, func(context.Context) error {
		c.laneFor(nil) // make sure the lanes exist
		for _, l := range c.lanes {
			l.mu.Lock()
			l.open = true
			l.mu.Unlock()
			c.Go(func(ctx context.Context) { c.flusher(ctx, l) })
		}
		return nil
	})
}

// submit writes items as part of their lane's next flush and returns their results; errStopped
// when the coalescer is not running.
func (c *coalescer) submit(ctx context.Context, items []store.PushRow) ([]mq.PushResult, error) {
	job := &pushJob{items: items, done: make(chan pushDone, 1), waitUntil: c.waitUntil(ctx)}
	l := c.laneFor(items)
	l.mu.Lock()
	if !l.open {
		l.mu.Unlock()
		return nil, errStopped
	}
	l.pending = append(l.pending, job)
	l.mu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default: // a wake-up is already pending
	}
	timer := time.NewTimer(time.Until(job.waitUntil))
	defer timer.Stop()
	select {
	case d := <-job.done:
		return d.res, d.err
	case <-timer.C:
		if job.state.CompareAndSwap(jobPending, jobWithdrawn) {
			return nil, errQueueTimeout
		}
		// A flusher took it: its call has its own deadline.
	case <-ctx.Done():
		// The write may still commit; the client is gone and will not learn of it.
		return nil, ctx.Err()
	}
	select {
	case d := <-job.done:
		return d.res, d.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// waitUntil is the wait deadline of a request submitted now.
func (c *coalescer) waitUntil(ctx context.Context) time.Time {
	if c.waitDeadline == nil {
		return time.Now().Add(c.timeout)
	}
	return c.waitDeadline(ctx)
}

// laneFor picks the lane of a request by the partition of its first item.
func (c *coalescer) laneFor(items []store.PushRow) *lane {
	c.once.Do(func() {
		c.lanes = make([]*lane, max(c.maxInflight, 1))
		for i := range c.lanes {
			c.lanes[i] = &lane{kick: make(chan struct{}, 1)}
		}
	})
	if len(c.lanes) == 1 || len(items) == 0 {
		return c.lanes[0]
	}
	h := fnv.New32a()
	h.Write([]byte(items[0].Queue))
	h.Write([]byte{0})
	h.Write([]byte(items[0].Partition))
	return c.lanes[h.Sum32()%uint32(len(c.lanes))]
}

// flusher flushes the lane whenever kicked, until ctx ends; then it closes the lane to new
// requests and flushes what is left.
func (c *coalescer) flusher(ctx context.Context, l *lane) {
	for {
		select {
		case <-l.kick:
			c.flushPending(l)
		case <-ctx.Done():
			l.mu.Lock()
			l.open = false
			l.mu.Unlock()
			c.flushPending(l)
			return
		}
	}
}

// flushPending flushes a lane's pending jobs until none are left. An idle lane's request is
// flushed at once, so coalescing adds no latency.
func (c *coalescer) flushPending(l *lane) {
	for {
		l.mu.Lock()
		if len(l.pending) == 0 {
			l.mu.Unlock()
			return
		}
		var jobs []*pushJob
		n, items := 0, 0
		now := time.Now()
		for n < len(l.pending) && (len(jobs) == 0 || items+len(l.pending[n].items) <= c.maxItems) {
			j := l.pending[n]
			n++
			if !now.Before(j.waitUntil) && j.state.CompareAndSwap(jobPending, jobWithdrawn) {
				j.done <- pushDone{err: errQueueTimeout} // too late to start: never written
				continue
			}
			if j.state.CompareAndSwap(jobPending, jobTaken) {
				jobs = append(jobs, j)
				items += len(j.items)
			}
		}
		clear(l.pending[:n]) // the pending slice's array must not keep answered jobs alive
		l.pending = l.pending[n:]
		l.mu.Unlock()
		if len(jobs) > 0 {
			c.flush(jobs)
		}
	}
}

// firstID is the message id of a job's first item ("" for none).
func firstID(j *pushJob) string {
	if len(j.items) == 0 {
		return ""
	}
	return j.items[0].ID
}

// flush writes jobs in one call. The call waits for a connection until the earliest wait
// deadline among them (each request's waits total DB_CONNECTION_TIMEOUT), and its work is
// bounded by the store's DB_REQUEST_TIMEOUT.
func (c *coalescer) flush(jobs []*pushJob) {
	waitUntil := jobs[0].waitUntil
	for _, j := range jobs[1:] {
		if j.waitUntil.Before(waitUntil) {
			waitUntil = j.waitUntil
		}
	}
	ctx, cancel := context.WithTimeout(store.WithWaitDeadline(context.Background(), waitUntil), c.timeout)
	defer cancel()
	if len(jobs) == 1 {
		res, err := c.write(ctx, jobs[0].items)
		if err == nil && len(res) != len(jobs[0].items) {
			res, err = nil, fmt.Errorf("push returned %d results for %d items", len(res), len(jobs[0].items))
		}
		jobs[0].done <- pushDone{res, err}
		return
	}
	slices.SortStableFunc(jobs, func(a, b *pushJob) int { return strings.Compare(firstID(a), firstID(b)) })
	n := 0
	for _, j := range jobs {
		n += len(j.items)
	}
	// Sized up front: grown by append, a call of many large requests allocated about twice
	// its items in discarded copies.
	all := make([]store.PushRow, 0, n)
	for _, j := range jobs {
		all = append(all, j.items...)
	}
	res, err := c.write(ctx, all)
	switch {
	case err == nil && len(res) != len(all):
		// The call committed but its answer cannot be split: never write it again.
		err = fmt.Errorf("push returned %d results for %d items", len(res), len(all))
		fallthrough
	case errors.Is(err, mq.ErrUnavailable):
		for _, j := range jobs {
			j.done <- pushDone{err: err}
		}
	case err == nil:
		for _, j := range jobs {
			j.done <- pushDone{res: res[:len(j.items):len(j.items)]}
			res = res[len(j.items):]
		}
	default:
		// Nothing was written (one transaction): find the request at fault by writing each
		// alone, within what is left of the call's deadlines, so the requests still answer
		// within their bound.
		for _, j := range jobs {
			r, err := c.write(ctx, j.items)
			j.done <- pushDone{r, err}
		}
	}
}
