package budget

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// A request's waits are load: together they may last Limits.Request from when its clock
// started, with the probe asked at Limits.Connection; its calls share Limits.Request from its
// first statement, ending no later than Limits.Connection + Limits.Request after the start;
// waits after that end with the work deadline.
func TestBudgetSharesDeadlinesAcrossCalls(t *testing.T) {
	l := Limits{Connection: time.Second, Request: 10 * time.Second, Bulk: 30 * time.Second}
	ctx := Request(context.Background())
	first := l.WaitDeadline(ctx)
	begun := of(ctx).begun // the request's clock: the bounds count from it, not from now
	if d := first.Sub(begun); d != 10*time.Second {
		t.Errorf("waits may last %v, want Limits.Request (10s)", d)
	}
	if p, _ := l.WaitBounds(ctx); p.Sub(begun) != time.Second {
		t.Errorf("the probe is asked after %v, want Limits.Connection (1s)", p.Sub(begun))
	}
	time.Sleep(10 * time.Millisecond) // real elapsed time: a deadline computed anew would move
	if again := l.WaitDeadline(ctx); !again.Equal(first) {
		t.Errorf("second wait ends %v, want the first's %v", again, first)
	}
	// workWithin checks that a call made between before and after got the work deadline d from
	// its start, and no later than Limits.Connection + d after the clock started.
	workWithin := func(what string, deadline, before, after time.Time, d time.Duration, begun time.Time) {
		t.Helper()
		end := begun.Add(time.Second + d)
		lo, hi := minTime(before.Add(d), end), minTime(after.Add(d), end)
		if deadline.Before(lo) || deadline.After(hi) {
			t.Errorf("%s: work deadline %v, want %v .. %v", what, deadline, lo, hi)
		}
	}
	before := time.Now()
	wctx, cancel := l.Work(ctx)
	defer cancel()
	work, _ := wctx.Deadline()
	workWithin("first call", work, before, time.Now(), 10*time.Second, begun)
	w2, cancel2 := l.Work(ctx)
	defer cancel2()
	if d, _ := w2.Deadline(); !d.Equal(work) {
		t.Errorf("second call's work deadline %v, want the first's %v", d, work)
	}
	if d := l.WaitDeadline(ctx); d.After(work) {
		t.Errorf("a wait after the work started ends %v, after the work deadline %v", d, work)
	}
	bulk := Bulk(context.Background())
	before = time.Now()
	bctx, cancel3 := l.Work(bulk)
	defer cancel3()
	bd, _ := bctx.Deadline()
	workWithin("bulk", bd, before, time.Now(), 30*time.Second, of(bulk).begun)

	// A request that waited long gets what is left of Limits.Connection + Limits.Request.
	late := Request(context.Background())
	of(late).begun = time.Now().Add(-5 * time.Second)
	lctx, cancel4 := l.Work(late)
	defer cancel4()
	if d, _ := lctx.Deadline(); !d.Equal(of(late).begun.Add(11 * time.Second)) {
		t.Errorf("work after a 5 s wait ends %v after the request's start, want 11s (1s + 10s)", d.Sub(of(late).begun))
	}
}

// Bulk keeps the time a request already spent; WorkFor and WithWaitDeadline replace the
// deadlines they name; a context without a budget gets the limits from now.
func TestBudgetVariants(t *testing.T) {
	l := Limits{Connection: time.Second, Request: 10 * time.Second, Bulk: 30 * time.Second}
	req := Request(context.Background())
	l.WaitDeadline(req) // starts its clock
	b := Bulk(req)
	if !of(b).begun.Equal(of(req).begun) || !of(b).bulk {
		t.Errorf("bulk budget %+v does not keep the request's start %v", of(b), of(req).begun)
	}
	if !IsBulk(b) || IsBulk(req) || IsBulk(context.Background()) {
		t.Error("IsBulk does not tell the bulk budget from the others")
	}
	if d := l.WaitDeadline(b).Sub(of(req).begun); d != 30*time.Second {
		t.Errorf("a bulk request's waits may last %v, want Limits.Bulk (30s)", d)
	}
	m := WorkFor(context.Background(), time.Hour)
	wctx, cancel := l.Work(m)
	defer cancel()
	if d, _ := wctx.Deadline(); d.Sub(of(m).begun) != time.Hour {
		t.Errorf("WorkFor(1h): work deadline %v after the start", d.Sub(of(m).begun))
	}
	at := time.Now().Add(3 * time.Second)
	if got := l.WaitDeadline(WithWaitDeadline(context.Background(), at)); !got.Equal(at) {
		t.Errorf("WithWaitDeadline: waits end %v, want %v", got, at)
	}
	before := time.Now()
	if got := l.WaitDeadline(context.Background()); got.Before(before.Add(10*time.Second)) || got.After(time.Now().Add(10*time.Second)) {
		t.Errorf("no budget: waits end %v, want 10s from now", got)
	}
	if Ensure(req) != req {
		t.Error("Ensure replaced an existing budget")
	}
	if of(Ensure(context.Background())) == nil {
		t.Error("Ensure added no budget")
	}
}

// Mark records how an error answered a request; only a request's own budget carries it.
func TestMarkRecordsTheAnswer(t *testing.T) {
	busy, down, other := Request(context.Background()), Request(context.Background()), Request(context.Background())
	Mark(busy, fmt.Errorf("wrapped: %w", mq.ErrBusy))
	Mark(down, fmt.Errorf("wrapped: %w", mq.ErrUnavailable))
	Mark(other, errors.New("a client's mistake"))
	if !Overloaded(busy) || Unavailable(busy) {
		t.Error("ErrBusy was not recorded as load only")
	}
	if Overloaded(down) || !Unavailable(down) {
		t.Error("ErrUnavailable was not recorded as an outage only")
	}
	if Overloaded(other) || Unavailable(other) {
		t.Error("another error was recorded")
	}
	Mark(context.Background(), mq.ErrBusy) // no budget: nothing to record, no panic
	if Overloaded(context.Background()) {
		t.Error("a context without a budget reports load")
	}
}
