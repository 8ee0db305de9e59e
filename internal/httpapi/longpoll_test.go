package httpapi_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testkit"
	"github.com/queen-go/queen/internal/testserver"
	"github.com/queen-go/queen/internal/waiter"
)

// Long-poll wire tests (docs/api/operations.md §3): the wait and timeout parameters, and a client that
// goes away. The wake-up rules (push, ack, NOTIFY, fallback poll) are tested where they live,
// in internal/broker (longpoll_test.go there).

// lpResult is the outcome of a pop run in the background.
type lpResult struct {
	p    popped
	ok   bool
	err  error
	done time.Time
}

// lpPop runs a pop in the background.
func lpPop(ctx context.Context, api *ccAPI, path string) <-chan lpResult {
	ch := make(chan lpResult, 1)
	go func() {
		p, ok, err := api.pop(ctx, path)
		ch <- lpResult{p: p, ok: ok, err: err, done: time.Now()}
	}()
	return ch
}

// lpWaitParked waits until srv has exactly n parked pops.
func lpWaitParked(t *testing.T, srv *testserver.Server, n int) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, 2*time.Millisecond, func() error {
		if got := srv.Broker.Hub().Parked(); got != n {
			return fmt.Errorf("parked pops: %d, want %d", got, n)
		}
		return nil
	})
}

// lpWaitIdle waits until srv has exactly n parked pops between attempts, waiting for a
// wake-up: a pop counts once its first attempt found nothing.
func lpWaitIdle(t *testing.T, srv *testserver.Server, n int) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, 2*time.Millisecond, func() error {
		if got := srv.Broker.Hub().Idle(); got != n {
			return fmt.Errorf("idle parked pops: %d, want %d", got, n)
		}
		return nil
	})
}

// lpParkedPop starts a long poll on srv and returns once its first attempt found nothing and
// it waits for a wake-up, so that a write made afterwards can only reach it as a wake-up.
func lpParkedPop(t *testing.T, srv *testserver.Server, api *ccAPI, path string) <-chan lpResult {
	t.Helper()
	before := srv.Broker.Hub().Idle()
	ch := lpPop(context.Background(), api, path)
	lpWaitIdle(t, srv, before+1)
	select {
	case r := <-ch:
		t.Fatalf("pop answered before any write: %+v", r)
	default:
	}
	return ch
}

// lpWaitListening waits until listener's notification listener receives the NOTIFY of pushes
// made through pusher (each instance LISTENs in the background from its start). It parks a
// label filter directly in the hub: only a NOTIFY carries labels, so a local wake-up cannot
// satisfy it.
func lpWaitListening(t *testing.T, listener *testserver.Server, pusher *ccAPI) {
	t.Helper()
	ns := fmt.Sprintf("lpwarm%d", time.Now().UnixNano())
	w := listener.Broker.Hub().Park(waiter.Filter{Namespace: ns, ByLabels: true})
	defer w.Leave()
	for range 50 {
		if _, err := pusher.push(context.Background(), obj{"queue": ns + ".warm", "payload": nil}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-w.C:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatal("the notification listener never received a wake-up")
}

// A parked pop with nothing to deliver answers 204 at its deadline (counted from arrival, and
// kept when a wake-up finds nothing for it); timeout=0 is a single attempt. The fallback poll
// is a minute, and DEFAULT_TIMEOUT 30 s: a pop that ignored its timeout would answer long
// after the upper bounds below, which leave ample room for a loaded machine.
func TestLongPollTimeout(t *testing.T) {
	b := ccSetup(t, testserver.Options{PollInitial: time.Minute, PollMax: time.Minute})
	api := newCCAPI(t, b.srv.URL)
	b.push("p1", obj{"payload": 0})
	if _, ok := b.pop("/api/v1/pop/queue/" + b.queue + "?autoAck=true"); !ok {
		t.Fatal("setup pop found nothing")
	}
	const ignored = 20 * time.Second // well before DEFAULT_TIMEOUT or a fallback poll
	timed := func(path string) (time.Duration, lpResult) {
		ctx, cancel := context.WithTimeout(context.Background(), ignored)
		defer cancel()
		start := time.Now()
		r := <-lpPop(ctx, api, path)
		return time.Since(start), r
	}

	d, r := timed("/api/v1/pop/queue/" + b.queue + "?wait=true&timeout=700")
	if r.err != nil || r.ok || d < 700*time.Millisecond {
		t.Fatalf("timeout=700: ok=%v err=%v after %v, want 204 no sooner than 700ms", r.ok, r.err, d)
	}
	t.Logf("timeout=700 answered 204 after %v", d.Round(time.Millisecond))

	if d, r = timed("/api/v1/pop/queue/" + b.queue + "?wait=true&timeout=0"); r.err != nil || r.ok {
		t.Fatalf("timeout=0: ok=%v err=%v after %v, want 204 at once", r.ok, r.err, d)
	}

	// Parked on partition p1; a push to p2 of the same queue wakes it, it finds nothing and
	// parks again with its original deadline: it answers no sooner than that deadline, and
	// before the deadline a wake-up would have set (the push comes half the timeout late).
	const timeout = 3 * time.Second
	start := time.Now()
	ch := lpParkedPop(t, b.srv, api, fmt.Sprintf("/api/v1/pop/queue/%s/partition/p1?wait=true&timeout=%d", b.queue, timeout.Milliseconds()))
	// Real elapsed time, not an ordering (the pop is idle already): a deadline set anew by the
	// wake-up would lie timeout/2 after the original one.
	time.Sleep(time.Until(start.Add(timeout / 2)))
	pushed := time.Now()
	b.push("p2", obj{"payload": 2, "transactionId": "other"})
	r = <-ch
	d = time.Since(start)
	if r.err != nil || r.ok || d < timeout || d >= pushed.Sub(start)+timeout {
		t.Fatalf("re-parked pop: ok=%v err=%v after %v, want 204 from %v on, before %v (a deadline set at the wake-up)",
			r.ok, r.err, d, timeout, pushed.Sub(start)+timeout)
	}
	lpWaitParked(t, b.srv, 0)
	if p, ok := b.pop("/api/v1/pop/queue/" + b.queue + "/partition/p2"); !ok || p.Messages[0].TransactionID != "other" {
		t.Fatalf("p2 message: %+v", p)
	}
}

// A client that disconnects drops its parked pop; the pop claims nothing afterwards.
func TestLongPollClientDisconnect(t *testing.T) {
	b := ccSetup(t, testserver.Options{})
	api := newCCAPI(t, b.srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := lpPop(ctx, api, "/api/v1/pop/queue/"+b.queue+"?wait=true&timeout=30000&consumerGroup=g")
	lpWaitParked(t, b.srv, 1)
	cancel()
	if r := <-ch; r.err == nil {
		t.Fatalf("cancelled pop answered %+v", r)
	}
	lpWaitParked(t, b.srv, 0)

	// A later message goes to a live consumer, not to the dropped pop.
	b.push("", obj{"payload": 1, "transactionId": "after"})
	if p, ok := b.pop("/api/v1/pop/queue/" + b.queue + "?consumerGroup=g"); !ok || p.Messages[0].TransactionID != "after" || p.Messages[0].RetryCount != 0 {
		t.Fatalf("pop after disconnect %+v", p)
	}
}

// lpRequireWoken requires the background pop to answer 200 with the one message key within
// 10 s of the write (push or ack) that returned at wrote: a bound, not a latency claim, so the
// server's fallback poll must be far longer (the callers set it to 30 s or more).
func lpRequireWoken(t *testing.T, ch <-chan lpResult, wrote time.Time, key string) popped {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil || !r.ok {
			t.Fatalf("woken pop: ok=%v err=%v", r.ok, r.err)
		}
		if len(r.p.Messages) != 1 || r.p.Messages[0].TransactionID != key {
			t.Fatalf("woken pop delivered %+v, want %s", r.p.Messages, key)
		}
		t.Logf("answered %v after the write returned", r.done.Sub(wrote).Round(time.Microsecond))
		return r.p
	case <-time.After(10 * time.Second):
		t.Fatal("parked pop not woken by the write within 10s (its fallback poll is far later)")
	}
	return popped{}
}
