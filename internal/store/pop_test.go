package store

// qg_pop / qg_claim: partitions, ordering, consumer groups, multi-partition pops, autoAck
// (docs/api/concepts.md §3–§6). Moved from internal/httpapi/semantics_test.go.

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

func TestDeliveryPartitionsCreatedOnFirstWrite(t *testing.T) {
	b := setup(t)
	b.noPop(PopRequest{}) // the queue does not exist yet
	if got := b.partitionNames(b.queue); len(got) != 0 {
		t.Fatalf("partitions before the first push: %v", got)
	}
	res := b.pushKeys("p1", "a1", "a2")
	if res[0].PartitionID == "" || res[0].PartitionID != res[1].PartitionID {
		t.Fatalf("partition ids %+v", res)
	}
	if got := b.partitionNames(b.queue); !slices.Equal(got, []string{"p1"}) {
		t.Fatalf("partitions after pushing p1: %v (push must not create Default)", got)
	}
	b.noPop(PopRequest{Partition: "p2"}) // a partition nobody wrote to does not exist
	if got := b.partitionNames(b.queue); !slices.Equal(got, []string{"p1"}) {
		t.Fatalf("partitions after popping p2: %v (pop must not create partitions)", got)
	}
	b.pushKeys("Default", "d1")
	if got := b.partitionNames(b.queue); !slices.Equal(got, []string{"Default", "p1"}) {
		t.Fatalf("partitions after a Default push: %v", got)
	}
	p := b.mustPop(PopRequest{Partition: "p1", Batch: 10}, "a1", "a2")
	if m := p.Messages[0]; m.PartitionID != res[0].PartitionID || m.Partition != "p1" || m.Queue != b.queue {
		t.Fatalf("pop names %+v, push %+v", m, res[0])
	}
	b.mustPop(PopRequest{Partition: "Default", Batch: 10}, "d1")
}

func TestDeliveryPerPartitionOrder(t *testing.T) {
	b := setup(t)
	var rows []PushRow
	for i := range 8 {
		rows = append(rows, row(b.queue, []string{"pA", "pB"}[i%2], "k"+string(rune('0'+i))))
	}
	b.pushRows(rows...)
	b.pushKeys("pA", "k8", "k9")
	b.pushKeys("pB", "k10")
	if got := b.drain(PopRequest{Partition: "pA", Batch: 2}); !slices.Equal(got, []string{"k0", "k2", "k4", "k6", "k8", "k9"}) {
		t.Fatalf("pA order %v", got)
	}
	if got := b.drain(PopRequest{Partition: "pB", Batch: 3, Group: "g"}); !slices.Equal(got, []string{"k1", "k3", "k5", "k7", "k10"}) {
		t.Fatalf("pB order %v", got)
	}
}

func TestDeliveryLeasedPartitionDoesNotBlockOthers(t *testing.T) {
	b := setup(t)
	b.pushKeys("pA", "a1", "a2")
	b.clock.Advance(time.Second)
	b.pushKeys("pB", "b1")
	b.clock.Advance(time.Second)
	b.pushKeys("pC", "c1")
	for _, g := range []string{mq.QueueMode, "g"} {
		r := PopRequest{Batch: 10, Group: g}
		// Oldest next message first; the leased partition is skipped, not waited for.
		pa := b.mustPop(r, "a1", "a2")
		pb := b.mustPop(r, "b1")
		b.noPop(PopRequest{Partition: "pA", Batch: 10, Group: g})
		pc := b.mustPop(r, "c1")
		b.noPop(r)
		for _, p := range []popped{pa, pb, pc} {
			b.mustAck(ackOf(p, len(p.Messages)-1, mq.AckCompleted))
		}
		b.noPop(r)
	}
}

func TestDeliveryConsumerGroupsAreIndependent(t *testing.T) {
	b := setup(t)
	b.pushKeys("pA", "a1", "a2")
	b.pushKeys("pB", "b1")
	// g1 holds a lease on pA: other groups still get pA.
	held := b.mustPop(PopRequest{Partition: "pA", Batch: 10, Group: "g1"}, "a1", "a2")
	for _, g := range []string{"g2", mq.QueueMode} {
		p := b.mustPop(PopRequest{Partition: "pA", Batch: 10, Group: g}, "a1", "a2")
		b.mustAck(ackOf(p, 1, mq.AckCompleted))
	}
	b.mustAck(ackOf(held, 1, mq.AckCompleted))
	// Every group sees every message exactly once.
	for _, g := range []string{"g1", "g2", mq.QueueMode, "g3"} {
		got := b.drain(PopRequest{Group: g})
		want := []string{"b1"}
		if g == "g3" {
			want = []string{"a1", "a2", "b1"}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("group %s got %v, want %v", g, got, want)
		}
	}
}

func TestDeliveryGroupMembersNeverShareAPartition(t *testing.T) {
	b := setup(t)
	b.pushKeys("pA", "a1", "a2", "a3")
	b.pushKeys("pB", "b1", "b2", "b3")
	const n = 16
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		got [][]mq.Message
	)
	for range n {
		r := b.req(PopRequest{Batch: 10, Group: "g"})
		wg.Go(func() {
			msgs, err := b.s.Pop(b.ctx, r)
			if err != nil {
				t.Errorf("pop: %v", err)
				return
			}
			if len(msgs) > 0 {
				mu.Lock()
				got = append(got, msgs)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(got) != 2 {
		t.Fatalf("%d pops delivered, want exactly 2 (one per partition)", len(got))
	}
	seen := map[string]bool{}
	for _, msgs := range got {
		if seen[msgs[0].Partition] || len(msgs) != 3 {
			t.Fatalf("pops %+v", got)
		}
		seen[msgs[0].Partition] = true
		for _, m := range msgs {
			if m.Partition != msgs[0].Partition {
				t.Fatalf("a pop mixed partitions: %+v", msgs)
			}
		}
	}
}

func TestDeliveryMultiPartitionPop(t *testing.T) {
	b := setup(t)
	for _, part := range []string{"pA", "pB", "pC"} {
		b.pushKeys(part, part+"1", part+"2", part+"3")
		b.clock.Advance(time.Second)
	}
	// The budget is drained partition by partition, in claim order (oldest first).
	p := b.mustPop(PopRequest{Partitions: 2, Batch: 4}, "pA1", "pA2", "pA3", "pB1")
	if p.partitions() != 2 {
		t.Fatalf("multi pop claimed %d partitions", p.partitions())
	}
	for i, m := range p.Messages {
		want := "pA"
		if i == 3 {
			want = "pB"
		}
		if m.Partition != want || m.Queue != b.queue {
			t.Fatalf("message %d %+v", i, m)
		}
	}
	if p.Messages[3].PartitionID == p.Messages[0].PartitionID {
		t.Fatal("per-message partition id not authoritative")
	}
	// Both pairs carry the one lease; pB's batch ends at pB1.
	for _, part := range []string{"pA", "pB"} {
		if st := b.state(b.queue, part, mq.QueueMode); st.LeaseID == nil || *st.LeaseID != p.LeaseID {
			t.Fatalf("%s lease %+v", part, st)
		}
	}
	if st := b.state(b.queue, "pB", mq.QueueMode); st.BatchEnd == nil || *st.BatchEnd != 1 {
		t.Fatalf("pB batch end %+v", st)
	}
	// The budget stops claiming: 3 messages fill pC's batch, no further partition is claimed.
	if q := b.mustPop(PopRequest{Partitions: 5, Batch: 3}, "pC1", "pC2", "pC3"); q.partitions() != 1 {
		t.Fatalf("claimed %d partitions", q.partitions())
	}
	// The shared lease is acked per partition.
	if r := b.mustAck(ackOf(p, 2, mq.AckCompleted)); !r.LeaseReleased {
		t.Fatal("pA batch complete but lease not released")
	}
	if r := b.mustAck(ackOf(p, 3, mq.AckCompleted)); !r.LeaseReleased {
		t.Fatal("pB batch complete but lease not released")
	}
	b.mustPop(PopRequest{Partitions: 5, Batch: 10}, "pB2", "pB3")
}

func TestDeliveryAutoAck(t *testing.T) {
	b := setup(t)
	b.pushKeys("pA", "a1", "a2", "a3")
	for _, g := range []string{mq.QueueMode, "g"} {
		b.mustPop(PopRequest{AutoAck: true, Batch: 2, Group: g}, "a1", "a2")
		st := b.state(b.queue, "pA", g)
		if st.Cursor != 2 || st.LeaseID != nil || st.LeaseExpiresAt != nil || st.BatchEnd != nil {
			t.Fatalf("autoAck state %+v", st)
		}
		// No lease is held: the next pop gets the next messages at once.
		n := b.mustPop(PopRequest{Batch: 10, Group: g}, "a3")
		if r := b.ack(mq.AckItem{TransactionID: "a1", PartitionID: n.Messages[0].PartitionID, Group: g, Status: mq.AckCompleted})[0]; !r.Success || !r.AlreadyCommitted {
			t.Fatalf("ack of an auto-acked message %+v", r)
		}
		b.mustAck(ackOf(n, 0, mq.AckCompleted))
	}
}

func TestDeliveryAutoAckResetsRetryCounter(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.RetryDelay = 0 })
	b.pushKeys("Default", "a1", "a2")
	p := b.mustPop(PopRequest{}, "a1")
	b.mustAck(ackOf(p, 0, mq.AckFailed))
	p = b.mustPop(PopRequest{AutoAck: true}, "a1")
	if p.Messages[0].RetryCount != 1 {
		t.Fatalf("retryCount at delivery %d, want 1", p.Messages[0].RetryCount)
	}
	if st := b.state(b.queue, "Default", mq.QueueMode); st.RetryCount != 0 || st.Cursor != 1 {
		t.Fatalf("state after autoAck %+v", st)
	}
	if p := b.mustPop(PopRequest{}, "a2"); p.Messages[0].RetryCount != 0 {
		t.Fatalf("retryCount %d", p.Messages[0].RetryCount)
	}
}

// Queue options enforced at delivery (docs/api/concepts.md §6.1, §6.3, §10) and namespace/task pops.
// Moved from internal/httpapi/queueopts_test.go.

func TestOptionDelayedProcessing(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.DelayedProcessing = 10 })
	b.pushKeys("pA", "a1")
	b.clock.Advance(5 * time.Second)
	b.pushKeys("pA", "a2")
	b.pushKeys("pB", "b1")
	b.clock.Advance(4 * time.Second)
	b.noPop(PopRequest{Batch: 10})
	b.clock.Advance(time.Second) // a1 is 10 s old, a2 and b1 5 s
	p := b.mustPop(PopRequest{Batch: 10, Partitions: 2}, "a1")
	b.mustAck(ackOf(p, 0, mq.AckCompleted))
	b.noPop(PopRequest{Batch: 10})
	b.clock.Advance(5 * time.Second)
	b.mustPop(PopRequest{Partition: "pA", Batch: 10}, "a2")
	b.mustPop(PopRequest{Partition: "pB", Batch: 10}, "b1")
}

// A message that is not visible yet stops the batch even when a later one is visible (its
// createdAt can be older after a clock step backwards): later messages never overtake it.
func TestOptionDelayedProcessingNoOvertaking(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.DelayedProcessing = 10 })
	b.pushKeys("pA", "a1")
	b.clock.Advance(10 * time.Second)
	b.pushKeys("pA", "a2")
	b.clock.Advance(-10 * time.Second)
	b.pushKeys("pA", "a3") // as old as a1
	b.clock.Advance(10 * time.Second)
	p := b.mustPop(PopRequest{Batch: 10}, "a1")
	b.mustAck(ackOf(p, 0, mq.AckCompleted))
	b.noPop(PopRequest{Batch: 10}) // a2 invisible: a3 must wait behind it
	b.clock.Advance(10 * time.Second)
	b.mustPop(PopRequest{Batch: 10}, "a2", "a3")
}

func TestOptionWindowBuffer(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.WindowBuffer = 10 })
	b.pushKeys("pA", "a1")
	b.pushKeys("pB", "b1")
	b.clock.Advance(6 * time.Second)
	b.pushKeys("pA", "a2") // restarts pA's window
	b.clock.Advance(4 * time.Second)
	// pB's newest message is 10 s old, pA's only 4 s.
	b.mustPop(PopRequest{Batch: 10, Partitions: 2, AutoAck: true}, "b1")
	b.noPop(PopRequest{Batch: 10})
	b.clock.Advance(5 * time.Second)
	b.noPop(PopRequest{Batch: 10})
	b.clock.Advance(time.Second)
	b.mustPop(PopRequest{Batch: 10}, "a1", "a2")
}

func TestOptionPriorityInNamespacePop(t *testing.T) {
	b := setup(t)
	b.configureIn("low", "ns", "", func(o *mq.QueueOptions) { o.Priority = 1 })
	b.configureIn("high", "ns", "", func(o *mq.QueueOptions) { o.Priority = 5 })
	b.pushKeysTo("low", "Default", "l1")
	b.clock.Advance(time.Second)
	b.pushKeysTo("high", "Default", "h1")
	b.clock.Advance(time.Second)
	b.pushKeysTo("high", "p2", "h2")
	// Higher priority first although its messages are newer; then oldest first.
	p := b.mustPop(PopRequest{Namespace: "ns", Batch: 10, Partitions: 3}, "h1", "h2", "l1")
	if p.partitions() != 3 || p.Messages[0].Queue != "high" || p.Messages[2].Queue != "low" {
		t.Fatalf("namespace pop %+v", p)
	}
	if st := b.state("low", "Default", mq.QueueMode); st.LeaseID == nil || *st.LeaseID != p.LeaseID {
		t.Fatalf("low's pair does not hold the pop's lease: %+v", st)
	}
}

func TestNamespaceTaskPopMatching(t *testing.T) {
	b := setup(t)
	// Queues a push creates take the labels their name derives; configured ones replace them
	// (the broker derives them for a configure without labels).
	const derived, plain, labelled = "ns.invoice.created", "ns.shipping", "ns-cfg.x"
	b.configureIn(labelled, "ns-N", "ns-T", nil)
	for _, q := range []string{derived, plain, labelled} {
		b.pushKeysTo(q, "Default", q)
	}
	pop := func(ns, task string) []string {
		t.Helper()
		got := b.drain(PopRequest{Namespace: ns, Task: task, AutoAck: true, Group: "g-" + ns + "-" + task})
		slices.Sort(got)
		return got
	}
	for _, tc := range []struct {
		ns, task string
		want     []string
	}{
		{"ns", "", []string{derived, plain}},
		{"ns", "invoice", []string{derived}},
		{"ns", "created", nil},
		{"ns-cfg", "", nil},
		{"ns-N", "", []string{labelled}},
		{"", "ns-T", []string{labelled}},
		{"ns-N", "x", nil},
	} {
		if got := pop(tc.ns, tc.task); !slices.Equal(got, tc.want) {
			t.Fatalf("namespace %q task %q: got %v, want %v", tc.ns, tc.task, got, tc.want)
		}
	}
}
