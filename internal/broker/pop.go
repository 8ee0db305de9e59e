package broker

import (
	"context"
	"errors"
	"time"

	"github.com/queen-go/queen/internal/budget"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/tenant"
	"github.com/queen-go/queen/internal/waiter"
)

// pop claims deliverable messages, parking (without a database connection) until the
// deadline when wait is set and nothing is deliverable. A database failure on the first
// attempt is returned; later ones only make the pop keep waiting.
func (b *Broker) pop(ctx context.Context, r mq.PopRequest) (mq.PopResult, error) {
	sr := b.storeRequest(r)
	res := mq.PopResult{Group: sr.Group}
	if !r.AutoAck {
		res.LeaseID = sr.LeaseID
	}
	var w *waiter.Waiter
	if r.Wait {
		t, _ := tenant.Of(ctx)
		w = b.hub.Park(waiter.Filter{Tenant: t, Queue: r.Queue, Namespace: r.Namespace, Task: r.Task, ByLabels: r.Queue == ""})
		defer w.Leave()
	}
	interval := b.cfg.PollInitial
	gateKey := tenant.KeyOf(ctx, sr.Queue) + "\x00" + sr.Partition + "\x00" + sr.Namespace + "\x00" + sr.Task + "\x00" + sr.Group
	for attempt := 0; ; attempt++ {
		if b.PopMaintenance() {
			// Pop maintenance answers empty at once, also a parked pop (turning it on wakes them).
			return res, nil
		}
		// Each attempt has its own database deadlines (docs/api/operations.md §9.1): the
		// gate and the pool share DB_CONNECTION_TIMEOUT, its statements DB_REQUEST_TIMEOUT.
		// The first attempt uses the request's budget, so its failure counts for the outage
		// summary; the failures of a parked pop's later attempts are not answers.
		actx := budget.Request(ctx)
		if attempt == 0 {
			actx = budget.Ensure(ctx)
		}
		preq := &popReq{sr: sr}
		err := merged(b.pops, newJob(actx, preq), func(ctx context.Context, abort <-chan struct{}) (func(), error) {
			leavePop, err := b.popGate.enterOr(ctx, gateKey, b.store.WaitDeadline(ctx), abort)
			if err != nil {
				return nil, b.gateError(ctx, err)
			}
			leave, err := b.consumeSlot(ctx, abort)
			if err != nil {
				leavePop()
				return nil, err
			}
			return func() { leave(); leavePop() }, nil
		}, b.runPops)
		msgs := preq.msgs
		if err != nil {
			// The first attempt answers its failure (503). A parked pop keeps waiting and
			// answers 204 at its deadline; a claim an abandoned attempt may have committed is
			// never delivered, and its lease expires.
			// A merged call that panicked or left it unanswered is a defect, not a wait.
			if attempt == 0 || ctx.Err() != nil || errors.Is(err, errStopped) ||
				errors.Is(err, errCallPanicked) || errors.Is(err, errCallUnanswered) {
				budget.Mark(ctx, err) // the request's own budget may not have seen the failure
				return res, err
			}
			if !errors.Is(err, mq.ErrUnavailable) && !errors.Is(err, mq.ErrBusy) {
				b.log.Warn("parked pop attempt failed", "err", err)
			}
		}
		if len(msgs) > 0 {
			b.open(msgs)
			res.Messages = msgs
			res.Claimed = countPartitions(msgs)
			return res, nil
		}
		left := time.Until(r.Deadline)
		if !r.Wait || left <= 0 {
			return res, nil
		}
		timer := time.NewTimer(min(interval, left))
		busy := w.Idle() // until it wakes (a return leaves the hub: w.Leave)
		select {
		case <-w.C:
		case <-timer.C:
			interval = min(interval*2, b.cfg.PollMax)
		case <-ctx.Done():
			timer.Stop()
			return res, ctx.Err()
		case <-b.hub.Closed():
			timer.Stop()
			return res, nil
		}
		busy()
		timer.Stop()
	}
}

// popReq is one pop attempt in the pop merger: what it claims, then what it got.
type popReq struct {
	sr   store.PopRequest
	msgs []mq.Message
}

// maxPopCall bounds the pops one merged call serves: each is one more pair for the call's walk
// to claim, and the call's first pops wait for its last.
const maxPopCall = 32

// newPopMerger merges pop attempts of the same target, group and options (samePop).
func newPopMerger() *merger[popReq] {
	return &merger[popReq]{max: maxPopCall, joins: samePop}
}

// samePop reports whether two pop attempts may share a call: the same target and consumer
// group, the same options but the batch size. Subscription mode "new" registers a group with
// the arrival time of the call's first pop (the earliest of the call), the only time it is read.
func samePop(a, b *popReq) bool {
	x, y := a.sr, b.sr
	return x.Queue == y.Queue && x.Partition == y.Partition && x.Namespace == y.Namespace && x.Task == y.Task &&
		x.Group == y.Group && x.Partitions == y.Partitions && x.AutoAck == y.AutoAck &&
		x.SubscriptionMode == y.SubscriptionMode &&
		(x.SubscriptionMode != "timestamp" || x.SubscriptionFrom.Equal(*y.SubscriptionFrom))
}

// runPops serves a merged call of pop attempts with one walk (store.PopMany), each attempt
// with its own batch size and lease; no two get the same pair. A call that fails as a whole is
// retried attempt by attempt or fails them all, as retryAlone says.
func (b *Broker) runPops(call []*mergeJob[popReq]) {
	ctx := callContext(b.store, call)
	shares := make([]store.PopShare, len(call))
	for i, j := range call {
		shares[i] = store.PopShare{Batch: j.req.sr.Batch, LeaseID: j.req.sr.LeaseID}
	}
	dctx, span := b.startDB(ctx, "pop")
	out, err := b.store.PopMany(dctx, call[0].req.sr, shares)
	endSpan(span, err)
	switch {
	case err == nil:
		for i, j := range call {
			j.req.msgs = out[i]
			j.answer(nil)
		}
	case retryAlone(len(call), err):
		for _, j := range call {
			dctx, span := b.startDB(j.ctx, "pop")
			j.req.msgs, err = b.store.Pop(dctx, j.req.sr)
			endSpan(span, err)
			j.answer(err)
		}
	default:
		markCall(call, err)
		for _, j := range call {
			j.answer(err)
		}
	}
}

func (b *Broker) storeRequest(r mq.PopRequest) store.PopRequest {
	group := r.Group
	if group == "" {
		group = mq.QueueMode
	}
	mode := r.SubscriptionMode
	if r.SubscriptionFrom == "" && mode == "" {
		mode = b.cfg.DefaultSubscriptionMode
	}
	var from *time.Time
	switch {
	case r.SubscriptionFrom != "" && r.SubscriptionFrom != "now": // subscriptionFrom wins
		mode, from = "timestamp", r.From
	case r.SubscriptionFrom == "now", mode == "new", mode == "new-only":
		// "New" means messages written after this pop arrived, even when the queue or its
		// partitions only appear later (a parked pop registers on the attempt that finds them).
		arrival := b.store.Now()
		mode, from = "new", &arrival
	default:
		mode = "all"
	}
	parts := r.Partitions
	if r.Partition != "" || parts < 1 {
		parts = 1
	}
	return store.PopRequest{
		Queue: r.Queue, Partition: r.Partition, Namespace: r.Namespace, Task: r.Task,
		Group: group, Batch: max(r.Batch, 1), Partitions: parts, AutoAck: r.AutoAck,
		LeaseID: newID(), SubscriptionMode: mode, SubscriptionFrom: from,
	}
}

func countPartitions(msgs []mq.Message) int {
	n := 0
	for i := range msgs {
		if i == 0 || msgs[i].PartitionID != msgs[i-1].PartitionID {
			n++
		}
	}
	return n
}
