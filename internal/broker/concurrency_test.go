package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// Invariants under concurrency: many goroutines push, pop and ack through two broker
// instances over one database; no message may be lost, delivered twice to a group, or
// delivered out of position order within a partition. Run under -race.

// Many producers push into a few shared partitions while three groups (queue mode and two
// named groups, three members each) consume with small batches, acking one by one, by batch,
// or with autoAck. Producers and members are spread over two broker instances sharing the
// database. Every group must receive every message exactly once, and within each partition in
// position order.
func TestConcurrentProducersConsumersExactlyOnce(t *testing.T) {
	brokers := ccBrokers(t)
	q := queueName(t)
	const producers, perProducer, members = 8, 30, 3
	total := producers * perProducer
	partitions := []string{"p0", "p1", "p2"}
	r := newCCRunner(t, 60*time.Second)

	want, produced := ccProduce(r, brokers, q, producers, perProducer, 3, partitions)
	groups := []string{"", "g1", "g2"}
	logs := make([]*ccLog, len(groups))
	for gi, group := range groups {
		logs[gi] = newCCLog()
		l := logs[gi]
		for m := range members {
			r.goDo(func(ctx context.Context) error {
				return ccConsumeMember(ctx, brokers[(m+gi)%len(brokers)], q, group, m, l, int64(total), produced)
			})
		}
	}
	r.wait()
	for gi, group := range groups {
		name := "group " + group
		if group == "" {
			name = "queue mode"
		}
		logs[gi].checkAll(t, name, want)
		logs[gi].checkOrder(t, name)
		if len(logs[gi].byPart) != len(partitions) {
			t.Errorf("%s: received from %d partitions, want %d", name, len(logs[gi].byPart), len(partitions))
		}
	}
}

// ccConsumeMember is one member of a group. Member 0 pops one partition at a time and acks each
// message alone, member 1 pops up to two partitions and acks everything in one shuffled batch,
// member 2 pops with autoAck. It stops when the group has received total messages, and fails
// when the group stops making progress after every message was pushed.
//
// Deliveries are recorded before the batch is acked, so the log of a partition is in delivery
// order: the next batch of a partition can only be claimed after the ack. An autoAck pop
// consumes its batch at once, so member 2 holds the log's lock across its pop and record.
func ccConsumeMember(ctx context.Context, x *tb, queue, group string, member int, l *ccLog, total int64, produced <-chan struct{}) error {
	rng := rand.New(rand.NewPCG(uint64(member), uint64(len(group))))
	stall := ccStall{produced: produced}
	fail := func(err error) error { return fmt.Errorf("group %q member %d: %w", group, member, err) }
	for n := l.n.Load(); n < total; n = l.n.Load() {
		if ctx.Err() != nil {
			return nil
		}
		if err := stall.check(n, total); err != nil {
			return fail(err)
		}
		batch := 1 + rng.IntN(3)
		req := mq.PopRequest{Queue: queue, Group: group, Batch: batch}
		switch member {
		case 0:
			req.Wait, req.Deadline = true, time.Now().Add(300*time.Millisecond)
		case 1:
			req.Partitions, req.Wait, req.Deadline = 2, true, time.Now().Add(300*time.Millisecond)
		case 2:
			req.AutoAck = true
			l.mu.Lock()
		}
		p, err := x.b.Pop(ctx, req)
		if err != nil || len(p.Messages) == 0 {
			if member == 2 {
				l.mu.Unlock()
				if err == nil {
					time.Sleep(5 * time.Millisecond) // nothing deliverable: a consumer's poll interval, not an ordering
				}
			}
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				return fail(err)
			}
			continue
		}
		ds, err := ccDeliveries(p, group, member == 2)
		if err == nil && len(ds) > batch {
			err = fmt.Errorf("%d messages for batch %d", len(ds), batch)
		}
		if member != 2 {
			l.mu.Lock()
		}
		for _, d := range ds {
			if err == nil {
				err = l.recordLocked(d)
			}
		}
		l.mu.Unlock()
		if err != nil {
			return fail(err)
		}
		switch member {
		case 0:
			for i, it := range ccAcks(ds, p.LeaseID, group) {
				res, err := x.b.Ack(ctx, []mq.AckItem{it})
				if err != nil {
					return fail(err)
				}
				last := i == len(ds)-1
				if a := res[0]; !a.Success || a.Error != nil || a.AlreadyCommitted || a.LeaseReleased != last {
					return fail(fmt.Errorf("ack %d of %d: %+v", i+1, len(ds), a))
				}
			}
		case 1:
			items := ccAcks(ds, p.LeaseID, group)
			rng.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
			res, err := x.b.Ack(ctx, items)
			if err != nil {
				return fail(err)
			}
			for i, a := range res {
				if !a.Success || a.Error != nil || a.AlreadyCommitted || !a.LeaseReleased {
					return fail(fmt.Errorf("batch ack %d: %+v", i, a))
				}
			}
		}
	}
	return nil
}

// Many concurrent single-item pushes to ONE partition, through two broker instances, commit
// in an order of their own; a consumer popping batch=1 (and one with autoAck) right behind
// them must never have its cursor pass a message that commits later: each message is
// delivered exactly once, in order.
func TestConcurrentPushesNeverSkip(t *testing.T) {
	brokers := ccBrokers(t)
	x := brokers[0]
	q := queueName(t)
	const producers, perProducer = 8, 20
	total := int64(producers * perProducer)
	r := newCCRunner(t, 60*time.Second)

	want, produced := ccProduce(r, brokers, q, producers, perProducer, 1, []string{"only"})
	leased, auto := newCCLog(), newCCLog()
	// Queue mode pops one message at a time with a lease and acks it.
	r.goDo(func(ctx context.Context) error {
		stall := ccStall{produced: produced}
		for n := leased.n.Load(); n < total && ctx.Err() == nil; n = leased.n.Load() {
			if err := stall.check(n, total); err != nil {
				return fmt.Errorf("queue mode: %w", err)
			}
			p, err := x.b.Pop(ctx, mq.PopRequest{Queue: q, Partition: "only", Batch: 1, Wait: true,
				Deadline: time.Now().Add(300 * time.Millisecond)})
			if err != nil {
				return err
			}
			if len(p.Messages) == 0 {
				continue
			}
			ds, err := ccDeliveries(p, "", false)
			if err != nil {
				return err
			}
			if len(ds) != 1 {
				return fmt.Errorf("batch=1 answered %d messages", len(ds))
			}
			leased.mu.Lock()
			err = leased.recordLocked(ds[0])
			leased.mu.Unlock()
			if err != nil {
				return err
			}
			res, err := x.b.Ack(ctx, ccAcks(ds, p.LeaseID, ""))
			if err != nil {
				return err
			}
			if a := res[0]; !a.Success || !a.LeaseReleased || a.AlreadyCommitted {
				return fmt.Errorf("ack %s: %+v", ds[0].key, a)
			}
		}
		return nil
	})
	// A named group reads the same partition with autoAck, in small batches, without waiting.
	r.goDo(func(ctx context.Context) error {
		stall := ccStall{produced: produced}
		for n := auto.n.Load(); n < total && ctx.Err() == nil; n = auto.n.Load() {
			if err := stall.check(n, total); err != nil {
				return fmt.Errorf("autoAck group: %w", err)
			}
			p, err := x.b.Pop(ctx, mq.PopRequest{Queue: q, Batch: 3, AutoAck: true, Group: "auto"})
			if err != nil {
				return err
			}
			if len(p.Messages) == 0 {
				time.Sleep(2 * time.Millisecond) // a consumer's poll interval, not an ordering
				continue
			}
			ds, err := ccDeliveries(p, "auto", true)
			if err != nil {
				return err
			}
			auto.mu.Lock()
			for _, d := range ds {
				if err == nil {
					err = auto.recordLocked(d)
				}
			}
			auto.mu.Unlock()
			if err != nil {
				return err
			}
		}
		return nil
	})
	r.wait()
	leased.checkAll(t, "queue mode", want)
	leased.checkOrder(t, "queue mode")
	auto.checkAll(t, "autoAck group", want)
	auto.checkOrder(t, "autoAck group")
}

// Many members of one group, spread over two broker instances, pop concurrently over a few
// partitions. A partition whose lease is live and not yet acked must never be handed to
// another pop: each pop's partitions are tracked with their lease id until the ack releases
// them, the holder's own pop of its partition must find nothing, and no message may be
// delivered twice.
func TestConcurrentPopsOneLeasePerPartition(t *testing.T) {
	brokers := ccBrokers(t)
	q := queueName(t)
	const nParts, perPart, members = 3, 40, 6
	r := newCCRunner(t, 60*time.Second)

	want := map[string]bool{}
	var items []mq.PushItem
	for s := range perPart {
		for p := range nParts {
			key := fmt.Sprintf("p%d-s%d", p, s)
			want[key] = true
			items = append(items, ccItem(q, fmt.Sprintf("part%d", p), key, ccPayload{P: p, S: s}))
		}
	}
	brokers[0].push(items...)

	type hold struct {
		lease     string
		releasing bool // the ack is in flight: a new claim may legitimately win the race
	}
	var (
		mu      sync.Mutex
		holders = map[string]*hold{} // partition id -> current holder
		leases  = map[string]bool{}
		names   = map[string]string{} // partition id -> name
	)
	l := newCCLog()
	total := int64(len(want))
	for m := range members {
		x := brokers[m%len(brokers)]
		r.goDo(func(ctx context.Context) error {
			for l.n.Load() < total && ctx.Err() == nil {
				p, err := x.b.Pop(ctx, mq.PopRequest{Queue: q, Batch: 2, Partitions: 1 + m%2, Group: "workers",
					Wait: true, Deadline: time.Now().Add(200 * time.Millisecond)})
				if err != nil || len(p.Messages) == 0 {
					if err != nil && ctx.Err() == nil {
						return err
					}
					continue
				}
				ds, err := ccDeliveries(p, "workers", false)
				if err != nil {
					return err
				}
				parts := map[string]bool{}
				mu.Lock()
				if leases[p.LeaseID] {
					err = fmt.Errorf("lease id %s handed out twice", p.LeaseID)
				}
				leases[p.LeaseID] = true
				for _, msg := range p.Messages {
					if parts[msg.PartitionID] {
						continue
					}
					parts[msg.PartitionID] = true
					names[msg.PartitionID] = msg.Partition
					if h := holders[msg.PartitionID]; h != nil && !h.releasing && err == nil {
						err = fmt.Errorf("partition %s claimed by lease %s while lease %s is live and un-acked",
							msg.Partition, p.LeaseID, h.lease)
					}
					holders[msg.PartitionID] = &hold{lease: p.LeaseID}
				}
				mu.Unlock()
				if err != nil {
					return err
				}
				l.mu.Lock()
				for _, d := range ds {
					if err == nil {
						err = l.recordLocked(d)
					}
				}
				l.mu.Unlock()
				if err != nil {
					return err
				}
				// While we hold them, nobody of the group (ourselves included) gets our partitions.
				for pid := range parts {
					mu.Lock()
					name := names[pid]
					mu.Unlock()
					again, err := x.b.Pop(ctx, mq.PopRequest{Queue: q, Partition: name, Group: "workers", Batch: 10})
					if err != nil {
						return err
					}
					if len(again.Messages) > 0 {
						return fmt.Errorf("partition %s delivered while lease %s holds it", name, p.LeaseID)
					}
				}
				mu.Lock()
				for pid := range parts {
					holders[pid].releasing = true
				}
				mu.Unlock()
				res, err := x.b.Ack(ctx, ccAcks(ds, p.LeaseID, "workers"))
				if err != nil {
					return err
				}
				for i, a := range res {
					if !a.Success || !a.LeaseReleased || a.AlreadyCommitted {
						return fmt.Errorf("ack %s: %+v", ds[i].key, a)
					}
				}
				mu.Lock()
				for pid := range parts {
					if h := holders[pid]; h != nil && h.lease == p.LeaseID {
						delete(holders, pid)
					}
				}
				mu.Unlock()
			}
			return nil
		})
	}
	r.wait()
	l.checkAll(t, "workers", want)
	l.checkOrder(t, "workers")
	if len(holders) != 0 {
		t.Errorf("partitions still held at the end: %v", holders)
	}
}

// ccBrokers starts two broker instances over the package database, each listening.
func ccBrokers(t *testing.T) []*tb {
	out := []*tb{newBroker(t, Config{}), newBroker(t, Config{})}
	for _, x := range out {
		x.listen()
	}
	return out
}

// ccPayload is what the producers of these tests write: producer id and its sequence number.
type ccPayload struct {
	P int `json:"p"`
	S int `json:"s"`
}

func ccItem(queue, partition, key string, p ccPayload) mq.PushItem {
	b, _ := json.Marshal(p)
	return mq.PushItem{Queue: queue, Partition: partition, TransactionID: key, Payload: b}
}

// ccDelivery is one message as a consumer received it.
type ccDelivery struct {
	key       string
	partition string
	payload   ccPayload
	createdAt time.Time
}

// ccLog records what one consumer group received, in delivery order per partition.
type ccLog struct {
	mu     sync.Mutex
	seen   map[string]int
	byPart map[string][]ccDelivery
	n      atomic.Int64 // distinct messages received
}

func newCCLog() *ccLog { return &ccLog{seen: map[string]int{}, byPart: map[string][]ccDelivery{}} }

// recordLocked appends a delivery (caller holds mu) and reports a duplicate as an error.
func (l *ccLog) recordLocked(d ccDelivery) error {
	l.seen[d.key]++
	l.byPart[d.partition] = append(l.byPart[d.partition], d)
	if l.seen[d.key] > 1 {
		return fmt.Errorf("message %s delivered %d times", d.key, l.seen[d.key])
	}
	l.n.Add(1)
	return nil
}

// ccDeliveries turns a pop answer into deliveries, checking what every answer must satisfy:
// the answer's group, messages of one partition contiguous, Claimed right, and the lease id
// empty exactly with autoAck.
func ccDeliveries(p mq.PopResult, group string, autoAck bool) ([]ccDelivery, error) {
	if group == "" {
		group = mq.QueueMode
	}
	if p.Group != group {
		return nil, fmt.Errorf("answer for group %q names %q", group, p.Group)
	}
	if autoAck != (p.LeaseID == "") {
		return nil, fmt.Errorf("autoAck=%v but lease id %q", autoAck, p.LeaseID)
	}
	out := make([]ccDelivery, len(p.Messages))
	parts := map[string]bool{}
	for i, m := range p.Messages {
		if i > 0 && m.PartitionID != p.Messages[i-1].PartitionID && parts[m.PartitionID] {
			return nil, fmt.Errorf("partition %s not contiguous in one answer", m.PartitionID)
		}
		parts[m.PartitionID] = true
		if err := json.Unmarshal(m.Payload, &out[i].payload); err != nil {
			return nil, fmt.Errorf("payload %s: %v", m.Payload, err)
		}
		out[i].key, out[i].partition, out[i].createdAt = m.TransactionID, m.PartitionID, m.CreatedAt
	}
	if p.Claimed != len(parts) {
		return nil, fmt.Errorf("claimed %d for %d partitions", p.Claimed, len(parts))
	}
	return out, nil
}

// checkOrder checks a group's deliveries per partition: createdAt never decreases and each
// producer's sequence numbers strictly increase (a producer writes sequentially, so its
// messages in one partition have increasing positions).
func (l *ccLog) checkOrder(t *testing.T, name string) {
	t.Helper()
	bad := 0
	for part, ds := range l.byPart {
		last := map[int]int{}
		for i, d := range ds {
			if i > 0 && d.createdAt.Before(ds[i-1].createdAt) {
				if bad++; bad <= 3 {
					t.Errorf("%s partition %s: createdAt went back at delivery %d", name, part, i)
				}
			}
			if s, ok := last[d.payload.P]; ok && d.payload.S <= s {
				if bad++; bad <= 3 {
					t.Errorf("%s partition %s: producer %d seq %d delivered after seq %d", name, part, d.payload.P, d.payload.S, s)
				}
			}
			last[d.payload.P] = d.payload.S
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d deliveries out of position order", name, bad)
	}
}

// checkAll requires every key of want to have been received exactly once, and nothing else.
func (l *ccLog) checkAll(t *testing.T, name string, want map[string]bool) {
	t.Helper()
	missing := 0
	for k := range want {
		if l.seen[k] != 1 {
			if missing++; missing <= 5 {
				t.Errorf("%s: message %s received %d times", name, k, l.seen[k])
			}
		}
	}
	for k := range l.seen {
		if !want[k] {
			t.Errorf("%s: received unknown message %s", name, k)
		}
	}
	if missing > 0 {
		t.Errorf("%s: %d of %d messages not received exactly once", name, missing, len(want))
	}
}

// ccRunner runs goroutines and collects their first errors; the first error cancels ctx so
// the others stop early.
type ccRunner struct {
	t      *testing.T
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	errs   []error
}

func newCCRunner(t *testing.T, bound time.Duration) *ccRunner {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	t.Cleanup(cancel)
	return &ccRunner{t: t, ctx: ctx, cancel: cancel}
}

func (r *ccRunner) goDo(fn func(ctx context.Context) error) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		// Once the run is cancelled (an earlier failure or the time bound), the other
		// goroutines' errors are only the echo of the cancellation.
		if err := fn(r.ctx); err != nil && r.ctx.Err() == nil {
			r.mu.Lock()
			if len(r.errs) < 10 {
				r.errs = append(r.errs, err)
			}
			r.mu.Unlock()
			r.cancel()
		}
	}()
}

// wait waits for every goroutine and fails the test with the collected errors, or when the
// time bound ran out.
func (r *ccRunner) wait() {
	r.t.Helper()
	r.wg.Wait()
	timedOut := r.ctx.Err() == context.DeadlineExceeded
	r.cancel()
	for _, err := range r.errs {
		r.t.Error(err)
	}
	if timedOut {
		r.t.Error("time bound ran out")
	}
	if r.t.Failed() {
		r.t.FailNow()
	}
}

// ccProduce runs producers that each push perProducer numbered messages, sequentially, in
// requests of 1 to maxItems items spread over partitions, producer p through
// brokers[p%len(brokers)]. It returns the keys pushed and a channel closed once every
// producer is done.
func ccProduce(r *ccRunner, brokers []*tb, queue string, producers, perProducer, maxItems int, partitions []string) (map[string]bool, <-chan struct{}) {
	want := map[string]bool{}
	var wg sync.WaitGroup
	wg.Add(producers)
	produced := make(chan struct{})
	go func() { wg.Wait(); close(produced) }()
	for p := range producers {
		for s := range perProducer {
			want[fmt.Sprintf("p%d-s%d", p, s)] = true
		}
	}
	for p := range producers {
		r.goDo(func(ctx context.Context) error {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(p), 7))
			for s := 0; s < perProducer; {
				n := min(1+rng.IntN(maxItems), perProducer-s)
				items := make([]mq.PushItem, n)
				for i := range items {
					items[i] = ccItem(queue, partitions[rng.IntN(len(partitions))], fmt.Sprintf("p%d-s%d", p, s), ccPayload{P: p, S: s})
					s++
				}
				res, err := brokers[p%len(brokers)].b.Push(ctx, items, nil)
				if err != nil {
					return fmt.Errorf("producer %d: %w", p, err)
				}
				for i, pr := range res {
					if pr.Status != mq.StatusQueued {
						return fmt.Errorf("producer %d item %d: %+v", p, i, pr)
					}
				}
			}
			return nil
		})
	}
	return want, produced
}

// ccStall notices a consumer group that stops making progress once everything is pushed: a
// skipped message would otherwise only show when the whole time bound runs out.
type ccStall struct {
	produced <-chan struct{}
	n        int64
	since    time.Time
}

func (s *ccStall) check(n, total int64) error {
	select {
	case <-s.produced:
	default:
		return nil
	}
	if s.since.IsZero() || n != s.n {
		s.n, s.since = n, time.Now()
		return nil
	}
	if time.Since(s.since) > 5*time.Second {
		return fmt.Errorf("stuck at %d of %d messages for 5s with every message pushed: skipped or lost", n, total)
	}
	return nil
}

// ccAcks builds completing acks of deliveries for group ("" is queue mode).
func ccAcks(ds []ccDelivery, lease, group string) []mq.AckItem {
	if group == "" {
		group = mq.QueueMode
	}
	out := make([]mq.AckItem, len(ds))
	for i, d := range ds {
		out[i] = mq.AckItem{TransactionID: d.key, PartitionID: d.partition, LeaseID: lease, Group: group, Status: mq.AckCompleted}
	}
	return out
}
