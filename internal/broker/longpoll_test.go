package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
)

// Long-poll wake-ups (design.md "Long polling"). The brokers run with an hour-long fallback
// poll (slowPoll) and parkedPop returns only after the pop's first attempt found nothing, so a
// parked pop that delivers within wakeBound was woken by a signal.

// A pop parked on an instance is woken at once by a push to the same instance.
func TestLongPollWokenBySameInstance(t *testing.T) {
	x := newBroker(t, slowPoll)
	q := queueName(t)
	x.push(item(q, "", "old", "0"))
	if p := x.pop(mq.PopRequest{Queue: q, AutoAck: true}); len(p.Messages) != 1 || p.Messages[0].TransactionID != "old" {
		t.Fatalf("pop %+v", p)
	}
	ch := x.parkedPop(mq.PopRequest{Queue: q})
	x.push(item(q, "", "new", "1"))
	requireWoken(t, ch, "new")
	x.waitParked(0)
}

// A pop parked on instance A is woken by a push served by instance B over the same database
// (B's NOTIFY, relayed by A's listener).
func TestLongPollWokenByOtherInstance(t *testing.T) {
	a, b := newBroker(t, slowPoll), newBroker(t, slowPoll)
	a.listen()
	waitListening(t, a, b)
	q := queueName(t)
	if _, _, _, _, err := b.b.Configure(context.Background(), q, nil, nil, mq.QueueOptions{}); err != nil {
		t.Fatal(err)
	}
	ch := a.parkedPop(mq.PopRequest{Queue: q, Group: "g"})
	b.push(item(q, "", "cross", `"x"`))
	p := requireWoken(t, ch, "cross")
	if p.Group != "g" || p.LeaseID == "" {
		t.Fatalf("woken pop %+v", p)
	}
	a.waitParked(0)
}

// An ack that releases a lease wakes the group's parked pops, on the same instance and on
// another one: completing a batch and a retry ack both make the pair deliverable again.
func TestLongPollWokenByAckRelease(t *testing.T) {
	a, b := newBroker(t, slowPoll), newBroker(t, slowPoll)
	a.listen()
	b.listen()
	waitListening(t, a, a)
	waitListening(t, b, a)
	q := queueName(t)
	a.push(item(q, "", "m1", "1"), item(q, "", "m2", "2"), item(q, "", "m3", "3"))
	req := mq.PopRequest{Queue: q, Group: "g"}
	first := a.pop(req)
	if len(first.Messages) != 1 || first.Messages[0].TransactionID != "m1" {
		t.Fatalf("first pop %+v", first)
	}

	// Parked on A while m1 is leased; completing m1 on A wakes it with m2.
	ch := a.parkedPop(req)
	if r := a.ackOne(first, "g", mq.AckCompleted); !r.Success || !r.LeaseReleased {
		t.Fatalf("ack m1 %+v", r)
	}
	second := requireWoken(t, ch, "m2")

	// Parked on B while m2 is leased; completing m2 on A wakes it with m3.
	ch = b.parkedPop(req)
	if r := a.ackOne(second, "g", mq.AckCompleted); !r.Success || !r.LeaseReleased {
		t.Fatalf("ack m2 %+v", r)
	}
	third := requireWoken(t, ch, "m3")

	// Parked on A while m3 is leased; a retry ack on B wakes it with m3 again.
	ch = a.parkedPop(req)
	if r := b.ackOne(third, "g", mq.AckRetry); !r.Success || !r.LeaseReleased {
		t.Fatalf("retry ack m3 %+v", r)
	}
	again := requireWoken(t, ch, "m3")
	if again.LeaseID == third.LeaseID {
		t.Fatalf("redelivery kept lease %s", third.LeaseID)
	}
	a.waitParked(0)
	b.waitParked(0)
}

// A write nobody signals (here: straight into the store, past the broker) is found by the
// parked pop's fallback poll.
func TestLongPollFallbackPoll(t *testing.T) {
	x := newBroker(t, Config{PollInitial: 20 * time.Millisecond, PollMax: 50 * time.Millisecond})
	q := queueName(t)
	x.push(item(q, "", "old", "0"))
	x.pop(mq.PopRequest{Queue: q, AutoAck: true})
	ch := x.parkedPop(mq.PopRequest{Queue: q})
	if _, err := x.st.Push(context.Background(), []store.PushRow{{Queue: q, Partition: "Default", Key: "silent", ID: newID(), Payload: []byte("2")}}); err != nil {
		t.Fatal(err)
	}
	requireWoken(t, ch, "silent")
}

// A pop parked on a queue that does not exist yet is answered by the push that creates it,
// on this instance and on another one.
func TestLongPollQueueCreatedByPush(t *testing.T) {
	x, other := newBroker(t, slowPoll), newBroker(t, slowPoll)
	x.listen()
	waitListening(t, x, other)

	q := queueName(t)
	local := x.parkedPop(mq.PopRequest{Queue: q})
	x.push(item(q, "", "created", "1"))
	requireWoken(t, local, "created")

	remote := q + "-remote"
	ch := x.parkedPop(mq.PopRequest{Queue: remote})
	other.push(item(remote, "", "created-remote", "2"))
	requireWoken(t, ch, "created-remote")
	x.waitParked(0)
}

// A namespace/task pop is woken by a push into a queue whose labels match, on the same
// instance and across instances, and not answered by a push into a queue that does not match.
func TestLongPollNamespaceTask(t *testing.T) {
	x, other := newBroker(t, slowPoll), newBroker(t, slowPoll)
	x.listen()
	waitListening(t, x, other)
	ns := fmt.Sprintf("lpns%d", queueSeq.Add(1))
	req := mq.PopRequest{Namespace: ns, Task: "work", AutoAck: true}

	for i, pusher := range []*tb{x, other} {
		ch := x.parkedPop(req)
		pusher.push(item(ns+".other", "", "", fmt.Sprint(i)))
		key := fmt.Sprintf("match-%d", i)
		pusher.push(item(ns+".work.q", "", key, fmt.Sprint(i)))
		p := requireWoken(t, ch, key)
		if p.Messages[0].Queue != ns+".work.q" {
			t.Fatalf("pusher %d: delivered from %s", i, p.Messages[0].Queue)
		}
		x.waitParked(0)
	}
}

// A cancelled pop (a client that went away) leaves the hub and claims nothing: a later message goes to a live consumer
// as a first delivery.
func TestPopCancelledLeavesHub(t *testing.T) {
	x := newBroker(t, Config{})
	q := queueName(t)
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	go func() {
		_, err := x.b.Pop(ctx, mq.PopRequest{Queue: q, Group: "g", Wait: true, Deadline: time.Now().Add(time.Minute)})
		ch <- err
	}()
	x.waitParked(1)
	cancel()
	if err := <-ch; err == nil {
		t.Fatal("cancelled pop answered without error")
	}
	x.waitParked(0)
	x.push(item(q, "", "after", "1"))
	p := x.pop(mq.PopRequest{Queue: q, Group: "g"})
	if len(p.Messages) != 1 || p.Messages[0].TransactionID != "after" || p.Messages[0].RetryCount != 0 {
		t.Fatalf("pop after disconnect %+v", p)
	}
}

// On shutdown (the hub closes) every parked pop answers empty, and so does a long poll that
// arrives afterwards.
func TestLongPollShutdown(t *testing.T) {
	x := newBroker(t, slowPoll)
	q := queueName(t)
	first := x.parkedPop(mq.PopRequest{Queue: q})
	second := x.parkedPop(mq.PopRequest{Queue: q, Group: "g"})
	x.b.Hub().Close()
	for i, ch := range []<-chan popResult{first, second} {
		select {
		case r := <-ch:
			if r.err != nil || len(r.res.Messages) != 0 {
				t.Fatalf("parked pop %d on shutdown: %+v %v", i, r.res, r.err)
			}
		case <-time.After(wakeBound):
			t.Fatalf("parked pop %d still waiting after shutdown", i)
		}
	}
	x.waitParked(0)
	done := make(chan popResult, 1)
	go func() {
		res, err := x.b.Pop(context.Background(), mq.PopRequest{Queue: q, Wait: true, Deadline: time.Now().Add(time.Minute)})
		done <- popResult{res, err}
	}()
	select {
	case r := <-done:
		if r.err != nil || len(r.res.Messages) != 0 {
			t.Fatalf("long poll after shutdown: %+v %v", r.res, r.err)
		}
	case <-time.After(wakeBound):
		t.Fatal("long poll after shutdown still waiting")
	}
}
