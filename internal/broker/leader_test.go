package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
)

// A merged call's leader always lets go (mergedcall.go): whatever its run does — panic, return
// without answering, or end its goroutine — every request it took is answered and its slot is
// given back. The tests run in a synctest bubble: the requests queue at a gate of one slot held
// by the test, the one that gets the slot takes them all, and each request's own deadline (a
// fake minute) only bounds a request that would otherwise wait for good.

// leaderFault is what a leader's run does instead of answering its call.
type leaderFault struct {
	name string
	run  func(call []*mergeJob[int])
	// want is the error the requests left unanswered get.
	want error
}

var leaderFaults = []leaderFault{
	{"panic", func([]*mergeJob[int]) { panic("bug in the merged call") }, errCallPanicked},
	{"early return", func(call []*mergeJob[int]) { call[0].answer(nil) }, errCallUnanswered},
	{"goexit", func([]*mergeJob[int]) { runtime.Goexit() }, errCallUnanswered},
}

func TestMergedCallLeaderAlwaysLetsGo(t *testing.T) {
	for _, f := range leaderFaults {
		t.Run(f.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { leaderLetsGo(t, f) })
		})
	}
}

func leaderLetsGo(t *testing.T, f leaderFault) {
	g := &callGate{size: 1}
	startPart(t, g)
	hold, err := g.enter(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	m := &merger[int]{max: 8}
	enter := func(ctx context.Context, abort <-chan struct{}) (func(), error) {
		return g.enterOr(ctx, "", time.Time{}, abort)
	}
	var sizes []int // of the calls made; only the slot holder writes it
	run := func(call []*mergeJob[int]) {
		sizes = append(sizes, len(call))
		f.run(call)
	}
	const n = 4
	errs := make([]error, n)
	returned := make([]bool, n)
	panics := make([]any, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			defer func() { panics[i] = recover() }() // as the HTTP layer's recoverPanics does
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			req := i
			errs[i] = merged(m, newJob(ctx, &req), enter, run)
			returned[i] = true
		})
	}
	synctest.Wait() // every request waits for the slot
	if len(m.pending) != n {
		t.Fatalf("%d requests pending, want %d", len(m.pending), n)
	}
	hold()
	wg.Wait()
	if len(sizes) != 1 || sizes[0] != n {
		t.Fatalf("calls of %v requests, want one call that took all %d", sizes, n)
	}
	answered, leaders := 0, 0
	for i := range n {
		switch {
		case panics[i] != nil:
			leaders++
			if f.name != "panic" || panics[i] != "bug in the merged call" {
				t.Fatalf("request %d panicked with %v", i, panics[i])
			}
		case !returned[i]:
			leaders++ // the leader whose goroutine exited
		case f.name == "early return" && errs[i] == nil:
			leaders++ // the one request the run answered
		case errors.Is(errs[i], context.DeadlineExceeded):
			t.Errorf("request %d was stranded: it waited for its leader until its own deadline", i)
		case !errors.Is(errs[i], f.want):
			t.Fatalf("request %d: %v, want %v", i, errs[i], f.want)
		default:
			answered++
		}
	}
	if leaders != 1 || answered != n-1 && !t.Failed() {
		t.Errorf("%d leaders and %d requests answered %v, want 1 and %d", leaders, answered, f.want, n-1)
	}
	// The leader's slot was given back: the gate's only slot is free at once.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	leave, err := g.enterUntil(ctx, "", time.Now().Add(time.Second))
	if err != nil {
		t.Fatalf("the gate's slot after the call: %v (its leader kept it)", err)
	}
	leave()
}

// A push call whose write panics answers every request it took, frees its lane and leaves the
// flusher running: the next request on the same partition is written.
func TestCoalescerPanickingCallAnswersEveryRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hold := make(chan struct{})
		var calls []int // items per call; only the flusher that writes appends
		var mu sync.Mutex
		write := func(_ context.Context, rows []store.PushRow) ([]mq.PushResult, error) {
			mu.Lock()
			calls = append(calls, len(rows))
			first := len(calls) == 1
			mu.Unlock()
			if first {
				<-hold // the first call stays in flight while the others queue behind its lane
			} else if len(rows) > 1 {
				panic("bug in the push call")
			}
			out := make([]mq.PushResult, len(rows))
			for i, r := range rows {
				out[i] = mq.PushResult{Status: mq.StatusQueued, MessageID: r.Key}
			}
			return out, nil
		}
		var logged bytes.Buffer // written by the flusher before it answers
		c := &coalescer{write: write, maxItems: 1000, maxInflight: 2, timeout: time.Minute,
			log: slog.New(slog.NewTextHandler(&logged, nil))}
		startPart(t, c)
		row := func(key string) []store.PushRow { return []store.PushRow{{Queue: "q", Partition: "p", Key: key}} }
		var wg sync.WaitGroup
		wg.Go(func() {
			if _, err := c.submit(context.Background(), row("first")); err != nil {
				t.Errorf("first: %v", err)
			}
		})
		synctest.Wait() // the first call is in flight
		const n = 3
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() { _, errs[i] = c.submit(context.Background(), row(fmt.Sprint("r", i))) })
		}
		synctest.Wait() // the others wait for the lane
		if q := c.queued(); q != n {
			t.Fatalf("%d requests queued, want %d", q, n)
		}
		close(hold)
		wg.Wait()
		mu.Lock()
		if len(calls) != 2 || calls[1] != n {
			t.Fatalf("calls of %v items, want the queued %d in one call after the first", calls, n)
		}
		mu.Unlock()
		for i, err := range errs {
			if !errors.Is(err, errCallPanicked) {
				t.Fatalf("request %d of the panicking call: %v, want errCallPanicked", i, err)
			}
		}
		// Not swallowed: logged with where it began.
		if l := logged.String(); !strings.Contains(l, "push call panicked") || !strings.Contains(l, "bug in the push call") ||
			!strings.Contains(l, "leader_test.go") {
			t.Fatalf("the panic was not logged with its stack: %q", l)
		}
		synctest.Wait() // the flusher frees the lane after answering the requests
		c.mu.Lock()
		lanes := slices.Clone(c.laneOn)
		c.mu.Unlock()
		if slices.Contains(lanes, true) {
			t.Fatalf("lanes in flight %v after the call ended", lanes)
		}
		res, err := c.submit(context.Background(), row("after"))
		if err != nil || len(res) != 1 || res[0].MessageID != "after" {
			t.Fatalf("a request after the panicking call: %+v %v", res, err)
		}
	})
}

// panickingTracer panics once, when armed, as the span named span starts: the first thing a
// merged call's leader does once it holds the slot and has taken its requests (startDB), so the
// panic comes from the leader of a real pop, ack or transaction call.
type panickingTracer struct {
	noop.Tracer
	span  string
	armed atomic.Bool
}

func (p *panickingTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if name == p.span && p.armed.CompareAndSwap(true, false) {
		panic("tracer bug in " + name)
	}
	return p.Tracer.Start(ctx, name, opts...)
}

// strandCase is one kind of merged consumer call: how a request of it is made (request i of
// n, on ctx) and its merger's counts and pending requests.
type strandCase struct {
	span    string
	prepare func(x *tb, n int) func(ctx context.Context, i int) error
	counts  func(b *Broker) (int64, int64)
	pending func(t *testing.T, b *Broker, n int)
}

var strandCases = map[string]strandCase{
	"pop": {span: "queen.db.pop",
		prepare: func(x *tb, n int) func(context.Context, int) error {
			q := queueName(x.t)
			pushEach(x, q, n)
			return func(ctx context.Context, _ int) error {
				_, err := x.b.Pop(ctx, mq.PopRequest{Queue: q, Batch: 1})
				return err
			}
		},
		counts:  func(b *Broker) (int64, int64) { return b.pops.counts() },
		pending: func(t *testing.T, b *Broker, n int) { waitPending(t, b.pops, n) }},
	"ack": {span: "queen.db.ack",
		prepare: func(x *tb, n int) func(context.Context, int) error {
			q := queueName(x.t)
			pushEach(x, q, n)
			pops := popEach(x.t, x, q, n)
			return func(ctx context.Context, i int) error {
				m := pops[i].Messages[0]
				_, err := x.b.Ack(ctx, []mq.AckItem{{PartitionID: m.PartitionID, TransactionID: m.TransactionID,
					Group: mq.QueueMode, Status: "completed", LeaseID: pops[i].LeaseID}})
				return err
			}
		},
		counts:  func(b *Broker) (int64, int64) { return b.acks.counts() },
		pending: func(t *testing.T, b *Broker, n int) { waitPending(t, b.acks, n) }},
	"transaction": {span: "queen.db.transaction",
		prepare: func(x *tb, n int) func(context.Context, int) error {
			q := queueName(x.t)
			return func(ctx context.Context, i int) error {
				out, err := x.b.Transaction(ctx, []mq.TxnEntry{{Push: item(q, "p", fmt.Sprint("k", i), "1")}}, nil, nil)
				if err == nil && out.Rollback != "" {
					err = errors.New(out.Rollback)
				}
				return err
			}
		},
		counts:  func(b *Broker) (int64, int64) { return b.txns.counts() },
		pending: func(t *testing.T, b *Broker, n int) { waitPending(t, b.txns, n) }},
}

// The leader of a real merged pop, ack or transaction call panics after taking the requests
// queued at the consume gate: the panic reaches the leader's caller (where the HTTP layer
// answers it 500), every other request is answered errCallPanicked at once, and the gates'
// slots are free, so the same requests then succeed.
func TestMergedConsumerCallLeaderPanicStrandsNoRequest(t *testing.T) {
	for kind, c := range strandCases {
		t.Run(kind, func(t *testing.T) {
			tr := &panickingTracer{span: c.span}
			x := newBroker(t, Config{ConsumeCalls: 1, ConsumeWait: time.Hour, Tracer: tr})
			const n = 4
			do := c.prepare(x, n)
			release := holdConsumeGate(t, x)
			tr.armed.Store(true)
			calls0, reqs0 := c.counts(x.b)
			errs := make([]error, n)
			panics := make([]any, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					defer func() { panics[i] = recover() }()
					// Bounds a stranded request, so the test fails rather than hangs.
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					defer cancel()
					errs[i] = do(ctx, i)
				})
				c.pending(t, x.b, i+1)
			}
			release()
			wg.Wait()
			if calls, reqs := c.counts(x.b); calls-calls0 != 1 || reqs-reqs0 != n {
				t.Fatalf("%d requests in %d calls, want %d in one", reqs-reqs0, calls-calls0, n)
			}
			leaders := 0
			for i := range n {
				switch {
				case panics[i] != nil:
					leaders++
				case errors.Is(errs[i], context.DeadlineExceeded):
					t.Fatalf("request %d was stranded: it waited for its leader until its own deadline", i)
				case !errors.Is(errs[i], errCallPanicked):
					t.Fatalf("request %d: %v, want errCallPanicked", i, errs[i])
				}
			}
			if leaders != 1 {
				t.Fatalf("%d requests panicked, want the leader alone", leaders)
			}
			x.b.consumeGate.mu.Lock()
			held := len(x.b.consumeGate.slots)
			x.b.consumeGate.mu.Unlock()
			x.b.popGate.mu.Lock()
			held += len(x.b.popGate.slots)
			x.b.popGate.mu.Unlock()
			if held != 0 {
				t.Fatalf("%d gate slots still held after the call", held)
			}
			// Nothing was written before the panic: every request still succeeds, alone or merged.
			for i := range n {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				err := do(ctx, i)
				cancel()
				if err != nil {
					t.Fatalf("request %d again: %v", i, err)
				}
			}
		})
	}
}

// One retry policy for every merged call: retried request by request only when PostgreSQL
// itself refused the call (nothing committed, the database there); anything else, and any call
// of one request, answers every request the call's error.
func TestRetryAlonePolicy(t *testing.T) {
	pg := func(code string) error { return &pgconn.PgError{Code: code} }
	for _, c := range []struct {
		name string
		n    int
		err  error
		want bool
	}{
		{"bad input", 3, fmt.Errorf("push: %w", pg("22P02")), true},
		{"deadlock", 3, pg("40P01"), true},
		{"serialization failure", 3, pg("40001"), true},
		{"its own statement timeout", 3, errors.Join(mq.ErrUnavailable, pg("57014")), true},
		{"its own lock timeout", 3, errors.Join(mq.ErrUnavailable, pg("55P03")), true},
		{"one request", 1, pg("22P02"), false},
		{"connection lost", 3, errors.Join(mq.ErrUnavailable, pg("08006")), false},
		{"shutdown", 3, errors.Join(mq.ErrUnavailable, pg("57P01")), false},
		{"standby", 3, errors.Join(mq.ErrUnavailable, pg("25006")), false},
		{"no connection", 3, fmt.Errorf("%w: dial tcp: connection refused", mq.ErrUnavailable), false},
		{"busy", 3, mq.ErrBusy, false},
		{"answer that cannot be split", 3, errors.New("push returned 2 results for 3 items"), false},
		{"panicked", 3, panicError("bug"), false},
	} {
		if got := retryAlone(c.n, c.err); got != c.want {
			t.Errorf("%s: retryAlone(%d, %v) = %v, want %v", c.name, c.n, c.err, got, c.want)
		}
	}
}
