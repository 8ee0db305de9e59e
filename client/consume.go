package queen

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Handler processes one message. Returning nil acks it completed; returning an error acks it
// failed with the error's text as the reason (AckAs chooses another status). The context is
// not cancelled when Consume is asked to stop, so the message in hand is finished and acked;
// it is cancelled, with cause ErrLeaseLost, when the lease could not be kept.
type Handler func(ctx context.Context, m *Message) error

// AckAs makes a handler's error ack the message with status s (AckRetry, AckDLQ, …) instead of
// AckFailed. AckAs(AckCompleted, nil) is a success.
func AckAs(s AckStatus, err error) error { return &statusError{status: s, err: err} }

type statusError struct {
	status AckStatus
	err    error
}

// Error is the handler's error text, which becomes the ack's reason.
func (e *statusError) Error() string {
	if e.err == nil {
		return string(e.status)
	}
	return e.err.Error()
}

// Unwrap returns the handler's error.
func (e *statusError) Unwrap() error { return e.err }

// ConsumeOptions tune Consume. The zero value is one worker handling one message at a time
// in queue mode, until the context is cancelled.
type ConsumeOptions struct {
	// Concurrency is the number of workers popping and handling in parallel (default 1).
	// Each holds its own lease, so the messages of one partition stay in order.
	Concurrency int
	// BatchSize is the most messages one pop delivers (default 1).
	BatchSize int
	// ConsumerGroup, SubscriptionMode, SubscriptionFrom and Partitions are as in PopOptions.
	ConsumerGroup    string
	SubscriptionMode SubscriptionMode
	SubscriptionFrom string
	Partitions       int
	// AutoAck pops with the broker's autoAck: messages are consumed as they are delivered,
	// nothing is acked or renewed, delivery is at most once. Handler errors are only reported.
	AutoAck bool
	// ManualAck leaves the ack of a successfully handled message to the handler, typically
	// inside a Transaction that also pushes the message's output. A handler error is still
	// acked failed by Consume; leases are still renewed and released on stop.
	ManualAck bool
	// PollWait is how long one pop long-polls (default 30 s).
	PollWait time.Duration
	// IdleTimeout makes Consume return once no message has arrived for this long (0: never).
	IdleTimeout time.Duration
	// Limit makes Consume return after this many messages were handled (0: no limit).
	Limit int
	// RenewAfter is how long a batch may be in hand before its lease is first extended
	// (default 500 ms, short enough for the shortest lease of 1 s). Fast handlers never
	// trigger a renewal.
	RenewAfter time.Duration
	// ExtendBy is how far each renewal pushes the expiry (default 30 s, at least 1 s);
	// renewals repeat every ExtendBy/2 while the batch is in hand.
	ExtendBy time.Duration
	// DisableRenewal turns lease renewal off.
	DisableRenewal bool
	// OnError receives the failures Consume survives, each a *ConsumeError: handler errors,
	// failed acks and renewals, pop errors it retries. Calls may be concurrent.
	OnError func(error)
}

// ConsumeError is one failure reported to ConsumeOptions.OnError.
type ConsumeError struct {
	Op      string   // "pop", "handle", "ack", "renew" or "release"
	Message *Message // nil for "pop" and "renew"
	Err     error
}

// Error describes the failure.
func (e *ConsumeError) Error() string {
	if e.Message != nil {
		return fmt.Sprintf("queen: consume %s of message %s: %v", e.Op, e.Message.TransactionID, e.Err)
	}
	return fmt.Sprintf("queen: consume %s: %v", e.Op, e.Err)
}

// Unwrap returns the cause.
func (e *ConsumeError) Unwrap() error { return e.Err }

// consumer is one running Consume call.
type consumer struct {
	q      Queue
	h      Handler
	o      ConsumeOptions
	stop   context.CancelCauseFunc // ends every worker's loop (idle, limit, fatal error)
	last   atomic.Int64            // unix nanos of the last delivery or handled message
	budget *budget                 // nil without Limit

	errMu sync.Mutex
	fatal error
}

// Consume pops and handles messages of the queue (of its partition, when narrowed) until ctx
// is cancelled, IdleTimeout passes without a message, or Limit messages were handled. Each
// message is acked completed when the handler succeeds and failed (with the error) when it
// does not; leases of long handlers are extended before they expire.
//
// Stopping is graceful: no new batch is popped, the message in hand is finished and acked,
// and the rest of its batch is released with a retry ack so it is delivered again at once,
// neither lost nor acked twice. Consume returns nil when it stopped for one of those reasons,
// and an error only when it cannot go on (a 4xx pop answer: bad options, authentication).
func (q Queue) Consume(ctx context.Context, h Handler, o ConsumeOptions) error {
	if q.name == "" || h == nil {
		return errors.New("queen: consume needs a queue name and a handler")
	}
	o = o.withDefaults()
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	cs := &consumer{q: q, h: h, o: o, stop: stop}
	if o.Limit > 0 {
		cs.budget = &budget{left: o.Limit}
	}
	cs.touch()
	var wg sync.WaitGroup
	for range o.Concurrency {
		wg.Add(1)
		go func() { defer wg.Done(); cs.work(ctx) }()
	}
	wg.Wait()
	cs.errMu.Lock()
	defer cs.errMu.Unlock()
	return cs.fatal
}

func (o ConsumeOptions) withDefaults() ConsumeOptions {
	o.Concurrency = max(o.Concurrency, 1)
	o.BatchSize = max(o.BatchSize, 1)
	if o.PollWait <= 0 {
		o.PollWait = 30 * time.Second
	}
	if o.RenewAfter <= 0 {
		o.RenewAfter = 500 * time.Millisecond
	}
	switch {
	case o.ExtendBy <= 0:
		o.ExtendBy = 30 * time.Second
	case o.ExtendBy < time.Second:
		o.ExtendBy = time.Second // the broker counts whole seconds
	}
	return o
}

// work is one worker: pop, handle, repeat.
func (cs *consumer) work(ctx context.Context) {
	failures := 0
	for ctx.Err() == nil {
		wait, ok := cs.pollWait()
		if !ok {
			cs.stop(nil) // idle for IdleTimeout
			return
		}
		n := cs.o.BatchSize
		if cs.budget != nil {
			if n = cs.budget.take(n); n == 0 {
				return // the other workers hold what is left of the limit
			}
		}
		b, err := cs.q.Pop(ctx, PopOptions{Batch: n, Wait: wait, ConsumerGroup: cs.o.ConsumerGroup,
			SubscriptionMode: cs.o.SubscriptionMode, SubscriptionFrom: cs.o.SubscriptionFrom,
			AutoAck: cs.o.AutoAck, Partitions: cs.o.Partitions})
		if err != nil {
			cs.budget.giveBack(n)
			if ctx.Err() != nil {
				return
			}
			if he := (*HTTPError)(nil); errors.As(err, &he) && !he.Temporary() {
				cs.fail(err)
				return
			}
			cs.report("pop", nil, err)
			failures++
			_ = sleep(ctx, cs.q.c.retry.delay(failures))
			continue
		}
		failures = 0
		cs.budget.giveBack(n - len(b.Messages))
		if b.Empty() {
			continue
		}
		cs.touch()
		cs.handleBatch(ctx, b)
		if cs.budget.exhausted() {
			cs.stop(nil)
		}
	}
}

// pollWait is the long-poll time of the next pop, shortened to what is left of IdleTimeout;
// false when the consumer has been idle for IdleTimeout.
func (cs *consumer) pollWait() (time.Duration, bool) {
	if cs.o.IdleTimeout <= 0 {
		return cs.o.PollWait, true
	}
	left := cs.o.IdleTimeout - time.Since(time.Unix(0, cs.last.Load()))
	if left < time.Millisecond {
		return 0, false
	}
	return min(cs.o.PollWait, left), true
}

func (cs *consumer) touch() { cs.last.Store(time.Now().UnixNano()) }

// fail ends the consumer with err.
func (cs *consumer) fail(err error) {
	cs.errMu.Lock()
	if cs.fatal == nil {
		cs.fatal = err
	}
	cs.errMu.Unlock()
	cs.stop(err)
}

// report hands a survived failure to OnError and the client's logger.
func (cs *consumer) report(op string, m *Message, err error) {
	ce := &ConsumeError{Op: op, Message: m, Err: err}
	cs.q.c.log.Warn("queen: consumer", "queue", cs.q.name, "op", op, "err", err)
	if cs.o.OnError != nil {
		cs.o.OnError(ce)
	}
}

// budget counts down ConsumeOptions.Limit. Workers reserve before they pop, so the broker
// never delivers (and leases) more than the limit, and give back what they did not handle.
type budget struct {
	mu       sync.Mutex
	left     int // neither handled nor reserved
	reserved int
}

// take reserves up to n messages; 0 when the limit is used up or held by other workers.
func (b *budget) take(n int) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n = min(n, b.left)
	b.left -= n
	b.reserved += n
	return n
}

// giveBack returns reserved messages that were not handled. A nil budget is unlimited.
func (b *budget) giveBack(n int) {
	if b == nil || n <= 0 {
		return
	}
	b.mu.Lock()
	b.left += n
	b.reserved -= n
	b.mu.Unlock()
}

// done turns one reservation into a handled message.
func (b *budget) done() {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.reserved--
	b.mu.Unlock()
}

// exhausted reports that every message of the limit was handled.
func (b *budget) exhausted() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.left == 0 && b.reserved == 0
}
