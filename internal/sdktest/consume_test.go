package sdktest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	queen "github.com/queen-go/queen/client"
)

// seen collects what handlers saw, safely across workers.
type seen struct {
	mu   sync.Mutex
	nums []int
	msgs []*queen.Message
}

func (s *seen) add(t testing.TB, m *queen.Message) int {
	n := payloadOf(t, m)
	s.mu.Lock()
	s.nums = append(s.nums, n)
	s.msgs = append(s.msgs, m)
	s.mu.Unlock()
	return n
}

func (s *seen) list() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.nums)
}

// failOnError makes every survived consumer failure fail the test.
func failOnError(t *testing.T) func(error) {
	return func(err error) { t.Errorf("OnError: %v", err) }
}

func TestConsumeAcksCompletedAndFailed(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	q := createQueue(t, c, queen.RetryLimit(3), queen.RetryDelay(0))
	mustPush(t, q, numbered(5)...)
	var s seen
	var errs atomic.Int32
	err := q.Consume(testCtx(t), func(ctx context.Context, m *queen.Message) error {
		if n := s.add(t, m); n == 2 && m.RetryCount == 0 {
			return errors.New("transient")
		}
		return nil
	}, queen.ConsumeOptions{BatchSize: 5, IdleTimeout: 700 * time.Millisecond, OnError: func(err error) {
		var ce *queen.ConsumeError
		if !errors.As(err, &ce) || ce.Op != "handle" || ce.Message == nil {
			t.Errorf("unexpected failure: %v", err)
		}
		errs.Add(1)
	}})
	if err != nil {
		t.Fatal(err)
	}
	// The failed ack released the batch: 3 and 4 were not handled the first time, and the
	// redelivery starts at 2 with a counted failure.
	if got, want := s.list(), []int{0, 1, 2, 2, 3, 4}; !slices.Equal(got, want) {
		t.Fatalf("handled %v, want %v", got, want)
	}
	if s.msgs[3].RetryCount != 1 || errs.Load() != 1 {
		t.Fatalf("retryCount %d, errors %d", s.msgs[3].RetryCount, errs.Load())
	}
	if b, _ := q.Pop(testCtx(t), queen.PopOptions{}); !b.Empty() {
		t.Fatalf("left over: %+v", b.Messages)
	}
}

func TestConsumeAckAsAndPanics(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	q := createQueue(t, c, queen.RetryLimit(0))
	mustPush(t, q, numbered(4)...)
	var s seen
	var reported atomic.Int32
	err := q.Consume(testCtx(t), func(ctx context.Context, m *queen.Message) error {
		switch s.add(t, m) {
		case 0:
			return queen.AckAs(queen.AckDLQ, errors.New("poison"))
		case 1:
			panic("bad message")
		case 2:
			return queen.AckAs(queen.AckCompleted, nil)
		}
		return nil
	}, queen.ConsumeOptions{BatchSize: 4, Limit: 4, OnError: func(error) { reported.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	// dlq and an exhausted failure dead-letter without releasing the lease: the batch goes on.
	if got := s.list(); !slices.Equal(got, []int{0, 1, 2, 3}) || reported.Load() != 2 {
		t.Fatalf("handled %v, reported %d", got, reported.Load())
	}
	page, err := q.DLQ(testCtx(t), queen.DLQQuery{})
	skipIfUnsupported(t, err, "GET /api/v1/dlq")
	if err != nil || page.Total != 2 {
		t.Fatalf("DLQ: %v %+v", err, page)
	}
	reasons := []string{page.Messages[0].ErrorMessage, page.Messages[1].ErrorMessage}
	slices.Sort(reasons)
	if reasons[0] != "poison" || reasons[1] != "queen: handler panicked: bad message" {
		t.Fatalf("reasons %q", reasons)
	}
}

func TestConsumerSurvivesLeaseLongerThanLeaseTime(t *testing.T) {
	t.Parallel()
	rec := &recorder{path: "/api/v1/ack"}
	c := newClient(t, queen.WithHTTPClient(&http.Client{Transport: rec}))
	q := createQueue(t, c, queen.LeaseTime(time.Second))
	mustPush(t, q, map[string]int{"n": 1})
	ctx := testCtx(t)

	// A second consumer keeps trying to take the message while the first one works on it.
	rival := newClient(t)
	stopRival := make(chan struct{})
	rivalDone := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stopRival:
				rivalDone <- nil
				return
			case <-time.After(150 * time.Millisecond):
			}
			b, err := rival.Queue(q.Name()).Pop(ctx, queen.PopOptions{})
			if err != nil || !b.Empty() {
				rivalDone <- fmt.Errorf("rival popped %v (err %v): the lease was not kept", b, err)
				return
			}
		}
	}()

	var handled atomic.Int32
	err := q.Consume(ctx, func(hctx context.Context, m *queen.Message) error {
		handled.Add(1)
		select {
		case <-time.After(3 * time.Second): // three lease times
			return nil
		case <-hctx.Done():
			return context.Cause(hctx)
		}
	}, queen.ConsumeOptions{Limit: 1, RenewAfter: 300 * time.Millisecond, ExtendBy: 2 * time.Second,
		OnError: failOnError(t)})
	if err != nil {
		t.Fatal(err)
	}
	close(stopRival)
	if err := <-rivalDone; err != nil {
		t.Fatal(err)
	}
	if handled.Load() != 1 {
		t.Fatalf("handled %d times", handled.Load())
	}
	acks := rec.acks(t)
	if len(acks) != 1 || acks[0]["status"] != "completed" || acks[0]["leaseId"] == "" {
		t.Fatalf("acks sent: %v", acks)
	}
	// The ack succeeded (OnError saw nothing) and the message is consumed: it does not come
	// back once the lease time has passed again.
	time.Sleep(1200 * time.Millisecond) // real elapsed time, not an ordering: the lease time passes
	if b, err := rival.Queue(q.Name()).Pop(ctx, queen.PopOptions{}); err != nil || !b.Empty() {
		t.Fatalf("redelivered after the ack: %v %+v", err, b)
	}
}

func TestConsumeLostLeaseCancelsTheHandler(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	q := createQueue(t, c, queen.LeaseTime(time.Second))
	mustPush(t, q, map[string]int{"n": 1})
	var cause atomic.Value
	var ops sync.Map
	err := q.Consume(testCtx(t), func(hctx context.Context, m *queen.Message) error {
		<-hctx.Done()
		cause.Store(context.Cause(hctx))
		return nil
	}, queen.ConsumeOptions{Limit: 1, RenewAfter: 1500 * time.Millisecond, // after the 1 s lease ran out
		OnError: func(err error) {
			var ce *queen.ConsumeError
			if errors.As(err, &ce) {
				ops.Store(ce.Op, err)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := cause.Load().(error); !errors.Is(got, queen.ErrLeaseLost) {
		t.Fatalf("handler context cause = %v", got)
	}
	if _, ok := ops.Load("renew"); !ok {
		t.Fatal("lost lease not reported")
	}
	if _, ok := ops.Load("ack"); ok {
		t.Fatal("a message whose lease was lost was acked")
	}
	// Not acked, so delivered again.
	if b, _ := q.Pop(testCtx(t), queen.PopOptions{Wait: wait}); len(b.Messages) != 1 {
		t.Fatalf("not redelivered: %+v", b)
	}
}
