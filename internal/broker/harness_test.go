package broker

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/pgtest"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/testkit"
	"github.com/queen-go/queen/internal/waiter"
)

// The broker's tests run against a real PostgreSQL: pgtest gives the package a fresh
// database, migrated once here; tests keep apart by queue names of their own.

var testDSN string

func TestMain(m *testing.M) {
	pgtest.Main(m, func(dsn string) int {
		ctx := context.Background()
		st, err := store.Open(ctx, store.Options{DSN: dsn, MaxConns: 2, ConnectTimeout: 30 * time.Second})
		if err != nil {
			fmt.Fprintln(os.Stderr, "open store:", err)
			return 1
		}
		err = st.Migrate(ctx)
		st.Close()
		if err != nil {
			fmt.Fprintln(os.Stderr, "migrate:", err)
			return 1
		}
		testDSN = dsn
		return m.Run()
	})
}

// slowPoll makes the fallback poll of a parked pop far longer than any test waits, so a pop
// that answers within the test's bound was woken by a signal.
var slowPoll = Config{PollInitial: time.Hour, PollMax: time.Hour}

// wakeBound bounds how long a test waits for a wake-up (the fallback poll is an hour away).
const wakeBound = 10 * time.Second

// tb is one broker instance over the package database: its store, hub and broker.
type tb struct {
	t  *testing.T
	st *store.Store
	b  *Broker
}

// newBroker builds a broker over a small store of its own; everything closes when the test
// ends (the hub first, so parked pops answer).
func newBroker(t *testing.T, cfg Config) *tb {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{DSN: testDSN, MaxConns: 6, ConnectTimeout: 30 * time.Second,
		StatementTimeout: 30 * time.Second, LockTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	hub := waiter.NewHub()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if cfg.PushCalls == 0 {
		cfg.PushCalls = 4
	}
	cfg.WithoutListener = true // listen() starts it for the tests that want one
	b := New(st, hub, cfg, log)
	if err := b.Start(ctx); err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(func() {
		hub.Close()
		b.Stop()
		st.Close()
	})
	return &tb{t: t, st: st, b: b}
}

// listen runs the broker's notification listener until the test ends.
func (x *tb) listen() {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); x.b.listen(ctx) }()
	x.t.Cleanup(func() { cancel(); wg.Wait() })
}

var queueSeq atomic.Int64

// queueName returns a queue name no other test uses.
func queueName(t *testing.T) string {
	return fmt.Sprintf("bt-%d-%d", time.Now().UnixNano(), queueSeq.Add(1))
}

// push pushes items, failing the test unless each is queued.
func (x *tb) push(items ...mq.PushItem) []mq.PushResult {
	x.t.Helper()
	res, err := x.b.Push(context.Background(), items, nil)
	if err != nil {
		x.t.Fatalf("push: %v", err)
	}
	for i, r := range res {
		if r.Status != mq.StatusQueued {
			x.t.Fatalf("push item %d: %+v", i, r)
		}
	}
	return res
}

// item is a push item of queue with a JSON payload.
func item(queue, partition, key, payload string) mq.PushItem {
	return mq.PushItem{Queue: queue, Partition: partition, TransactionID: key, Payload: []byte(payload)}
}

// pop runs one pop without waiting.
func (x *tb) pop(r mq.PopRequest) mq.PopResult {
	x.t.Helper()
	res, err := x.b.Pop(context.Background(), r)
	if err != nil {
		x.t.Fatalf("pop: %v", err)
	}
	return res
}

// ackOne acks the first message of a pop answer with status for group ("" is queue mode).
func (x *tb) ackOne(p mq.PopResult, group, status string) mq.AckResult {
	x.t.Helper()
	if group == "" {
		group = mq.QueueMode
	}
	m := p.Messages[0]
	res, err := x.b.Ack(context.Background(), []mq.AckItem{{PartitionID: m.PartitionID, TransactionID: m.TransactionID,
		Group: group, Status: status, LeaseID: p.LeaseID}})
	if err != nil {
		x.t.Fatalf("ack: %v", err)
	}
	return res[0]
}

// popResult is the outcome of a pop run in the background.
type popResult struct {
	res mq.PopResult
	err error
}

// parkedPop starts a long poll of r (Wait set, deadline a minute away) and returns once it is
// parked AND its first attempt has found nothing, so that a write made afterwards can reach it
// only as a wake-up (or by the fallback poll). It knows the first attempt is over by holding
// the pop's gate: the gate of r's group gets two slots, both held by the test; one is given to
// the pop, and the test takes it back once the pop has been inside and left.
func (x *tb) parkedPop(r mq.PopRequest) <-chan popResult {
	x.t.Helper()
	r.Wait, r.Deadline = true, time.Now().Add(time.Minute)
	// The slot's channel is unbuffered: the pop's first attempt enters the gate exactly when
	// the test receives, and leaves it exactly when the test sends. So the test knows the first
	// attempt (which finds nothing) is over before it writes, however fast or slow it ran.
	ch := make(chan struct{})
	key := gateKeyOf(r)
	g := x.b.popGate
	g.mu.Lock()
	if g.slots == nil {
		g.slots = map[string]*gateSlot{}
	}
	if old := g.slots[key]; old != nil {
		g.mu.Unlock()
		x.t.Fatalf("gate of %q in use", key)
	}
	// The test counts as a user of the slot, so it outlives the pop's visits.
	g.slots[key] = &gateSlot{ch: ch, users: 1}
	g.mu.Unlock()
	before := x.b.Hub().Parked()
	out := make(chan popResult, 1)
	go func() {
		res, err := x.b.Pop(context.Background(), r)
		out <- popResult{res, err}
	}()
	x.waitParked(before + 1)
	handshake := func(step string, op func() bool) {
		x.t.Helper()
		if !op() {
			select {
			case p := <-out:
				x.t.Fatalf("%s: pop answered %+v %v", step, p.res, p.err)
			default:
				x.t.Fatalf("%s: not within a minute", step)
			}
		}
	}
	handshake("first attempt entering the gate", func() bool {
		select {
		case <-ch:
			return true
		case <-time.After(time.Minute):
			return false
		}
	})
	handshake("first attempt leaving the gate", func() bool {
		select {
		case ch <- struct{}{}:
			return true
		case <-time.After(time.Minute):
			return false
		}
	})
	// A later attempt may still find this slot (the test has not released it yet) and would
	// block on the unbuffered channel: let such attempts through, one at a time, as the gate
	// would.
	done := make(chan struct{})
	x.t.Cleanup(func() { close(done) })
	go func() {
		for {
			select {
			case <-ch: // an attempt entered
			case <-done:
				return
			}
			select {
			case ch <- struct{}{}: // and left
			case <-done:
				return
			}
		}
	}()
	g.mu.Lock()
	slot := g.slots[key]
	g.mu.Unlock()
	g.release(key, slot) // the test is no longer a user: the slot goes with the pop
	select {
	case p := <-out:
		x.t.Fatalf("pop answered before any write: %+v %v", p.res, p.err)
	default:
	}
	return out
}

// gateKeyOf is the pop gate's key of a request (as pop builds it).
func gateKeyOf(r mq.PopRequest) string {
	group := r.Group
	if group == "" {
		group = mq.QueueMode
	}
	return r.Queue + "\x00" + r.Partition + "\x00" + r.Namespace + "\x00" + r.Task + "\x00" + group
}

// waitParked waits until the broker has exactly n parked pops.
func (x *tb) waitParked(n int) {
	x.t.Helper()
	testkit.Eventually(x.t, 30*time.Second, 2*time.Millisecond, func() error {
		if got := x.b.Hub().Parked(); got != n {
			return fmt.Errorf("parked pops: %d, want %d", got, n)
		}
		return nil
	})
}

// requireWoken requires the background pop to deliver exactly the message key within
// wakeBound (a bound, not a latency claim: the fallback poll is an hour away).
func requireWoken(t *testing.T, ch <-chan popResult, key string) mq.PopResult {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("woken pop: %v", r.err)
		}
		if len(r.res.Messages) != 1 || r.res.Messages[0].TransactionID != key {
			t.Fatalf("woken pop delivered %+v, want %s", r.res.Messages, key)
		}
		return r.res
	case <-time.After(wakeBound):
		t.Fatalf("parked pop not woken within %v (its fallback poll is an hour away)", wakeBound)
	}
	return mq.PopResult{}
}

// waitListening waits until listener's notification listener relays the NOTIFY of pushes made
// through pusher. It parks a label filter directly in the hub: only a NOTIFY carries labels,
// so a local wake-up cannot satisfy it.
func waitListening(t *testing.T, listener, pusher *tb) {
	t.Helper()
	ns := fmt.Sprintf("warm%d", queueSeq.Add(1))
	w := listener.b.Hub().Park(waiter.Filter{Namespace: ns, ByLabels: true})
	defer w.Leave()
	for range 100 {
		pusher.push(item(ns+".warm", "", "", "null"))
		select {
		case <-w.C:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatal("the notification listener never relayed a wake-up")
}

// rawDB is a small pool on the package database in the broker's schema, for tests that read
// what was stored.
func rawDB(t testing.TB) *pgxpool.Pool { return pgtest.RawPool(t, testDSN) }
