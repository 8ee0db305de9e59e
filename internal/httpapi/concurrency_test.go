package httpapi_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testserver"
)

// Many producers push into a few shared partitions while three groups (queue mode and two
// named groups, three members each) consume with small batches, acking one by one, by batch,
// or with autoAck. Producers and members are spread over two broker instances sharing the
// database. Every group must receive every message exactly once, and within each partition in
// position order.
func TestConcurrentProducersConsumersExactlyOnce(t *testing.T) {
	b := ccSetup(t, testserver.Options{})
	apis := []*ccAPI{newCCAPI(t, b.srv.URL), newCCAPI(t, testserver.Start(t, testDSN, testserver.Options{}).URL)}
	const producers, perProducer, members = 8, 30, 3
	total := producers * perProducer
	partitions := []string{"p0", "p1", "p2"}
	r := newCCRunner(t, 25*time.Second)
	start := time.Now()

	want, produced := ccProduce(r, apis, b.queue, producers, perProducer, 3, partitions)
	groups := []string{"", "g1", "g2"}
	logs := make([]*ccLog, len(groups))
	for gi, group := range groups {
		logs[gi] = newCCLog()
		l := logs[gi]
		for m := range members {
			r.goDo(func(ctx context.Context) error {
				return ccConsumeMember(ctx, apis[(m+gi)%len(apis)], b.queue, group, m, l, int64(total), produced)
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
	t.Logf("%d messages x %d groups in %v", total, len(groups), time.Since(start).Round(time.Millisecond))
}

// ccConsumeMember is one member of a group. Member 0 pops one partition at a time and acks each
// message with /api/v1/ack, member 1 pops up to two partitions and acks everything with one
// shuffled /api/v1/ack/batch, member 2 pops with autoAck. It stops when the group has received
// total messages, and fails when the group stops making progress after every message was
// pushed.
//
// Deliveries are recorded before the batch is acked, so the log of a partition is in delivery
// order: the next batch of a partition can only be claimed after the ack. An autoAck pop
// consumes its batch at once, so member 2 holds the log's lock across its pop and record.
func ccConsumeMember(ctx context.Context, api *ccAPI, queue, group string, member int, l *ccLog, total int64, produced <-chan struct{}) error {
	rng := rand.New(rand.NewPCG(uint64(member), uint64(len(group))))
	stall := ccStall{produced: produced}
	for n := l.n.Load(); n < total; n = l.n.Load() {
		if ctx.Err() != nil {
			return nil
		}
		if err := stall.check(n, total); err != nil {
			return fmt.Errorf("group %q member %d: %w", group, member, err)
		}
		batch := 1 + rng.IntN(3)
		path := fmt.Sprintf("/api/v1/pop/queue/%s?batch=%d&consumerGroup=%s", queue, batch, group)
		switch member {
		case 0:
			path += "&wait=true&timeout=300"
		case 1:
			path += "&partitions=2&wait=true&timeout=300"
		case 2:
			path += "&autoAck=true"
		}
		if member == 2 {
			l.mu.Lock()
		}
		p, ok, err := api.pop(ctx, path)
		if err != nil || !ok {
			if member == 2 {
				l.mu.Unlock()
				if err == nil {
					time.Sleep(5 * time.Millisecond) // nothing deliverable: let the others run
				}
			}
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				return fmt.Errorf("group %q member %d: %w", group, member, err)
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
			return fmt.Errorf("group %q member %d: %w", group, member, err)
		}
		switch member {
		case 0:
			for i, it := range ccAcks(ds, p.LeaseID) {
				if group != "" {
					it["consumerGroup"] = group
				}
				res, err := api.acks(ctx, "", it)
				if err != nil {
					return fmt.Errorf("group %q member %d: %w", group, member, err)
				}
				last := i == len(ds)-1
				if a := res[0]; !a.Success || a.Error != nil || a.AlreadyCommitted || a.LeaseReleased != last {
					return fmt.Errorf("group %q member %d: ack %d of %d: %+v", group, member, i+1, len(ds), a)
				}
			}
		case 1:
			items := ccAcks(ds, p.LeaseID)
			rng.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
			for i := range items {
				if i%2 == 1 {
					items[i]["status"] = "success" // normalised to completed
				}
			}
			res, err := api.acks(ctx, group, items...)
			if err != nil {
				return fmt.Errorf("group %q member %d: %w", group, member, err)
			}
			for i, a := range res {
				if !a.Success || a.Error != nil || a.AlreadyCommitted || !a.LeaseReleased || a.Index != i {
					return fmt.Errorf("group %q member %d: batch ack %d: %+v", group, member, i, a)
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
	b := ccSetup(t, testserver.Options{})
	api := newCCAPI(t, b.srv.URL)
	pushers := []*ccAPI{api, newCCAPI(t, testserver.Start(t, testDSN, testserver.Options{}).URL)}
	const producers, perProducer = 8, 20
	total := int64(producers * perProducer)
	r := newCCRunner(t, 20*time.Second)
	start := time.Now()

	want, produced := ccProduce(r, pushers, b.queue, producers, perProducer, 1, []string{"only"})
	leased, auto := newCCLog(), newCCLog()
	// Queue mode pops one message at a time with a lease and acks it.
	r.goDo(func(ctx context.Context) error {
		path := "/api/v1/pop/queue/" + b.queue + "/partition/only?batch=1&wait=true&timeout=300"
		stall := ccStall{produced: produced}
		for n := leased.n.Load(); n < total && ctx.Err() == nil; n = leased.n.Load() {
			if err := stall.check(n, total); err != nil {
				return fmt.Errorf("queue mode: %w", err)
			}
			p, ok, err := api.pop(ctx, path)
			if err != nil {
				return err
			}
			if !ok {
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
			res, err := api.acks(ctx, "", ccAcks(ds, p.LeaseID)...)
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
		path := "/api/v1/pop/queue/" + b.queue + "?batch=3&autoAck=true&consumerGroup=auto"
		stall := ccStall{produced: produced}
		for n := auto.n.Load(); n < total && ctx.Err() == nil; n = auto.n.Load() {
			if err := stall.check(n, total); err != nil {
				return fmt.Errorf("autoAck group: %w", err)
			}
			p, ok, err := api.pop(ctx, path)
			if err != nil {
				return err
			}
			if !ok {
				time.Sleep(2 * time.Millisecond)
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
	t.Logf("%d messages in %v", total, time.Since(start).Round(time.Millisecond))
}

// Many members of one group, spread over two broker instances, pop concurrently over a few
// partitions. A partition whose lease is live and not yet acked must never be handed to
// another pop: each pop's partitions are tracked with their lease id until the ack releases
// them, the holder's own pop of its partition must answer 204, and no message may be
// delivered twice.
func TestConcurrentPopsOneLeasePerPartition(t *testing.T) {
	b := ccSetup(t, testserver.Options{})
	apis := []*ccAPI{newCCAPI(t, b.srv.URL), newCCAPI(t, testserver.Start(t, testDSN, testserver.Options{}).URL)}
	api := apis[0]
	const nParts, perPart, members = 3, 40, 6
	r := newCCRunner(t, 20*time.Second)
	start := time.Now()

	want := map[string]bool{}
	var items []obj
	for s := range perPart {
		for p := range nParts {
			key := fmt.Sprintf("p%d-s%d", p, s)
			want[key] = true
			items = append(items, obj{"queue": b.queue, "partition": fmt.Sprintf("part%d", p), "transactionId": key,
				"payload": ccPayload{P: p, S: s}})
		}
	}
	if _, err := api.push(r.ctx, items...); err != nil {
		t.Fatal(err)
	}

	type hold struct {
		lease     string
		releasing bool // the ack is in flight: a new claim may legitimately win the race
	}
	var (
		mu      sync.Mutex
		holders = map[string]*hold{} // partition id -> current holder
		leases  = map[string]bool{}
		names   = map[string]string{} // partition id -> name
		claims  atomic.Int64
	)
	l := newCCLog()
	total := int64(len(want))
	for m := range members {
		api := apis[m%len(apis)]
		r.goDo(func(ctx context.Context) error {
			path := fmt.Sprintf("/api/v1/pop/queue/%s?batch=2&partitions=%d&consumerGroup=workers&wait=true&timeout=200", b.queue, 1+m%2)
			for l.n.Load() < total && ctx.Err() == nil {
				p, ok, err := api.pop(ctx, path)
				if err != nil || !ok {
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
				claims.Add(int64(len(parts)))
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
					_, ok, err := api.pop(ctx, "/api/v1/pop/queue/"+b.queue+"/partition/"+name+"?consumerGroup=workers&batch=10")
					if err != nil {
						return err
					}
					if ok {
						return fmt.Errorf("partition %s delivered while lease %s holds it", name, p.LeaseID)
					}
				}
				time.Sleep(time.Duration(2+rand.IntN(6)) * time.Millisecond) // hold the lease a moment
				mu.Lock()
				for pid := range parts {
					holders[pid].releasing = true
				}
				mu.Unlock()
				res, err := api.acks(ctx, "workers", ccAcks(ds, p.LeaseID)...)
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
	t.Logf("%d messages, %d claims by %d members in %v", total, claims.Load(), members, time.Since(start).Round(time.Millisecond))
}

// ccKeys lists the transaction ids of a pop answer.
func ccKeys(p popped) []string {
	out := make([]string, len(p.Messages))
	for i, m := range p.Messages {
		out[i] = m.TransactionID
	}
	return out
}
