package broker

import (
	"context"
	"errors"
	"time"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
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
		w = b.hub.Park(waiter.Filter{Queue: r.Queue, Namespace: r.Namespace, Task: r.Task, ByLabels: r.Queue == ""})
		defer w.Leave()
	}
	interval := b.cfg.PollInitial
	gateKey := sr.Queue + "\x00" + sr.Partition + "\x00" + sr.Namespace + "\x00" + sr.Task + "\x00" + sr.Group
	for attempt := 0; ; attempt++ {
		if b.PopMaintenance() {
			// Pop maintenance answers empty at once, also a parked pop (turning it on wakes them).
			return res, nil
		}
		// Each attempt has its own database deadlines (docs/api/operations.md §9.1): the
		// gate and the pool share DB_CONNECTION_TIMEOUT, its statements DB_REQUEST_TIMEOUT.
		// The first attempt uses the request's budget, so its failure counts for the outage
		// summary; the failures of a parked pop's later attempts are not answers.
		actx := store.Request(ctx)
		if attempt == 0 {
			actx = store.OneBudget(ctx)
		}
		var msgs []mq.Message
		leave, err := b.popGate.enterUntil(actx, gateKey, b.store.WaitDeadline(actx))
		if err == nil {
			err = b.consume(actx, func() error {
				dctx, span := b.startDB(actx, "pop")
				msgs, err = b.store.Pop(dctx, sr)
				endSpan(span, err)
				return err
			})
			leave()
		}
		if err != nil {
			// The first attempt answers its failure (503). A parked pop keeps waiting and
			// answers 204 at its deadline; a claim an abandoned attempt may have committed is
			// never delivered, and its lease expires.
			if attempt == 0 || ctx.Err() != nil || errors.Is(err, errStopped) {
				if errors.Is(err, mq.ErrUnavailable) {
					store.MarkUnavailable(ctx) // a gate timeout is no database call
				}
				return res, err
			}
			if !errors.Is(err, mq.ErrUnavailable) {
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
		timer.Stop()
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
