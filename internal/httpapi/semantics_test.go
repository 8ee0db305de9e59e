package httpapi_test

// Delivery semantics (partitions, ordering, consumer groups, multi-partition pops, autoAck)
// are tested where the SQL decides them: internal/store/pop_test.go. What stays here is the
// wire: the fields of a pop answer and how the query parameters reach the pop. Helpers are in
// semantics_helpers_test.go.

import (
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testserver"
)

// A multi-partition pop answers partitionsClaimed, the lease on the answer and on every
// message, and the per-message partition; the partition route ignores partitions=N; autoAck
// answers no lease ids; an empty consumerGroup means queue mode.
func TestDeliveryPopAnswerFields(t *testing.T) {
	b := setup(t, testserver.Options{FakeClock: true})
	for _, part := range []string{"pA", "pB"} {
		b.semPushKeys(part, part+"1", part+"2")
		b.srv.Clock.Advance(time.Second)
	}
	p := b.semMustPop(b.semQ("partitions=2&batch=3&consumerGroup="), "pA1", "pA2", "pB1")
	if p.PartitionsClaimed != 2 || p.Partition != "pA" || p.LeaseID == "" || p.ConsumerGroup != "__QUEUE_MODE__" {
		t.Fatalf("multi pop %+v", p)
	}
	for i, m := range p.Messages {
		want := "pA"
		if i == 2 {
			want = "pB"
		}
		if m.LeaseID != p.LeaseID || m.Partition != want || m.Queue != b.queue || m.ConsumerGroup != "__QUEUE_MODE__" {
			t.Fatalf("message %d %+v", i, m)
		}
	}
	if p.Messages[2].PartitionID == p.PartitionID {
		t.Fatal("per-message partitionId not authoritative")
	}
	if st := semState(t, b.queue, "pA", ""); st.Found {
		t.Fatal(`an empty consumerGroup must mean __QUEUE_MODE__, found a group ""`)
	}
	b.semPushKeys("pD", "pD1")
	if r := b.semMustPop(b.semQP("pD", "partitions=5&batch=10&consumerGroup=g"), "pD1"); r.PartitionsClaimed != 1 ||
		r.ConsumerGroup != "g" || r.Messages[0].ConsumerGroup != "g" {
		t.Fatalf("partition route %+v", r)
	}
	a := b.semMustPop(b.semQP("pA", "autoAck=true&batch=10&consumerGroup=h"), "pA1", "pA2")
	if a.LeaseID != "" || a.Messages[0].LeaseID != "" || a.Messages[1].LeaseID != "" {
		t.Fatalf("autoAck lease ids %+v", a)
	}
}
