package httpapi_test

// Delivery semantics over real HTTP (concepts.md §3–§6): partitions, ordering, consumer groups,
// multi-partition pops, autoAck. Helpers are in semantics_helpers_test.go.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testserver"
)

func TestDeliveryPartitionsCreatedOnFirstWrite(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.semNoPop(b.semQ("")) // the queue does not exist yet
	if got := semPartitions(t, b.queue); len(got) != 0 {
		t.Fatalf("partitions before the first push: %v", got)
	}
	res := b.semPushKeys("p1", "a1", "a2")
	if res[0].PartitionID == "" || res[0].PartitionID != res[1].PartitionID {
		t.Fatalf("partition ids %+v", res)
	}
	if got := semPartitions(t, b.queue); !slices.Equal(got, []string{"p1"}) {
		t.Fatalf("partitions after pushing p1: %v (push must not create Default)", got)
	}
	b.semNoPop(b.semQP("p2", "")) // a partition nobody wrote to does not exist
	b.push("", obj{"payload": 1, "transactionId": "d1"})
	if got := semPartitions(t, b.queue); !slices.Equal(got, []string{"Default", "p1"}) {
		t.Fatalf("partitions after an unnamed push: %v", got)
	}
	p := b.semMustPop(b.semQP("p1", "batch=10"), "a1", "a2")
	if p.PartitionID != res[0].PartitionID || p.Partition != "p1" || p.Queue != b.queue {
		t.Fatalf("pop names %+v, push %+v", p, res[0])
	}
	b.semMustPop(b.semQP("Default", "batch=10"), "d1")
}

func TestDeliveryPerPartitionOrder(t *testing.T) {
	b := setup(t, testserver.Options{})
	var items []obj
	for i := range 8 {
		items = append(items, obj{"queue": b.queue, "partition": []string{"pA", "pB"}[i%2], "payload": i,
			"transactionId": fmt.Sprintf("k%d", i)})
	}
	b.push("", items...)
	b.semPushKeys("pA", "k8", "k9")
	b.semPushKeys("pB", "k10")
	if got := b.semDrain(b.semQP("pA", "batch=2")); !slices.Equal(got, []string{"k0", "k2", "k4", "k6", "k8", "k9"}) {
		t.Fatalf("pA order %v", got)
	}
	if got := b.semDrain(b.semQP("pB", "batch=3&consumerGroup=g")); !slices.Equal(got, []string{"k1", "k3", "k5", "k7", "k10"}) {
		t.Fatalf("pB order %v", got)
	}
}

func TestDeliveryLeasedPartitionDoesNotBlockOthers(t *testing.T) {
	b := setup(t, testserver.Options{FakeClock: true})
	b.semPushKeys("pA", "a1", "a2")
	b.srv.Clock.Advance(time.Second)
	b.semPushKeys("pB", "b1")
	b.srv.Clock.Advance(time.Second)
	b.semPushKeys("pC", "c1")
	for _, g := range []string{"", "g"} {
		q := "batch=10&consumerGroup=" + g
		// Oldest next message first; the leased partition is skipped, not waited for.
		pa := b.semMustPop(b.semQ(q), "a1", "a2")
		pb := b.semMustPop(b.semQ(q), "b1")
		if pa.LeaseID == pb.LeaseID {
			t.Fatal("two pops share a lease id")
		}
		b.semNoPop(b.semQP("pA", q))
		pc := b.semMustPop(b.semQ(q), "c1")
		b.semNoPop(b.semQ(q))
		for _, p := range []popped{pa, pb, pc} {
			b.semMustAck(semAckOf(p, len(p.Messages)-1, "completed"))
		}
		b.semNoPop(b.semQ(q))
	}
}

func TestDeliveryConsumerGroupsAreIndependent(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.semPushKeys("pA", "a1", "a2")
	b.semPushKeys("pB", "b1")
	// g1 holds a lease on pA: other groups still get pA.
	held := b.semMustPop(b.semQP("pA", "batch=10&consumerGroup=g1"), "a1", "a2")
	for _, g := range []string{"g2", "__QUEUE_MODE__"} {
		p := b.semMustPop(b.semQP("pA", "batch=10&consumerGroup="+g), "a1", "a2")
		if p.ConsumerGroup != g || p.Messages[0].ConsumerGroup != g {
			t.Fatalf("consumerGroup %q/%q, want %q", p.ConsumerGroup, p.Messages[0].ConsumerGroup, g)
		}
		b.semMustAck(semAckOf(p, 1, "completed"))
	}
	b.semMustAck(semAckOf(held, 1, "completed"))
	// Every group sees every message exactly once.
	for _, g := range []string{"g1", "g2", "__QUEUE_MODE__", "g3"} {
		got := b.semDrain(b.semQ("batch=1&consumerGroup=" + g))
		want := []string{"b1"}
		if g == "g3" {
			want = []string{"a1", "a2", "b1"}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("group %s got %v, want %v", g, got, want)
		}
	}
	if st := semState(t, b.queue, "pA", ""); st.Found {
		t.Fatal(`an empty consumerGroup must mean __QUEUE_MODE__, found a group ""`)
	}
}

func TestDeliveryGroupMembersNeverShareAPartition(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.semPushKeys("pA", "a1", "a2", "a3")
	b.semPushKeys("pB", "b1", "b2", "b3")
	const n = 16
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		got []popped
	)
	for range n {
		wg.Go(func() {
			code, body, err := semSend("GET", b.srv.URL+b.semQ("batch=10&consumerGroup=g"), nil)
			if err != nil || (code != http.StatusOK && code != http.StatusNoContent) {
				t.Errorf("pop: %d %s %v", code, body, err)
				return
			}
			if code == http.StatusNoContent {
				return
			}
			var p popped
			if err := json.Unmarshal(body, &p); err != nil {
				t.Errorf("decode %s: %v", body, err)
				return
			}
			mu.Lock()
			got = append(got, p)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(got) != 2 {
		t.Fatalf("%d pops delivered, want exactly 2 (one per partition)", len(got))
	}
	seen := map[string]bool{}
	for _, p := range got {
		if seen[p.Partition] || len(p.Messages) != 3 {
			t.Fatalf("pops %+v", got)
		}
		seen[p.Partition] = true
		for _, m := range p.Messages {
			if m.Partition != p.Partition {
				t.Fatalf("a pop mixed partitions: %+v", p)
			}
		}
	}
}

func TestDeliveryMultiPartitionPop(t *testing.T) {
	b := setup(t, testserver.Options{FakeClock: true})
	for _, part := range []string{"pA", "pB", "pC"} {
		b.semPushKeys(part, part+"1", part+"2", part+"3")
		b.srv.Clock.Advance(time.Second)
	}
	// The budget is drained partition by partition, in claim order (oldest first).
	p := b.semMustPop(b.semQ("partitions=2&batch=4"), "pA1", "pA2", "pA3", "pB1")
	if p.PartitionsClaimed != 2 || p.Partition != "pA" || p.LeaseID == "" {
		t.Fatalf("multi pop %+v", p)
	}
	for i, m := range p.Messages {
		want := "pA"
		if i == 3 {
			want = "pB"
		}
		if m.LeaseID != p.LeaseID || m.Partition != want || m.Queue != b.queue {
			t.Fatalf("message %d %+v", i, m)
		}
	}
	if p.Messages[3].PartitionID == p.PartitionID {
		t.Fatal("per-message partitionId not authoritative")
	}
	// Both pairs carry the one lease; pB's batch ends at pB1.
	for _, part := range []string{"pA", "pB"} {
		if st := semState(t, b.queue, part, "__QUEUE_MODE__"); st.LeaseID == nil || *st.LeaseID != p.LeaseID {
			t.Fatalf("%s lease %+v", part, st)
		}
	}
	if st := semState(t, b.queue, "pB", "__QUEUE_MODE__"); st.BatchEnd == nil || *st.BatchEnd != 1 {
		t.Fatalf("pB batch end %+v", st)
	}
	// The budget stops claiming: 3 messages fill pC's batch, no further partition is claimed.
	q := b.semMustPop(b.semQ("partitions=5&batch=3"), "pC1", "pC2", "pC3")
	if q.PartitionsClaimed != 1 {
		t.Fatalf("partitionsClaimed %d", q.PartitionsClaimed)
	}
	// The shared lease is acked per partition.
	if r := b.semMustAck(semAckOf(p, 2, "completed")); !r.LeaseReleased {
		t.Fatal("pA batch complete but lease not released")
	}
	if r := b.semMustAck(semAckOf(p, 3, "completed")); !r.LeaseReleased {
		t.Fatal("pB batch complete but lease not released")
	}
	b.semMustPop(b.semQ("partitions=5&batch=10"), "pB2", "pB3")
	// The partition route ignores partitions=N.
	b.semPushKeys("pA", "pA4")
	b.semPushKeys("pD", "pD1")
	r := b.semMustPop(b.semQP("pD", "partitions=5&batch=10"), "pD1")
	if r.PartitionsClaimed != 1 {
		t.Fatalf("partition route claimed %d", r.PartitionsClaimed)
	}
}

func TestDeliveryAutoAck(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.semPushKeys("pA", "a1", "a2", "a3")
	for _, g := range []string{"__QUEUE_MODE__", "g"} {
		p := b.semMustPop(b.semQ("autoAck=true&batch=2&consumerGroup="+g), "a1", "a2")
		if p.LeaseID != "" || p.Messages[0].LeaseID != "" || p.Messages[1].LeaseID != "" {
			t.Fatalf("autoAck lease ids %+v", p)
		}
		st := semState(t, b.queue, "pA", g)
		if st.Cursor != 2 || st.LeaseID != nil || st.LeaseExpiresAt != nil || st.BatchEnd != nil {
			t.Fatalf("autoAck state %+v", st)
		}
		// No lease is held: the next pop gets the next messages at once.
		n := b.semMustPop(b.semQ("batch=10&consumerGroup="+g), "a3")
		if r := b.ack(obj{"transactionId": "a1", "partitionId": n.PartitionID, "consumerGroup": g}); !r.Success || !r.AlreadyCommitted {
			t.Fatalf("ack of an auto-acked message %+v", r)
		}
		b.semMustAck(semAckOf(n, 0, "completed"))
	}
}

func TestDeliveryAutoAckResetsRetryCounter(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.semConfigure(b.queue, obj{"options": obj{"retryDelay": 0}})
	b.semPushKeys("Default", "a1", "a2")
	p := b.semMustPop(b.semQ(""), "a1")
	b.semMustAck(semAckOf(p, 0, "failed"))
	p = b.semMustPop(b.semQ("autoAck=true"), "a1")
	if p.Messages[0].RetryCount != 1 {
		t.Fatalf("retryCount at delivery %d, want 1", p.Messages[0].RetryCount)
	}
	if st := semState(t, b.queue, "Default", "__QUEUE_MODE__"); st.RetryCount != 0 || st.Cursor != 1 {
		t.Fatalf("state after autoAck %+v", st)
	}
	if p := b.semMustPop(b.semQ(""), "a2"); p.Messages[0].RetryCount != 0 {
		t.Fatalf("retryCount %d", p.Messages[0].RetryCount)
	}
}
