package broker

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queen-go/queen/internal/budget"
	"github.com/queen-go/queen/internal/lifecycle"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/tenant"
)

// coalescer merges concurrent push requests into shared database calls, the way group commit
// does: a request that arrives while the calls it could join are busy waits for the next
// call and goes with every other request that arrived meanwhile. Idle, a request is flushed
// at once, so coalescing adds no latency; busy, one commit carries many requests.
//
// At most maxInflight calls run at once. A call locks its partitions until it commits
// (docs/design.md, Locks), so a call that names a partition of a call in flight waits in the
// database for that call's commit and then runs at once: requests spread over many
// partitions, which nearly always share some, are pipelined that way, the next call parsed
// and waiting while the one before it works, instead of leaving the database idle between
// calls while the broker answers one call and sends the next (bench/HISTORY.md, "Spread
// pushes and the lock convoy", 2026-12-01; qg_push_items makes that wait cheap). Calls are formed in arrival
// order, so a partition's requests reach its lock in arrival order. Requests on one
// partition each are also kept to lanes (their partition's hash modulo maxInflight): one lane
// per call and one call per lane in flight, as the flushers' lanes were before, so a few busy
// partitions fill parallel calls, each gathering its lane's requests meanwhile, and a lane's
// requests never wait on each other's locks. A request left waiting for its lane keeps every
// later request naming its partition waiting too, so none overtakes it.
//
// Each request stays all-or-nothing and keeps its item order; requests in one call are
// ordered by their first message id, which is the order their ids were minted in (UUIDv7,
// increasing within the process): so a call's ids rise with its positions, and the push SQL
// has no id descent to date a millisecond later and wait for (docs/design.md, "Message order
// within a partition"). A call that fails as a whole is retried request by request or fails
// them all, as retryAlone says, so one bad request never fails the others; whatever a call
// does, even panic, every request it took is answered and its lane freed (call).
//
// Waiting for a call counts like waiting for a pooled connection (docs/api/operations.md §9.1,
// §9.7): a request still queued at its wait deadline, or when a database outage begins, is
// withdrawn and never written; it is answered ErrBusy when the outage probe finds the database
// there (judge), ErrUnavailable otherwise. Once a flusher has taken it, the request waits for
// the call, which the store bounds by DB_REQUEST_TIMEOUT.
//
// maxInflight flusher goroutines run for the whole run (Start to Stop), each woken by a kick
// when a request arrives or a call ends: their lifetime is the coalescer's, so Stop can wait
// for them. Stop lets the flushers write what is already queued (bounded by timeout per
// call), so every accepted request gets its true answer; requests after that are refused.
type coalescer struct {
	lifecycle.StartStop
	write       func(context.Context, []store.PushRow) ([]mq.PushResult, error)
	maxItems    int           // items per database call
	maxInflight int           // concurrent database calls
	timeout     time.Duration // backstop on one call, independent of any one client
	// waitDeadline is when a request's waits in front of the database end (store.WaitDeadline);
	// nil: timeout after it arrives.
	waitDeadline func(context.Context) time.Time
	// judge answers a request withdrawn at its wait deadline (store.Judge); nil: unavailable.
	judge func(context.Context, error) error
	// outage returns a channel closed when a database outage begins (store.OutageBegun); nil:
	// waits end only at their deadline.
	outage func() <-chan struct{}
	// log receives the panics of calls (call); nil: slog.Default().
	log *slog.Logger

	once    sync.Once
	mu      sync.Mutex
	pending []*pushJob    // in arrival order
	laneOn  []bool        // lanes with a call in flight
	open    bool          // the flushers run: requests are accepted
	kick    chan struct{} // wake-ups of the flushers (at most one per flusher buffered)
}

type pushJob struct {
	// ctx is the request's, without its cancellation: its values (its budget, its trace) for
	// a write of the request alone, which a client that went away must not cut short.
	ctx       context.Context
	tenant    string // the request's: a call carries the requests of one tenant
	items     []store.PushRow
	parts     []partRef // its distinct partitions
	lane      int       // of a request on one partition: its partition's hash modulo maxInflight; else -1
	done      chan pushDone
	waitUntil time.Time    // the request's wait deadline
	state     atomic.Int32 // jobPending, then jobTaken by a flusher or jobWithdrawn by its submitter
	answered  bool         // set by answer, on the flusher that took it
}

// answer sends j its answer; a job is answered once, by the flusher that took it or withdrew
// it (done holds that one answer, whether or not its submitter still waits).
func (j *pushJob) answer(d pushDone) {
	j.answered = true
	j.done <- d
}

// A job's states: the flusher and the submitter race for a pending job at its wait deadline,
// and exactly one of them wins, so a withdrawn request is never written.
const (
	jobPending int32 = iota
	jobTaken
	jobWithdrawn
)

// errQueueTimeout answers a push that waited for the database longer than its wait deadline
// (then judged: load or outage).
var errQueueTimeout = fmt.Errorf("%w: push waited for the database until DB_REQUEST_TIMEOUT", mq.ErrUnavailable)

type pushDone struct {
	res []mq.PushResult
	err error
}

// init makes the shared state; safe to call more than once.
func (c *coalescer) init() {
	c.once.Do(func() {
		c.laneOn = make([]bool, max(c.maxInflight, 1))
		c.kick = make(chan struct{}, max(c.maxInflight, 1))
	})
}

// Start runs maxInflight flushers until Stop.
func (c *coalescer) Start(ctx context.Context) error {
	return c.StartWith(ctx, func(context.Context) error {
		c.init()
		c.mu.Lock()
		c.open = true
		c.mu.Unlock()
		for range max(c.maxInflight, 1) {
			c.Go(c.flusher)
		}
		return nil
	})
}

// partRef names a partition for the scheduling of calls. A struct, not a joined string:
// listing a spread request's partitions then allocates nothing per item.
type partRef struct{ tenant, queue, partition string }

// partKey is the partRef of a queue's partition.
func partKey(tenant, queue, partition string) partRef { return partRef{tenant, queue, partition} }

// partKeys lists the distinct partitions of a request's items, in first-seen order.
func partKeys(tenant string, items []store.PushRow) []partRef {
	if len(items) == 0 {
		return nil
	}
	first := items[0]
	same := true
	for _, it := range items[1:] {
		if it.Partition != first.Partition || it.Queue != first.Queue {
			same = false
			break
		}
	}
	if same { // the usual request: one producer's batch for one partition
		return []partRef{partKey(tenant, first.Queue, first.Partition)}
	}
	seen := make(map[partRef]struct{}, len(items))
	var out []partRef
	for _, it := range items {
		k := partKey(tenant, it.Queue, it.Partition)
		if _, ok := seen[k]; !ok {
			seen[k] = struct{}{}
			out = append(out, k)
		}
	}
	return out
}

// laneOf is the lane of a request on one partition: a hash of the partition modulo
// maxInflight; -1 for a request on several (or none).
func (c *coalescer) laneOf(parts []partRef) int {
	if len(parts) != 1 || c.maxInflight <= 1 {
		return -1
	}
	h := fnv.New32a()
	h.Write([]byte(parts[0].tenant))
	h.Write([]byte{0})
	h.Write([]byte(parts[0].queue))
	h.Write([]byte{0})
	h.Write([]byte(parts[0].partition))
	return int(h.Sum32() % uint32(c.maxInflight))
}

// submit writes items as part of a coming call and returns their results; errStopped when the
// coalescer is not running.
func (c *coalescer) submit(ctx context.Context, items []store.PushRow) ([]mq.PushResult, error) {
	res, err := c.await(ctx, items)
	if errors.Is(err, errQueueTimeout) && c.judge != nil {
		err = c.judge(ctx, err) // load, or an outage the probe finds now
	}
	return res, err
}

// await queues items for a call and waits for its answer, or for the request's wait deadline
// or an outage while it is still queued.
func (c *coalescer) await(ctx context.Context, items []store.PushRow) ([]mq.PushResult, error) {
	c.init()
	name, _ := tenant.Of(ctx)
	job := &pushJob{ctx: context.WithoutCancel(ctx), tenant: name, items: items, parts: partKeys(name, items), done: make(chan pushDone, 1),
		waitUntil: c.waitUntil(ctx)}
	job.lane = c.laneOf(job.parts)
	var outage <-chan struct{}
	if c.outage != nil {
		outage = c.outage()
	}
	c.mu.Lock()
	if !c.open {
		c.mu.Unlock()
		return nil, errStopped
	}
	c.pending = append(c.pending, job)
	c.mu.Unlock()
	c.wake()
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
	case <-outage:
		if job.state.CompareAndSwap(jobPending, jobWithdrawn) {
			return nil, errOutageWait
		}
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

// wake lets one idle flusher look at the pending requests (a kick already buffered does).
func (c *coalescer) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// waitUntil is the wait deadline of a request submitted now.
func (c *coalescer) waitUntil(ctx context.Context) time.Time {
	if c.waitDeadline == nil {
		return time.Now().Add(c.timeout)
	}
	return c.waitDeadline(ctx)
}

// flusher writes calls whenever kicked, until ctx ends; then it closes the coalescer to new
// requests and, with the other flushers, writes what is left.
func (c *coalescer) flusher(ctx context.Context) {
	for {
		select {
		case <-c.kick:
			c.flushPending()
		case <-ctx.Done():
			c.mu.Lock()
			c.open = false
			c.mu.Unlock()
			c.drainAtStop()
			return
		}
	}
}

// flushPending writes calls until none can start: nothing is pending, or everything pending
// waits for a lane with a call in flight (whose end kicks a flusher).
func (c *coalescer) flushPending() {
	for {
		jobs, lane, more := c.take()
		if jobs == nil {
			return
		}
		if more {
			c.wake() // another flusher may find a call that can run beside this one
		}
		c.call(jobs, lane)
	}
}

// call writes jobs in one call (flush) and then frees lane, letting every request of it go
// whatever flush does (mergedcall.go): the requests it did not answer get errCallUnanswered,
// or errCallPanicked when it panicked. A flusher belongs to no request, so a panic is not
// raised again here, where it would end the process and every other client's requests with
// it: it is logged with its stack and costs the requests of its call, as a handler's panic
// costs its request (the HTTP layer's recoverPanics).
func (c *coalescer) call(jobs []*pushJob, lane int) {
	defer c.release(lane)
	defer func() {
		v := recover()
		err := errCallUnanswered
		if v != nil {
			err = panicError(v)
			log := c.log
			if log == nil {
				log = slog.Default()
			}
			log.Error("push call panicked", "requests", len(jobs), "panic", v, "stack", string(debug.Stack()))
		}
		for _, j := range jobs {
			if !j.answered {
				j.answer(pushDone{err: err})
			}
		}
	}()
	c.flush(jobs)
}

// drainAtStop writes every request still queued when the run ends. A flusher that finds
// requests waiting for another's call waits for that call's kick; each flusher leaving kicks
// the next, so none is left waiting.
func (c *coalescer) drainAtStop() {
	defer c.wake()
	for {
		c.flushPending()
		c.mu.Lock()
		empty := len(c.pending) == 0
		c.mu.Unlock()
		if empty {
			return
		}
		<-c.kick
	}
}

// take removes the next call's requests from the pending list: in arrival order, every
// request that no earlier waiting request shares a partition with, up to maxItems (a first
// request larger than that goes alone), looking past waiting requests that name at most
// maxItems partitions in all. Partitions of calls in flight do not hold a request back: its
// call waits for their locks in the database. Requests on one partition are split by lane
// (their partition's hash), as the flushers' lanes once did: a call takes those of one lane
// only, and none of a lane with a call in flight, so requests for a few busy partitions
// spread over parallel calls instead of all joining the first. Requests on several
// partitions join any call. Requests past their wait deadline are answered and dropped. lane
// is the call's lane (-1: none); more reports requests left pending.
func (c *coalescer) take() (jobs []*pushJob, lane int, more bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var blocked map[partRef]struct{} // partitions of requests left waiting in this pass
	kept := c.pending[:0]
	items, skipped := 0, 0
	lane = -1 // the lane of the call's first request on one partition
	now := time.Now()
	for i, j := range c.pending {
		if len(jobs) > 0 && items+len(j.items) > c.maxItems {
			kept = append(kept, c.pending[i:]...) // the call is full
			break
		}
		if !now.Before(j.waitUntil) && j.state.CompareAndSwap(jobPending, jobWithdrawn) {
			j.answer(pushDone{err: errQueueTimeout}) // too late to start: never written
			continue
		}
		if j.state.Load() != jobPending {
			continue // withdrawn by its submitter
		}
		if len(jobs) > 0 && j.tenant != jobs[0].tenant {
			// A call runs in one tenant's scope; another tenant's request shares no partition
			// with this call's, so it waits for the next call without holding any back.
			kept = append(kept, j)
			continue
		}
		if holds(blocked, j.parts) {
			if skipped += len(j.parts); skipped > c.maxItems {
				// Looking further costs a map entry per partition of every request passed
				// over (quadratic work under the lock when many spread requests wait);
				// the rest waits for the next call, in order. Requests on one partition
				// cost one entry each, so they hardly ever stop the scan.
				kept = append(kept, c.pending[i:]...)
				break
			}
			if blocked == nil {
				blocked = make(map[partRef]struct{})
			}
			for _, p := range j.parts {
				blocked[p] = struct{}{}
			}
			kept = append(kept, j)
			continue
		}
		if j.lane >= 0 && (c.laneOn[j.lane] || lane >= 0 && j.lane != lane) {
			// A lane with a call in flight (its requests gather for the lane's next call,
			// as one lane's requests always did) or another lane than this call's (left for
			// a call beside this one): blocked for this call, so no later request on its
			// partition overtakes it.
			if blocked == nil {
				blocked = make(map[partRef]struct{})
			}
			blocked[j.parts[0]] = struct{}{}
			kept = append(kept, j)
			continue
		}
		if !j.state.CompareAndSwap(jobPending, jobTaken) {
			continue
		}
		if lane < 0 {
			lane = j.lane
		}
		jobs = append(jobs, j)
		items += len(j.items)
	}
	clear(c.pending[len(kept):]) // the array must not keep answered jobs alive
	c.pending = kept
	if lane >= 0 {
		c.laneOn[lane] = true
	}
	return jobs, lane, len(c.pending) > 0
}

// holds reports whether set has any of parts.
func holds(set map[partRef]struct{}, parts []partRef) bool {
	if len(set) == 0 {
		return false
	}
	for _, p := range parts {
		if _, ok := set[p]; ok {
			return true
		}
	}
	return false
}

// release frees a finished call's lane and kicks a flusher for the requests that waited on it.
func (c *coalescer) release(lane int) {
	c.mu.Lock()
	if lane >= 0 {
		c.laneOn[lane] = false
	}
	c.mu.Unlock()
	c.wake()
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
// bounded by the store's DB_REQUEST_TIMEOUT. A call that fails as a whole is retried request
// by request or fails them all, as retryAlone says; a request retried alone runs under its own
// deadlines.
func (c *coalescer) flush(jobs []*pushJob) {
	waitUntil := jobs[0].waitUntil
	for _, j := range jobs[1:] {
		if j.waitUntil.Before(waitUntil) {
			waitUntil = j.waitUntil
		}
	}
	base := tenant.With(context.Background(), jobs[0].tenant) // every job of a call has its tenant (take)
	ctx, cancel := context.WithTimeout(budget.WithWaitDeadline(base, waitUntil), c.timeout)
	defer cancel()
	if len(jobs) == 1 {
		jobs[0].answer(c.writeAll(ctx, jobs[0].items))
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
	d := c.writeAll(ctx, all)
	switch {
	case d.err == nil:
		res := d.res
		for _, j := range jobs {
			j.answer(pushDone{res: res[:len(j.items):len(j.items)]})
			res = res[len(j.items):]
		}
	case retryAlone(len(jobs), d.err):
		// Nothing was written (one transaction): find the request at fault by writing each
		// alone, in order.
		for _, j := range jobs {
			ctx, cancel := context.WithTimeout(j.ctx, c.timeout)
			j.answer(c.writeAll(ctx, j.items))
			cancel()
		}
	default:
		for _, j := range jobs {
			j.answer(pushDone{err: d.err})
		}
	}
}

// writeAll writes items in one database call. A call that committed but answered with another
// number of results than items fails: its answer cannot be split, and it must never be written
// again (retryAlone refuses that error).
func (c *coalescer) writeAll(ctx context.Context, items []store.PushRow) pushDone {
	res, err := c.write(ctx, items)
	if err == nil && len(res) != len(items) {
		return pushDone{err: fmt.Errorf("push returned %d results for %d items", len(res), len(items))}
	}
	return pushDone{res, err}
}
