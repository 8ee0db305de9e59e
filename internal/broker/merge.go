package broker

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/queen-go/queen/internal/budget"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/tenant"
)

// merger is group commit for the consumer side (docs/design.md, "Group commit for consumers"):
// requests of one kind (pops of one target and group, acks, transactions) that wait at the
// consume gate are merged into one database call instead of each taking a slot and a
// transaction of its own. There is no goroutine of its own and no timer: a request joins the
// pending list and waits for a slot as before; the request that gets a slot first takes every
// pending request that may join it (up to max) and makes the call for all of them, and those
// it took stop waiting for a slot and wait for its answer. Idle, a request finds only itself
// and runs as it did before; busy, the requests that queue behind the slots leave with the
// next call that starts, one commit for all.
//
// A request's answer still comes from a committed call (or its error), so every promise of a
// request holds as before; what a merged call must keep is that each request's outcome is the
// one it would have alone, which each kind's run function ensures (see ack.go, pop.go,
// transaction.go).
type merger[T any] struct {
	max int // requests per call
	// weight is a request's size and maxWeight the most a call carries (the first request
	// always goes, whatever its size); nil: no bound but max.
	weight    func(*T) int
	maxWeight int
	// joins reports whether j may join a call whose first request is lead; nil: any may.
	joins func(lead, j *T) bool

	mu      sync.Mutex
	pending []*mergeJob[T]

	calls, requests atomic.Int64 // database calls made and requests they carried
}

// mergeJob is one request waiting in a merger.
type mergeJob[T any] struct {
	req   *T
	ctx   context.Context // the request's own (its deadlines, its budget)
	taken chan struct{}   // closed when a call (its own or another's) takes the request
	state atomic.Int32    // jobPending, then jobTaken or jobWithdrawn
	done  chan struct{}   // closed when the call that took it has answered it
	err   error           // the call's answer for it, when it failed (set before done)
}

// newJob returns a pending job for req.
func newJob[T any](ctx context.Context, req *T) *mergeJob[T] {
	return &mergeJob[T]{req: req, ctx: ctx, taken: make(chan struct{}), done: make(chan struct{})}
}

// add makes j pending.
func (m *merger[T]) add(j *mergeJob[T]) {
	m.mu.Lock()
	m.pending = append(m.pending, j)
	m.mu.Unlock()
}

// take claims lead, which holds a slot, and every pending request that may join it (of the same
// tenant: a call runs in one tenant's scope), in arrival order, up to max; it returns nil when another call took lead first (lead then waits for its
// done). Each request taken is told at once, so it stops waiting for a slot.
func (m *merger[T]) take(lead *mergeJob[T]) []*mergeJob[T] {
	if !lead.state.CompareAndSwap(jobPending, jobTaken) {
		return nil
	}
	close(lead.taken)
	call := []*mergeJob[T]{lead}
	load := m.weigh(lead)
	m.mu.Lock()
	kept := m.pending[:0]
	for _, j := range m.pending {
		switch {
		case j == lead:
		case j.state.Load() != jobPending:
			// withdrawn by its request, or taken: drop it
		case j.ctx.Err() != nil && j.state.CompareAndSwap(jobPending, jobWithdrawn):
			// its client is gone: nothing it would claim or settle could reach it
		case len(call) < m.max && tenant.Same(lead.ctx, j.ctx) && (m.joins == nil || m.joins(lead.req, j.req)) &&
			(m.weight == nil || load+m.weigh(j) <= m.maxWeight) && j.state.CompareAndSwap(jobPending, jobTaken):
			close(j.taken)
			call = append(call, j)
			load += m.weigh(j)
		default:
			kept = append(kept, j)
		}
	}
	clear(m.pending[len(kept):]) // the array must not keep answered jobs alive
	m.pending = kept
	m.mu.Unlock()
	m.calls.Add(1)
	m.requests.Add(int64(len(call)))
	return call
}

// weigh is j's weight (0 without a weight function).
func (m *merger[T]) weigh(j *mergeJob[T]) int {
	if m.weight == nil {
		return 0
	}
	return m.weight(j.req)
}

// withdraw takes back j, whose request gave up waiting for a slot; false when a call took it
// first (its answer is then coming).
func (m *merger[T]) withdraw(j *mergeJob[T]) bool {
	if !j.state.CompareAndSwap(jobPending, jobWithdrawn) {
		return false
	}
	m.mu.Lock()
	if i := slices.Index(m.pending, j); i >= 0 {
		m.pending = slices.Delete(m.pending, i, i+1)
	}
	m.mu.Unlock()
	return true
}

// answer records err for j and lets its request go on. Only the goroutine of the call that
// took j answers it, once.
func (j *mergeJob[T]) answer(err error) {
	j.err = err
	close(j.done)
}

// answered reports whether j was answered; only the goroutine of the call that took j asks,
// so nothing answers it between the question and what the caller does next.
func (j *mergeJob[T]) answered() bool {
	select {
	case <-j.done:
		return true
	default:
		return false
	}
}

// wait waits for the call that took j to answer it, or for the request to end.
func (j *mergeJob[T]) wait() error {
	select {
	case <-j.done:
		return j.err
	case <-j.ctx.Done():
		return j.ctx.Err()
	}
}

// counts are the calls made and the requests they carried since the broker started.
func (m *merger[T]) counts() (calls, requests int64) { return m.calls.Load(), m.requests.Load() }

// merged runs j's request through m: it waits for a slot (enter: the gates, abandoned as soon
// as another call takes the request), and then, holding it, makes run's call for j and every
// request that joins it (lead: every request is answered and the slot given back whatever run
// does); or it waits for the call that took j. A request that gives up waiting for a slot is
// withdrawn and never run.
func merged[T any](m *merger[T], j *mergeJob[T], enter func(ctx context.Context, abort <-chan struct{}) (func(), error),
	run func(call []*mergeJob[T])) error {
	m.add(j)
	leave, err := enter(j.ctx, j.taken)
	if err != nil {
		if m.withdraw(j) {
			return err
		}
		return j.wait() // a call took it while it waited
	}
	call := m.take(j)
	if call == nil {
		leave()
		return j.wait()
	}
	lead(call, leave, run)
	return j.err
}

// callContext is the context a merged call of several requests runs on: the first request's
// values (its trace) without its cancellation, since the call answers every request of it and
// must not end because one client went away; its waits are bounded by the earliest wait
// deadline of the requests, and its work by the store's DB_REQUEST_TIMEOUT.
func callContext[T any](st *store.Store, call []*mergeJob[T]) context.Context {
	if len(call) == 1 {
		return call[0].ctx
	}
	until := st.WaitDeadline(call[0].ctx)
	for _, j := range call[1:] {
		if t := st.WaitDeadline(j.ctx); t.Before(until) {
			until = t
		}
	}
	return budget.WithWaitDeadline(context.WithoutCancel(call[0].ctx), until)
}

// markCall records on every request of a call that failed unavailable or busy how it was
// answered, for the outage summary and the overload counter.
func markCall[T any](call []*mergeJob[T], err error) {
	if len(call) > 1 {
		for _, j := range call {
			budget.Mark(j.ctx, err)
		}
	}
}

// CallCount is how many database calls one kind of consumer request made since the broker
// started and how many requests they carried (one each when nothing was merged).
type CallCount struct {
	Kind            string // pop, ack or transaction
	Calls, Requests int64
}

// CallCounts reports the merged calls of pops, acks and transactions, for the metrics.
func (b *Broker) CallCounts() []CallCount {
	pc, pr := b.pops.counts()
	ac, ar := b.acks.counts()
	tc, tr := b.txns.counts()
	return []CallCount{{"pop", pc, pr}, {"ack", ac, ar}, {"transaction", tc, tr}}
}
