package store

// Lease expiry and qg_extend_lease (docs/api/concepts.md §7). Moved from
// internal/httpapi/lease_semantics_test.go.

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queen-go/queen/internal/mq"
)

// extend extends lease by seconds and requires outcome want; it returns the expiry.
func (b *testBundle) extend(lease string, seconds int, want string) time.Time {
	b.t.Helper()
	at, state, err := b.s.ExtendLease(b.ctx, lease, seconds)
	if err != nil || state != want {
		b.t.Fatalf("extend %s by %d: %v %q %v, want %q", lease, seconds, at, state, err, want)
	}
	if (want == mq.LeaseExtended) == at.IsZero() {
		b.t.Fatalf("extend %s: outcome %s with expiry %v", lease, state, at)
	}
	return at
}

func TestLeaseExpiryRedeliversWithoutCounting(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.LeaseTime, o.RetryLimit, o.RetryDelay = 10, 1, 0 })
	b.pushKeys("Default", "a1", "a2", "a3")
	r := PopRequest{Batch: 10, Group: "g"}
	p := b.mustPop(PopRequest{Batch: 2, Group: "g"}, "a1", "a2")
	b.mustAck(ackOf(p, 0, mq.AckCompleted))
	b.clock.Advance(9 * time.Second)
	b.noPop(r)
	// Expiry makes the pair deliverable again from cursor+1, in order, far more often than
	// retryLimit: it never counts as a failure and never dead-letters.
	for i := range 4 {
		b.clock.Advance(11 * time.Second)
		q := b.mustPop(r, "a2", "a3")
		if q.Messages[0].RetryCount != 0 {
			t.Fatalf("redelivery %d: %+v", i, q)
		}
		p = q
	}
	// A counted failure survives later expiries unchanged.
	b.mustAck(ackOf(p, 0, mq.AckFailed))
	for range 2 {
		p = b.mustPop(r, "a2", "a3")
		if p.Messages[0].RetryCount != 1 {
			t.Fatalf("retryCount after expiry %d, want 1", p.Messages[0].RetryCount)
		}
		b.clock.Advance(11 * time.Second)
	}
	if got := b.dlq(b.queue); len(got) != 0 {
		t.Fatalf("lease expiry dead-lettered %+v", got)
	}
	if st := b.state(b.queue, "Default", "g"); st.Cursor != 1 || st.RetryCount != 1 {
		t.Fatalf("state %+v", st)
	}
}

func TestLeaseTimeZeroMeansSixtySeconds(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.LeaseTime = 0 })
	b.pushKeys("Default", "a1")
	start := b.clock.Now()
	b.mustPop(PopRequest{}, "a1")
	st := b.state(b.queue, "Default", mq.QueueMode)
	if st.LeaseExpiresAt == nil {
		t.Fatal("no lease")
	}
	near(t, "lease expiry", *st.LeaseExpiresAt, start.Add(time.Minute))
	b.clock.Advance(59 * time.Second)
	b.noPop(PopRequest{})
	b.clock.Advance(2 * time.Second)
	b.mustPop(PopRequest{}, "a1")
}

func TestLeaseExtend(t *testing.T) {
	b := setup(t)
	b.configure(b.queue, func(o *mq.QueueOptions) { o.LeaseTime = 10 })
	b.pushKeys("pA", "a1")
	b.clock.Advance(time.Second)
	b.pushKeys("pB", "b1")
	start := b.clock.Now()
	r := PopRequest{Partitions: 2, Batch: 10}
	p := b.mustPop(r, "a1", "b1")

	// Never shortens.
	near(t, "unchanged expiry", b.extend(p.LeaseID, 5, mq.LeaseExtended), start.Add(10*time.Second))
	b.clock.Advance(8 * time.Second)
	near(t, "extended expiry", b.extend(p.LeaseID, 30, mq.LeaseExtended), start.Add(38*time.Second))
	for _, part := range []string{"pA", "pB"} { // every pair holding the lease
		if st := b.state(b.queue, part, mq.QueueMode); st.LeaseExpiresAt == nil {
			t.Fatalf("%s lost its lease", part)
		} else {
			near(t, part+" expiry", *st.LeaseExpiresAt, start.Add(38*time.Second))
		}
	}
	b.clock.Advance(20 * time.Second) // 28 s after the pop: alive only through the extension
	b.noPop(r)
	b.mustAck(ackOf(p, 0, mq.AckCompleted)) // releases pA only

	// Cannot revive an expired lease.
	b.clock.Advance(11 * time.Second)
	b.extend(p.LeaseID, 60, mq.LeaseExpired)
	q := b.mustPop(PopRequest{Batch: 10}, "b1")
	// Replaced, released and unknown leases are not found.
	for _, lease := range []string{p.LeaseID, uuid.NewString(), mq.LeaseRef("not-a-uuid")} {
		b.extend(lease, 60, mq.LeaseNotFound)
	}
	b.mustAck(ackOf(q, 0, mq.AckCompleted))
	b.extend(q.LeaseID, 60, mq.LeaseNotFound)
}

func TestLeaseExtendKeepsPartiallyExpiredLease(t *testing.T) {
	b := setup(t)
	// One pop, two queues of one namespace with different lease times.
	b.configureIn("short", "ns", "", func(o *mq.QueueOptions) { o.LeaseTime = 10 })
	b.configureIn("long", "ns", "", func(o *mq.QueueOptions) { o.LeaseTime = 100 })
	b.pushKeysTo("short", "Default", "s1")
	b.pushKeysTo("long", "Default", "l1")
	start := b.clock.Now()
	p, ok := b.pop(PopRequest{Namespace: "ns", Partitions: 2, Batch: 10})
	if !ok || p.partitions() != 2 {
		t.Fatalf("namespace pop %+v", p)
	}
	b.clock.Advance(20 * time.Second)
	// The short pair expired; the long one is live and is the only one extended.
	near(t, "expiry", b.extend(p.LeaseID, 200, mq.LeaseExtended), start.Add(220*time.Second))
	st := b.state("short", "Default", mq.QueueMode)
	if st.LeaseExpiresAt == nil || !st.LeaseExpiresAt.Before(b.clock.Now()) {
		t.Fatalf("expired pair revived: %+v", st)
	}
}
