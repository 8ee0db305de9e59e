package queen

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// handleBatch runs the handler over one popped batch, in order, acking each message. ctx is
// the consumer's: once it ends, the message in hand is finished and the rest released.
func (cs *consumer) handleBatch(ctx context.Context, b *Batch) {
	// The handler and the acks outlive a stop request, so that the message in hand is
	// finished and settled; only a lost lease cancels the handler.
	hctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	if b.LeaseID != "" && !cs.o.DisableRenewal {
		stopRenew := cs.renew(hctx, b.LeaseID, cancel)
		defer stopRenew()
	}
	// settled holds the partitions whose remaining messages must not be handled: their lease
	// was released by a failure (they will be delivered again) or lost.
	settled := map[string]bool{}
	for i, m := range b.Messages {
		if settled[m.PartitionID] {
			cs.budget.giveBack(1)
			continue
		}
		if errors.Is(context.Cause(hctx), ErrLeaseLost) {
			cs.budget.giveBack(len(b.Messages) - i)
			return // the broker redelivers the batch; nothing here may be acked
		}
		if ctx.Err() != nil && !cs.o.AutoAck {
			cs.release(hctx, b.Messages[i:], settled)
			return
		}
		err := cs.call(hctx, m)
		cs.budget.done()
		cs.touch()
		if cs.o.AutoAck {
			if err != nil {
				cs.report("handle", m, err)
			}
			continue
		}
		if errors.Is(context.Cause(hctx), ErrLeaseLost) {
			cs.budget.giveBack(len(b.Messages) - i - 1)
			return
		}
		if cs.o.ManualAck && err == nil {
			continue
		}
		if !cs.settle(hctx, m, err) {
			settled[m.PartitionID] = true
		}
	}
}

// call runs the handler, turning a panic into an error so one bad message cannot take the
// whole consumer down (it is acked failed like any other error).
func (cs *consumer) call(ctx context.Context, m *Message) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("queen: handler panicked: %v", r)
		}
	}()
	return cs.h(ctx, m)
}

// settle acks m according to the handler's error. It reports false when the rest of m's
// partition in this batch must be skipped: the ack released the lease (a failed or retry
// ack is a release point, its batch is delivered again) or the ack was rejected.
func (cs *consumer) settle(ctx context.Context, m *Message, herr error) bool {
	status, reason := AckCompleted, ""
	if herr != nil {
		status, reason = AckFailed, herr.Error()
		if se := (*statusError)(nil); errors.As(herr, &se) {
			status = se.status
			if se.err == nil {
				reason = ""
			}
		}
		if status != AckCompleted {
			cs.report("handle", m, herr)
		}
	}
	res, err := cs.q.c.Ack(ctx, m.Ack(status).WithError(reason))
	switch {
	case err != nil:
		// Outcome unknown. A completed ack may be followed by the next one (acking it
		// consumes this one too); after any other status the batch must not move on.
		cs.report("ack", m, err)
		return status == AckCompleted
	case !res.OK():
		cs.report("ack", m, fmt.Errorf("%s: %s", res.Outcome, res.Error))
		return false
	}
	return status == AckCompleted || !res.LeaseReleased
}

// release hands the unhandled rest of a batch back with a retry ack on the first remaining
// message of each partition: that releases the lease for immediate redelivery from there,
// without counting a failure. Nothing it releases was acked, so nothing is acked twice.
func (cs *consumer) release(ctx context.Context, rest []*Message, settled map[string]bool) {
	var acks []Ack
	var first []*Message
	for _, m := range rest {
		cs.budget.giveBack(1)
		if !settled[m.PartitionID] {
			settled[m.PartitionID] = true
			acks = append(acks, m.Ack(AckRetry))
			first = append(first, m)
		}
	}
	if len(acks) == 0 {
		return
	}
	res, err := cs.q.c.AckBatch(ctx, acks...)
	if err != nil {
		// The leases expire on their own and the messages come back then: late, not lost.
		cs.report("release", first[0], err)
		return
	}
	for i, r := range res {
		if !r.OK() && i < len(first) {
			cs.report("release", first[i], fmt.Errorf("%s: %s", r.Outcome, r.Error))
		}
	}
}

// renew extends the batch's lease while it is in hand: first after RenewAfter, then every
// ExtendBy/2. An expired lease cancels the handler with ErrLeaseLost. "Lease not found"
// ends renewal quietly: the lease was released, normally by this batch's own last ack.
// The returned function stops renewal and waits for it.
func (cs *consumer) renew(ctx context.Context, leaseID string, lost context.CancelCauseFunc) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait := cs.o.RenewAfter
		for sleep(ctx, wait) == nil {
			res, err := cs.q.c.ExtendLease(ctx, leaseID, cs.o.ExtendBy)
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				cs.report("renew", nil, err)
				wait = cs.o.RenewAfter // try again soon: the lease is running out meanwhile
			case res.Status == LeaseExtended:
				wait = max(cs.o.ExtendBy/2, time.Second)
			case res.Status == LeaseExpired:
				cs.report("renew", nil, fmt.Errorf("lease %s: %w", leaseID, ErrLeaseLost))
				lost(ErrLeaseLost)
				return
			default:
				return
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
